"""ruff's findings that the baseline hides, per file, and the check that the baseline only shrinks.

The baseline is the `ruff-baseline` block of pyproject.toml: file = [codes] entries of
[tool.ruff.lint.per-file-ignores] (the lasting exceptions are extend-per-file-ignores, which
stay), for files other work was restructuring when the rules came in. A plain `ruff check`
passes with it; this tool runs ruff with it lifted:

    python -m scripts.lint_report            # the hidden findings, per file (for fixing them)
    python -m scripts.lint_report --check    # fail on an entry that hides nothing (make lint)
    python -m scripts.lint_report --write    # rewrite it (after a merge; it should shrink)
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

if __package__ in (None, ""):  # run as a file (python scripts/lint_report.py)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts.pyproject_block import PYPROJECT, get_block, replace_block  # noqa: E402

BLOCK = "ruff-baseline"
ROOT = PYPROJECT.parent


def findings() -> list[dict]:
    """ruff's findings over the tree with the baseline lifted (its JSON records)."""
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "json",
                           "--config", "lint.per-file-ignores = {}", "--exit-zero", "."],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"ruff did not run (exit {proc.returncode}):\n{proc.stderr}")
    return list(json.loads(proc.stdout))


def by_file(records: list[dict]) -> dict[str, Counter[str]]:
    """Count of findings per code, per file (paths relative to the root)."""
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for r in records:
        rel = Path(r["filename"]).resolve().relative_to(ROOT).as_posix()
        out[rel][r["code"]] += 1
    return dict(out)


def baseline(text: str) -> dict[str, list[str]]:
    """The baseline entries of pyproject text: file -> codes."""
    return dict(tomllib.loads(get_block(text, BLOCK)))


def render(hidden: dict[str, Counter[str]]) -> str:
    """The baseline block body that hides exactly these findings."""
    return "".join(f'"{f}" = [{", ".join(json.dumps(c) for c in sorted(codes))}]\n'
                   for f, codes in sorted(hidden.items()))


def stale(found: dict[str, Counter[str]], base: dict[str, list[str]]) -> list[str]:
    """One sentence per baseline code that hides no finding any more."""
    return [f"{f}: no {code} finding left: remove it from the {BLOCK} block in pyproject.toml"
            for f, codes in sorted(base.items()) for code in codes
            if not found.get(f, Counter())[code]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="ruff's findings hidden by the baseline.")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="fail on a stale baseline entry")
    mode.add_argument("--write", action="store_true", help="rewrite the baseline")
    args = ap.parse_args(argv)
    text = PYPROJECT.read_text(encoding="utf-8")
    found = by_file(findings())
    base = baseline(text)
    if args.write:
        PYPROJECT.write_text(replace_block(text, BLOCK, render(found)), encoding="utf-8")
        total = sum(c.total() for c in found.values())
        print(f"pyproject.toml: {len(found)} files, {total} findings in the {BLOCK}")
        for f, codes in sorted(found.items()):
            if added := sorted(set(codes) - set(base.get(f, []))):
                print(f"  added {f}: {', '.join(added)}: the baseline should only shrink")
        return 0
    if args.check:
        problems = stale(found, base)
        for line in problems:
            print(line, file=sys.stderr)
        return 1 if problems else 0
    for f, codes in sorted(found.items()):
        hidden = {c: n for c, n in codes.items() if c in base.get(f, [])}
        if hidden:
            print(f"{f}: " + ", ".join(f"{c} x{n}" for c, n in sorted(hidden.items())))
    print(f"{sum(len(v) for v in base.values())} codes in {len(base)} files hidden; "
          f"`ruff check --config 'lint.per-file-ignores = {{}}' FILE` shows them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
