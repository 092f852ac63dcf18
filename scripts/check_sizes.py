"""The house size limits: no module in hipscope/ over 500 lines, no function over 80.

Today's offenders are listed with their size in scripts/size_allowlist.txt. The list may
only shrink: a listed module or function may not grow past its listed size, and one that
is within the limit again must leave the list. `--write` rewrites the list from the tree
(after a merge that split modules); review that its diff only removes or lowers entries.

    python -m scripts.check_sizes            # check (make lint)
    python -m scripts.check_sizes --write    # rewrite the allow-list
"""
from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

MODULE_LIMIT = 500
FUNCTION_LIMIT = 80
ROOT = Path(__file__).resolve().parents[1]
ALLOWLIST = ROOT / "scripts" / "size_allowlist.txt"
HEADER = """\
# Modules (path) and functions (path::qualified.name) over the house limits
# (scripts/check_sizes.py), with their size in lines when they were listed.
# This list may only shrink: split the code, then lower or remove its line.
"""


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    """(qualified name, lines from `def` to the last line) of every function, nested too."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = prefix + node.name
            if not isinstance(node, ast.ClassDef):
                yield name, (node.end_lineno or node.lineno) - node.lineno + 1
            yield from _functions(node, name + ".")
        else:
            yield from _functions(node, prefix)


def measure(root: Path, package: str = "hipscope",
            module_limit: int = MODULE_LIMIT,
            function_limit: int = FUNCTION_LIMIT) -> dict[str, int]:
    """Every module and function under root/package over its limit: key -> lines.

    Keys are "pkg/mod.py" for modules and "pkg/mod.py::Class.method" for functions,
    paths relative to root with forward slashes.
    """
    over: dict[str, int] = {}
    for path in sorted((root / package).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        if (n := len(text.splitlines())) > module_limit:
            over[rel] = n
        for name, lines in _functions(ast.parse(text, filename=rel)):
            key = f"{rel}::{name}"
            if lines > function_limit:
                over[key] = max(lines, over.get(key, 0))
    return over


def read_allowlist(path: Path) -> dict[str, int]:
    """The allow-list file: "LINES KEY" per line; '#' starts a comment."""
    allowed: dict[str, int] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        lines, sep, key = line.partition(" ")
        if not sep or not lines.isdigit():
            raise SystemExit(f"{path}:{number}: expected 'LINES path[::function]', "
                             f"found {line!r}")
        allowed[key.strip()] = int(lines)
    return allowed


def render_allowlist(over: dict[str, int]) -> str:
    """The allow-list text for these offenders, sorted by key."""
    return HEADER + "".join(f"{lines} {key}\n" for key, lines in sorted(over.items()))


def problems(over: dict[str, int], allowed: dict[str, int],
             module_limit: int = MODULE_LIMIT,
             function_limit: int = FUNCTION_LIMIT) -> list[str]:
    """One sentence per breach of the limits or of the ratchet (empty: all well)."""
    out = []
    for key, lines in sorted(over.items()):
        kind, limit = ("function", function_limit) if "::" in key else ("module", module_limit)
        if key not in allowed:
            out.append(f"{key}: {kind} of {lines} lines, over the limit of {limit}: split it")
        elif lines > allowed[key]:
            out.append(f"{key}: {kind} grew to {lines} lines, past its allowed {allowed[key]}"
                       " (the allow-list may only shrink): split it")
    for key in sorted(set(allowed) - set(over)):
        out.append(f"{key}: within the limit now (or gone): remove its line from "
                   f"{ALLOWLIST.relative_to(ROOT)}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Check the house size limits.")
    ap.add_argument("--write", action="store_true", help="rewrite the allow-list from the tree")
    args = ap.parse_args(argv)
    over = measure(ROOT)
    if args.write:
        before = read_allowlist(ALLOWLIST) if ALLOWLIST.exists() else {}
        ALLOWLIST.write_text(render_allowlist(over), encoding="utf-8")
        added = sorted(set(over) - set(before))
        print(f"{ALLOWLIST.relative_to(ROOT)}: {len(over)} entries "
              f"({len(set(before) - set(over))} removed, {len(added)} added)")
        for key in added:
            print(f"  added {key} ({over[key]} lines): the list should only shrink")
        return 0
    found = problems(over, read_allowlist(ALLOWLIST) if ALLOWLIST.exists() else {})
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
