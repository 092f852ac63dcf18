"""Generated blocks in pyproject.toml: the lines between `# BEGIN name` and `# END name`.

The ratchet tools (mypy_ratchet, lint_report) keep their lists there, so that mypy and ruff
read them as ordinary configuration and `--write` can rewrite them without touching the rest.
"""
from __future__ import annotations

from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _bounds(lines: list[str], name: str) -> tuple[int, int]:
    """Indexes of the BEGIN and END marker lines of block `name`."""
    begins = [i for i, ln in enumerate(lines) if ln.startswith(f"# BEGIN {name}")]
    ends = [i for i, ln in enumerate(lines) if ln.startswith(f"# END {name}")]
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise SystemExit(f"pyproject.toml: expected one '# BEGIN {name}' line and then one "
                         f"'# END {name}' line, found {len(begins)} and {len(ends)}")
    return begins[0], ends[0]


def get_block(text: str, name: str) -> str:
    """The text between the markers of block `name` (markers excluded)."""
    lines = text.splitlines(keepends=True)
    begin, end = _bounds(lines, name)
    return "".join(lines[begin + 1:end])


def replace_block(text: str, name: str, body: str) -> str:
    """`text` with the body of block `name` replaced by `body` (markers kept)."""
    lines = text.splitlines(keepends=True)
    begin, end = _bounds(lines, name)
    if body and not body.endswith("\n"):
        body += "\n"
    return "".join(lines[:begin + 1]) + body + "".join(lines[end:])
