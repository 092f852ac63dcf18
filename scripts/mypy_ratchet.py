"""mypy with a ratchet: the modules not yet clean are listed, and the list may only shrink.

The list is the `mypy-ratchet` block of pyproject.toml (a [[tool.mypy.overrides]] with
ignore_errors), so a plain `mypy` passes. `--check` runs mypy once with the list lifted and
fails when a listed module is clean now (remove it) or a module not listed has errors (fix
them). `--write` rewrites the list from that run (after a merge; its diff should only shrink).

    python -m scripts.mypy_ratchet            # --check (make lint, pre-commit)
    python -m scripts.mypy_ratchet --write
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):  # run as a file (python scripts/mypy_ratchet.py)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts.pyproject_block import PYPROJECT, get_block, replace_block  # noqa: E402

BLOCK = "mypy-ratchet"
ROOT = PYPROJECT.parent
# A stable path inside mypy's cache folder keeps its incremental cache valid between runs.
CONFIG = ROOT / ".mypy_cache" / "ratchet-config.toml"
ERROR = re.compile(r"^(?P<path>[^:\n]+\.pyi?):\d+(?::\d+)?: error: ", re.M)


def module_of(path: str) -> str:
    """The dotted module name of a source path relative to the root."""
    parts = list(Path(path).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def errors_by_module(output: str) -> Counter[str]:
    """Count of mypy's `error:` lines per module in its output."""
    return Counter(module_of(m["path"]) for m in ERROR.finditer(output))


def listed(text: str) -> list[str]:
    """The modules of the ratchet block of pyproject text."""
    table = tomllib.loads(get_block(text, BLOCK))
    overrides = table.get("tool", {}).get("mypy", {}).get("overrides", [])
    return [m for o in overrides for m in o.get("module", [])]


def render(errors: Counter[str]) -> str:
    """The block body listing these modules (with their error counts) as ignore_errors."""
    if not errors:
        return ""
    rows = "".join(f'    "{m}",  # {n}\n' for m, n in sorted(errors.items()))
    return f"[[tool.mypy.overrides]]\nmodule = [\n{rows}]\nignore_errors = true\n"


def run_mypy(text: str) -> str:
    """mypy's output over the configured packages with the ratchet list lifted."""
    CONFIG.parent.mkdir(exist_ok=True)
    CONFIG.write_text(replace_block(text, BLOCK, ""), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(CONFIG),
                           "--no-error-summary", "--no-pretty", "--show-error-codes"],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1) or (proc.returncode == 1 and not ERROR.search(proc.stdout)):
        raise SystemExit(f"mypy did not run (exit {proc.returncode}):\n"
                         f"{proc.stdout}{proc.stderr}")
    return proc.stdout


def problems(errors: Counter[str], allowed: list[str]) -> list[str]:
    """One sentence per breach of the ratchet (empty: all well)."""
    out = [f"{m}: {errors[m]} mypy error(s) (above) in a module not in the {BLOCK} list: "
           "fix them (the list may only shrink)" for m in sorted(set(errors) - set(allowed))]
    out += [f"{m}: clean now (or gone): remove it from the {BLOCK} list in pyproject.toml"
            for m in sorted(set(allowed) - set(errors))]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="mypy with a ratchet list that may only shrink.")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="check the list (the default)")
    mode.add_argument("--write", action="store_true", help="rewrite the list from a mypy run")
    args = ap.parse_args(argv)
    text = PYPROJECT.read_text(encoding="utf-8")
    output = run_mypy(text)
    errors = errors_by_module(output)
    allowed = listed(text)
    if args.write:
        PYPROJECT.write_text(replace_block(text, BLOCK, render(errors)), encoding="utf-8")
        print(f"pyproject.toml: {len(errors)} modules listed, {sum(errors.values())} errors "
              f"({len(set(allowed) - set(errors))} removed)")
        for mod in sorted(set(errors) - set(allowed)):
            print(f"  added {mod} ({errors[mod]} errors): the list should only shrink")
        return 0
    found = problems(errors, allowed)
    for line in output.splitlines():  # the errors of the modules that must be clean
        m = ERROR.match(line)
        if m and module_of(m["path"]) not in allowed:
            print(line, file=sys.stderr)
    for line in found:
        print(line, file=sys.stderr)
    listed_errors = sum(n for m, n in errors.items() if m in allowed)
    print(f"mypy ratchet: {len(allowed)} modules listed ({listed_errors} errors), "
          f"{'all well' if not found else f'{len(found)} problem(s)'}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
