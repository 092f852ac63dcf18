"""The folder ``jax.profiler.trace(log_dir)`` writes: ``log_dir/plugins/profile/<run>/
<host>.trace.json.gz`` (beside ``<host>.xplane.pb`` and, with
``create_perfetto_trace=True``, ``perfetto_trace.json.gz``, the same JSON again).

A folder opens the one run in it: the log dir, ``plugins/profile`` holding one run, or
the run folder itself. Several runs or several hosts are refused in one sentence that
says what to open instead."""

from __future__ import annotations

from pathlib import Path

from ..base import TraceFormatError

_RUNS = ("plugins/profile/*", "profile/*", "*", ".")
_GLOBS = ("*.trace.json.gz", "*.trace.json")


def run_files(folder: Path) -> dict[Path, list[Path]]:
    """Run folder -> its trace-viewer JSON files (xplane-only runs map to [])."""
    runs: dict[Path, list[Path]] = {}
    for pattern in _RUNS:
        for run in sorted(folder.glob(pattern)) if pattern != "." else [folder]:
            if not run.is_dir():
                continue
            files = sorted(p for g in _GLOBS for p in run.glob(g) if p.is_file())
            if files or any(run.glob("*.xplane.pb")):
                runs[run] = files
        if runs:
            return runs
    return runs


def the_trace_file(folder: Path) -> Path:
    """The one host's trace of the one run in ``folder`` (its trace-viewer JSON, else
    its ``.xplane.pb``), or a TraceFormatError saying what to open instead."""
    runs = run_files(folder)
    if len(runs) > 1:
        names = ", ".join(str(r.relative_to(folder)) for r in list(runs)[:4])
        raise TraceFormatError(folder, None, "one jax.profiler run",
                               f"{len(runs)} runs ({names}{', ...' if len(runs) > 4 else ''}); "
                               "open one run's folder")
    run, files = next(iter(runs.items()))
    files = files or sorted(run.glob("*.xplane.pb"))
    if len(files) > 1:
        raise TraceFormatError(folder, None, "one host's trace in the run",
                               f"{len(files)} files ({', '.join(p.name for p in files[:4])}); "
                               "open one host's file (each host's times count from its "
                               "own session start)")
    return files[0]


def host_of(path: Path) -> str | None:
    """The host name jax puts in its file names (``<host>.trace.json.gz``,
    ``<host>.xplane.pb``); None for ``perfetto_trace.json.gz`` and other names."""
    for suffix in (".trace.json.gz", ".trace.json", ".xplane.pb"):
        if path.name.endswith(suffix) and len(path.name) > len(suffix):
            return path.name[: -len(suffix)]
    return None
