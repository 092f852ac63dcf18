"""`hipscope report --ops [shapes]`: the ops part of the report (analysis/ops/report.py),
kept apart from the report's own code so that main.py holds only the calls."""

from __future__ import annotations

import argparse
from typing import Any

MODES = ("names", "shapes", "table")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ops", choices=MODES, metavar="[shapes|table]",
                   help="per launching op (PyTorch op, annotation, roctx/NVTX range): calls, "
                        "CPU and GPU time, kernels per call, kernel classes; '--ops shapes': "
                        "per op and input shapes; '--ops table': also every op as a row "
                        "(JSON key op_table, with --json)")


def normalize_argv(argv: list[str]) -> list[str]:
    """'--ops' alone means '--ops=names' and '--ops shapes' '--ops=shapes', so that
    ``report --ops TRACE`` never takes the trace for the mode."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--ops":
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            out.append(f"--ops={nxt if nxt in MODES else 'names'}")
            i += 2 if nxt in MODES else 1
            continue
        out.append(argv[i])
        i += 1
    return out


def extend(rep: dict[str, Any], trace, args: argparse.Namespace) -> None:
    """Add the ops keys to the report (all rows with --json, --top rows in text)."""
    if not args.ops:
        return
    from ..analysis.context import analyses_of
    from ..analysis.ops import ops_report

    att = analyses_of(trace).ops()
    rep.update(ops_report(trace, att, top=None if args.json else args.top,
                          by_shapes=args.ops == "shapes"))
    if args.ops == "table":
        from ..analysis.ops import ops_table

        table = ops_table(trace, att)
        rep["op_table"] = table.to_pylist() if args.json else None
        rep["op_table_rows"] = table.num_rows


def text(rep: dict[str, Any], args: argparse.Namespace) -> str | None:
    if not args.ops:
        return None
    from ..analysis.ops import OP_TABLE_COLUMNS, format_ops_text

    out = format_ops_text(rep)
    if args.ops == "table":
        out += (f"\nOp table: {rep['op_table_rows']:,} ops ({', '.join(OP_TABLE_COLUMNS)}); "
                "--json prints them under op_table")
    return out
