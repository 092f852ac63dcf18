"""`hipscope ranks`: every rank of a multi-node job analysed on Dask; one overview.

    hipscope ranks PATHS_OR_GLOB... [--scheduler ADDR | --slurm --partition P
        --account A --cores N --memory M --walltime T --jobs J | --workers N]
        [--cache-dir DIR] [--json]

Text: the ranks table, the collectives with the worst skew (top 10) and the
stragglers. ``--json`` prints ``JobOverview.to_json()`` and nothing else (keys in the
README). Exit status: 0; 2 for bad input (a path that names nothing, bad options);
1 when no rank could be read.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from ..model.units import fmt_duration

TOP_COLLECTIVES = 10


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hipscope ranks",
                                description="Analyse every rank of a job on Dask workers "
                                            "and print the job overview.")
    p.add_argument("paths", nargs="+", metavar="PATHS_OR_GLOB",
                   help="rank trace files, folders of them, or globs ('runs/rank-*.json.gz')")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--scheduler", metavar="ADDR", help="an existing Dask scheduler "
                   "(tcp://HOST:PORT)")
    g.add_argument("--slurm", action="store_true", help="start the workers as Slurm jobs "
                   "(dask-jobqueue)")
    g.add_argument("--workers", type=int, metavar="N", help="worker processes of the local "
                   "cluster (default: the CPU count; 0: in this process, one rank at a time)")
    s = p.add_argument_group("Slurm (with --slurm)")
    s.add_argument("--partition")
    s.add_argument("--account")
    s.add_argument("--cores", type=int, default=1, help="cores per worker job (default 1)")
    s.add_argument("--memory", default="4GB", help="memory per worker job (default 4GB)")
    s.add_argument("--walltime", default="01:00:00", help="default 01:00:00")
    s.add_argument("--jobs", type=int, default=1, help="worker jobs (default 1)")
    p.add_argument("--cache-dir", type=Path, help="the workers' trace cache (default: "
                   "$HIPSCOPE_CACHE_DIR or the user cache)")
    p.add_argument("--json", action="store_true", help="print the overview as JSON")
    return p


@contextlib.contextmanager
def _ctrl_c_cancels(on_workers: bool) -> Iterator[Callable[[], bool]]:
    """Ctrl+C as the engine's ``cancelled()`` when ranks run on workers: the first SIGINT
    sets a flag that the engine polls (it cancels the tasks and closes the cluster in
    order); a second one interrupts at once. A KeyboardInterrupt raised at an arbitrary
    point inside Dask's client could leave a lock of its event-loop thread held and the
    exit hanging (seen once in CI). In this process (``--workers 0``) Ctrl+C interrupts
    the read at once, as everywhere else in hipscope."""
    hit = threading.Event()

    def on_sigint(signum, frame):
        if hit.is_set():
            raise KeyboardInterrupt
        hit.set()

    if not on_workers or threading.current_thread() is not threading.main_thread():
        yield hit.is_set                  # (signals reach the main thread only)
        return
    old = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield hit.is_set
    finally:
        signal.signal(signal.SIGINT, old)


def run(argv: list[str]) -> int:
    from ..model.progress import Cancelled
    from ..parsers import TraceFormatError
    from ..ranks import SlurmOptions, analyse_job

    args = _parser().parse_args(argv)
    if args.workers is not None and args.workers < 0:
        print("hipscope: --workers must be 0 or more.", file=sys.stderr)
        return 2
    slurm = SlurmOptions(partition=args.partition, account=args.account, cores=args.cores,
                         memory=args.memory, walltime=args.walltime, jobs=args.jobs) \
        if args.slurm else None
    try:
        serial = args.workers == 0 and args.scheduler is None and not args.slurm
        with _ctrl_c_cancels(on_workers=not serial) as cancelled:
            ov = analyse_job(args.paths, workers=args.workers, scheduler=args.scheduler,
                             slurm=slurm, cache_dir=args.cache_dir, cancelled=cancelled)
    except TraceFormatError as exc:
        print(f"hipscope: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Cancelled):
        print("hipscope: cancelled; the tasks were stopped.", file=sys.stderr)
        return 130
    except ImportError as exc:  # no dask.distributed / dask-jobqueue
        print(f"hipscope: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:     # a scheduler that cannot be reached, a cluster refused
        print(f"hipscope: the Dask cluster could not be used: {exc}", file=sys.stderr)
        return 2
    if args.json:
        ov.write_json(sys.stdout)
        print()
    else:
        print(format_overview(ov))
    if not ov.ranks:
        if not args.json:
            print(f"hipscope: none of the {len(ov.failed)} rank files could be read.",
                  file=sys.stderr)
        return 1
    return 0


def format_overview(ov) -> str:
    """The overview as text: ranks, worst collectives, stragglers, failures."""
    lines = [f"{len(ov.ranks)} ranks ({ov.engine})"
             + (f", {len(ov.failed)} could not be read" if ov.failed else "")]
    lines += _ranks_table(ov)
    lines += _collectives_table(ov)
    lines += _stragglers_table(ov)
    for f in ov.failed:
        lines.append(f"failed: {f.source}: {f.reason}")
    lines += [f"warning: {w}" for w in ov.warnings]
    return "\n".join(lines)


def _ranks_table(ov) -> list[str]:
    out = ["", f"{'rank':>5} {'span':>10} {'steps':>6} {'step med':>10} {'busy':>6} "
               f"{'comm':>10} {'kernels':>8}  top op"]
    for r in ov.ranks:
        steps = sorted(r.step_ns)
        med = steps[len(steps) // 2] if steps else None
        top = r.top_ops[0]["name"] if r.top_ops else ""
        out.append(f"{r.rank:>5} {fmt_duration(r.end_ns - r.start_ns):>10} {len(steps):>6} "
                   f"{fmt_duration(med) if med is not None else '-':>10} "
                   f"{r.gpu_busy_fraction * 100:>5.1f}% {fmt_duration(r.comm_ns):>10} "
                   f"{r.kernels:>8}  {top[:50]}")
    return out


def _collectives_table(ov) -> list[str]:
    if not ov.collectives:
        return ["", "collectives: none matched across ranks"]
    worst = sorted(ov.collectives, key=lambda c: (-c.skew_ns, c.name, c.sequence))
    out = ["", f"collectives: {len(ov.collectives)} matched; worst skew first "
               f"(top {min(TOP_COLLECTIVES, len(worst))})",
           f"{'name':<32} {'group':>8} {'seq':>6} {'skew':>10} {'last':>5} {'wait':>10}"]
    for c in worst[:TOP_COLLECTIVES]:
        out.append(f"{c.name[:32]:<32} {c.group[:8]:>8} {c.sequence:>6} "
                   f"{fmt_duration(c.skew_ns):>10} {c.last_rank:>5} "
                   f"{fmt_duration(c.wait_ns):>10}")
    return out


def _stragglers_table(ov) -> list[str]:
    if not ov.stragglers:
        return ["", "stragglers: none"]
    out = ["", "stragglers (the waits they caused, worst first):",
           f"{'rank':>5} {'wait caused':>12} {'last at':>8}  op"]
    for s in ov.stragglers[:TOP_COLLECTIVES]:
        out.append(f"{s.rank:>5} {fmt_duration(s.wait_caused_ns):>12} {s.instances:>8}  "
                   f"{s.op or '-'}")
    return out
