"""`hipscope` command line: the GUI by default, subcommands for scripting."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from .. import __version__

log = logging.getLogger("hipscope")

SUBCOMMANDS = ("report", "compare", "run", "runs", "tune", "probe")


def demo_trace_path() -> Path:
    from importlib.resources import files

    return Path(str(files("hipscope.resources") / "samples" / "mi300x_bert_small_kineto.json.gz"))


def _report(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="hipscope report",
                                description="Summarise a trace: kernels, devices, queue delay.")
    p.add_argument("paths", nargs="+", type=Path,
                   help="trace file or folder; several files of one run are merged")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--top", type=int, default=20, help="kernels to list (default 20)")
    p.add_argument("--reader", help="force a reader by name (see --list-readers)")
    p.add_argument("--no-cache", action="store_true", help="do not use the parsed-trace cache")
    p.add_argument("--counters", action="store_true",
                   help="per hardware counter, the kernels furthest from the rest")
    from . import report_ops  # --ops: cli/report_ops.py

    report_ops.add_arguments(p)
    args = p.parse_args(report_ops.normalize_argv(argv))
    from ..parsers import cache_jobs

    # the cache entry of a first open is written while the analyses run
    with cache_jobs.in_background():
        return _report_of(args)


def _report_of(args: argparse.Namespace) -> int:
    from ..parsers import Cancelled, TraceFormatError, open_trace
    from ..parsers.base import UnknownReader
    from . import report_ops

    try:   # open_trace raises only these (its contract); each is one sentence
        trace = open_trace(args.paths, reader=args.reader, use_cache=not args.no_cache)
    except (TraceFormatError, UnknownReader) as exc:
        print(f"hipscope: {exc}", file=sys.stderr)
        return 2
    except Cancelled:
        return 130
    from ..analysis.report import build_report, format_text

    rep = build_report(trace, top=args.top)
    if args.counters:
        from ..analysis.counters import counter_outliers

        rep["counter_outliers"] = counter_outliers(trace)
    report_ops.extend(rep, trace, args)
    if args.json:
        json.dump(rep, sys.stdout, allow_nan=False)
        sys.stdout.write("\n")
    else:
        print(format_text(rep))
        if args.counters:
            from ..analysis.counters import format_outliers

            print("\n" + format_outliers(rep["counter_outliers"]))
        ops_text = report_ops.text(rep, args)
        if ops_text is not None:
            print("\n" + ops_text)
    return 0


def _list_readers() -> int:
    from ..parsers import readers

    for r in readers():
        print(f"{r.name:<18} {r.description}  [{' '.join(r.patterns)}]")
    return 0


def _gui(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="hipscope",
        description="GPU trace viewer and tuner. Subcommands: " + ", ".join(SUBCOMMANDS),
    )
    p.add_argument("paths", nargs="*", type=Path, help="traces to open")
    p.add_argument("--demo", action="store_true", help="open the bundled sample trace")
    p.add_argument("--screenshot", type=Path, metavar="OUT.png",
                   help="open, wait until drawn, save the window to OUT.png and exit")
    p.add_argument("--compare", action="store_true",
                   help="open the traces as one side-by-side comparison (the first is A)")
    p.add_argument("--ranks", action="store_true",
                   help="open the paths (folders, files, globs) as one job's ranks (a Ranks tab)")
    p.add_argument("--list-readers", action="store_true", help="list the trace readers")
    p.add_argument("--version", action="version", version=f"hipscope {__version__}")
    args = p.parse_args(argv)
    if args.list_readers:
        return _list_readers()
    paths = list(args.paths)
    if args.demo:
        paths.append(demo_trace_path())
    if args.compare and len(paths) < 2:
        p.error("--compare needs two or more traces")
    from ..app.head_start import head_start

    head = head_start(paths, args.compare, args.ranks)     # reading while Qt loads
    try:
        from ..app.main import run_app
    except ImportError:  # the GUI is not there yet: print the report instead
        if head is not None:
            head.cancel()
        return _report([str(x) for x in paths]) if paths else 0
    return run_app(paths, screenshot=args.screenshot, compare=args.compare,
                   ranks=args.ranks, head=head)


def main(argv: list[str] | None = None) -> int:
    """Run the command line. An error no subcommand handled is one line on stderr and
    exit status 2, never a traceback; ``HIPSCOPE_LOG=info`` (or ``debug``) logs the
    tracebacks of internal errors."""
    argv = sys.argv[1:] if argv is None else argv
    level = getattr(logging, os.environ.get("HIPSCOPE_LOG", "").upper(), logging.WARNING)
    logging.basicConfig(level=level if isinstance(level, int) else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return _dispatch(argv)
    except BrokenPipeError:      # `hipscope report ... | head`: the reader went away
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except MemoryError:
        print("hipscope: not enough memory to finish.", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - one sentence, the traceback to the log
        log.info("internal error", exc_info=True)
        lines = str(exc).strip().splitlines()
        print(f"hipscope: internal error: {type(exc).__name__}"
              f"{': ' + lines[0][:300] if lines else ''}", file=sys.stderr)
        return 2


def _dispatch(argv: list[str]) -> int:
    if argv and argv[0] == "report":
        return _report(argv[1:])
    if argv and argv[0] in ("run", "runs"):   # launchers: hipscope/cli/run_cmd.py
        from . import run_cmd

        return (run_cmd.run_main if argv[0] == "run" else run_cmd.runs_main)(argv[1:])
    if argv and argv[0] == "tune":          # tuner: hipscope/cli/tune_cmd.py
        from .tune_cmd import run as tune

        return tune(argv[1:])
    if argv and argv[0] == "probe":         # GPU probe: hipscope/cli/probe_cmd.py
        from .probe_cmd import run as probe

        return probe(argv[1:])
    if argv and argv[0] == "ranks":         # every rank of a job: hipscope/cli/ranks_cmd.py
        from .ranks_cmd import run as ranks

        return ranks(argv[1:])
    if argv and argv[0] == "compare":
        from .compare_cmd import run as compare

        return compare(argv[1:])
    return _gui(argv)


def entry() -> None:
    """The ``hipscope`` program: :func:`main`, then the exit without a last collection
    of every object (``gc.freeze``): the process ends and the system takes its memory
    back at once, while collecting a report's trace first took ~0.05 s (2M kernels).
    Every file is closed and every store joined by then. Tests call :func:`main`."""
    import gc

    rc = main()
    gc.freeze()
    sys.exit(rc)


if __name__ == "__main__":
    entry()
