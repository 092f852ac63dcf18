"""Reader protocol, errors and the registry of readers.

A reader is registered once (``@register``) with a name, the file patterns it
claims for the Open dialog, a priority and a ``sniff(path)`` that looks at the
first bytes of a file (or the members of a directory) and returns a confidence in
[0, 1]. :func:`open_trace` picks the reader with the best (confidence, priority);
the app never chooses a reader by extension.

Readers take plain callables: ``progress(fraction)`` and ``cancelled() -> bool``;
they raise :class:`TraceFormatError` for bad input (one sentence naming the file,
the place and what was expected) and :class:`Cancelled` when asked to stop.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from ..model import Trace
from ..model.diagnostics import coded, harvest

from ..model.progress import (  # noqa: F401 - the readers' names for them
    Cancelled,
    CancelledFn,
    ProgressFn,
    check_cancel,
    never_cancelled,
    no_progress,
)

from . import open_checks
from .errors import ReadFailure, TraceFormatError, UnknownReader  # noqa: F401
from .reading import (  # noqa: F401 - the readers' names for them
    head_bytes,
    head_text,
    is_gzip,
    read_bytes_tolerant,
)
from .reading import gzip_damage as _gzip_damage

log = logging.getLogger(__name__)


class Reader(Protocol):
    name: str            # short id, e.g. "rocprofv3-csv"
    description: str     # for people, e.g. "rocprofv3 CSV set"
    patterns: tuple[str, ...]   # glob patterns for the Open dialog
    priority: int        # tie-break between equally confident sniffs
    directories: bool    # whether it can open a directory

    def sniff(self, path: Path) -> float: ...

    def read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace: ...


@dataclass(frozen=True)
class Candidate:
    reader: Reader
    confidence: float


_REGISTRY: dict[str, Reader] = {}


def register(cls):
    """Class decorator: instantiate and register a reader."""
    inst = cls()
    _REGISTRY[inst.name] = inst
    return cls


def readers() -> list[Reader]:
    _load_builtin()
    return sorted(_REGISTRY.values(), key=lambda r: (-r.priority, r.name))


def get_reader(name: str) -> Reader:
    _load_builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownReader(f"no reader named {name!r}; known: {', '.join(sorted(_REGISTRY))}"
                            ) from None


def file_filters() -> list[str]:
    """Qt-style name filters for the Open dialog, one per reader plus 'all traces'."""
    rs = readers()
    out = [f"{r.description} ({' '.join(r.patterns)})" for r in rs if r.patterns]
    pats = sorted({p for r in rs for p in r.patterns})
    return [f"All traces ({' '.join(pats)})", *out, "All files (*)"]


def candidates(path: Path) -> list[Candidate]:
    _load_builtin()
    out = []
    for r in _REGISTRY.values():
        if path.is_dir() and not r.directories:
            continue
        try:
            conf = float(r.sniff(path))
        except MemoryError:
            raise
        except Exception:  # noqa: BLE001 - a sniffer that fails does not recognise the file
            log.debug("sniffer %s failed on %s", r.name, path, exc_info=True)
            conf = 0.0
        if conf > 0:
            out.append(Candidate(r, conf))
    out.sort(key=lambda c: (-c.confidence, -c.reader.priority, c.reader.name))
    return out


def find_reader(path: str | os.PathLike) -> Reader:
    p = Path(path)
    if not p.exists():
        raise TraceFormatError(p, None, "an existing file or folder", "nothing at that path")
    cands = candidates(p)
    if not cands:
        bad_gzip = None if p.is_dir() else _gzip_damage(p)
        if bad_gzip:
            raise TraceFormatError(p, "the start of the gzip data", "a readable gzip stream",
                                   bad_gzip)
        what = "folder" if p.is_dir() else "file"
        raise TraceFormatError(
            p, None,
            "a trace hipscope can read (rocprofv3 CSV/JSON/rocpd/pftrace, legacy rocprof, "
            "PyTorch profiler JSON, JAX/XLA trace, rocprof-compute workload, Nsight Compute "
            "CSV, Nsight Systems SQLite export)",
            f"a {what} no reader recognises")
    return cands[0].reader


def _as_sentence(exc: Exception, name: str | os.PathLike) -> TraceFormatError:
    """An exception no reader turned into a sentence, as one sentence naming the input;
    a bug's traceback goes to the log (level INFO: never printed by the CLI)."""
    if isinstance(exc, MemoryError):
        return ReadFailure(name, f"not enough memory to read {name}.")
    log.info("internal error reading %s", name, exc_info=exc)
    lines = str(exc).strip().splitlines()
    gist = f"{type(exc).__name__}: {lines[0][:300]}" if lines else type(exc).__name__
    return ReadFailure(name, f"internal error reading {name}: {gist.rstrip('.')}.")


_PASS = (TraceFormatError, Cancelled, UnknownReader)


def _one_input(fn):
    """``fn(path, ...)`` raises only TraceFormatError (naming ``path``), Cancelled or
    UnknownReader."""
    @functools.wraps(fn)
    def wrapper(path, *args, **kwargs):
        try:
            return fn(path, *args, **kwargs)
        except _PASS:
            raise
        except Exception as exc:  # noqa: BLE001 - the contract: one sentence, never a traceback
            raise _as_sentence(exc, path) from None
    return wrapper


def _bad_input_contract(fn):
    """Wrap :func:`open_trace`: the paths are checked first (``_inputs.check_path``:
    missing, unreadable, devices, FIFOs without a writer), the same file twice is
    refused, pipes are read once into a temporary file (never cached), and any failure
    becomes one sentence naming the input: a TraceFormatError (a :class:`ReadFailure`
    for bugs and memory), Cancelled, or UnknownReader for a bad ``reader=``."""
    from ..model.trace import MergeError

    @functools.wraps(fn)
    def open_trace(paths, progress: ProgressFn = no_progress,
                   cancelled: CancelledFn = never_cancelled, reader: str | None = None,
                   use_cache: bool = False, **more) -> Trace:
        given = [Path(p) for p in
                 ([paths] if isinstance(paths, (str, os.PathLike)) else paths)]
        if not given:
            raise ValueError("no path given")
        from . import run_provenance as runs

        asked, names = given, ", ".join(str(p) for p in given)
        if reader:
            get_reader(reader)
        from ._inputs import check_path

        tmp, renames = None, {}
        try:
            given = runs.expand_run_folders(given)        # a run folder: its trace files
            streams = [check_path(p) for p in given]      # every path, in order
            if any(streams):
                tmp = Path(tempfile.mkdtemp(prefix="hipscope-pipe-"))
            real = _prepare(given, streams, tmp, renames)
            trace = fn(real, progress, cancelled, reader=reader,
                       use_cache=use_cache and tmp is None, **more)
            trace = _renamed_meta(trace, renames) if renames else trace
            # after the cache: the run's files are not members of the trace
            return trace if tmp is not None else runs.attach_run_provenance(trace, asked)
        except TraceFormatError as exc:
            _rename_error(exc, renames)
            raise
        except (Cancelled, UnknownReader):
            raise
        except MergeError as exc:
            raise _rename_error(ReadFailure(names, str(exc)), renames) from None
        except Exception as exc:  # noqa: BLE001 - the contract: one sentence, never a traceback
            raise _rename_error(_as_sentence(exc, names), renames) from None
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
    return open_trace


def _prepare(given: list[Path], streams: list[bool], tmp: Path | None,
             renames: dict[str, str]) -> list[Path]:
    """The paths to read: the same file twice is refused; a pipe becomes a temporary
    copy of its data (``renames`` maps the copy's name back to the pipe's)."""
    from ._inputs import read_stream

    seen: dict[Path, Path] = {}
    for p in given:
        key = p.resolve()
        if key in seen:
            raise TraceFormatError(p, None, "each trace given once",
                                   f"the same file as {seen[key]}")
        seen[key] = p
    real = []
    for i, (p, stream) in enumerate(zip(given, streams)):
        if stream and tmp is not None:
            q = tmp / str(i)
            q.mkdir()
            q = read_stream(p, q / (p.name or "stream"))
            renames[str(q)] = str(p)
            p = q
        real.append(p)
    return real


def _renamed(text: str, renames: dict[str, str]) -> str:
    for tmp, orig in renames.items():
        text = text.replace(tmp, orig)
    return text


def _rename_error(exc: TraceFormatError, renames: dict[str, str]) -> TraceFormatError:
    """Messages about a pipe's temporary copy name the pipe."""
    if renames:
        exc.path = _renamed(exc.path, renames)
        exc.args = tuple(_renamed(a, renames) if isinstance(a, str) else a for a in exc.args)
    return exc


def _renamed_meta(trace: Trace, renames: dict[str, str]) -> Trace:
    meta = {k: trace.meta[k] for k in ("sources", "warnings") if k in trace.meta}
    diags = [{**d, "message": _renamed(str(d.get("message")), renames),
              "where": d.get("where") and _renamed(str(d["where"]), renames)}
             for d in trace.meta.get("diagnostics") or []]
    return trace.with_meta(**{k: [_renamed(str(x), renames) for x in v]
                              for k, v in meta.items()}, **({"diagnostics": diags} if diags else {}))


@_bad_input_contract
def open_trace(paths: str | os.PathLike | Sequence[str | os.PathLike],
               progress: ProgressFn = no_progress,
               cancelled: CancelledFn = never_cancelled,
               reader: str | None = None,
               use_cache: bool = False) -> Trace:
    """Read one trace from a file, a folder, or several files of one run (merged).

    Several paths are read one by one and merged (one process/rank each; see
    :func:`~hipscope.model.merge_traces` for what is refused or warned). With
    ``use_cache`` the parsed tables are kept in hipscope's on-disk cache. A pipe
    (``/dev/stdin``, ``<(zcat ...)``) is read once; processes that never overlap in time
    are warned (separate runs?). Raises only TraceFormatError (one sentence naming the
    input), Cancelled or UnknownReader: see :func:`_bad_input_contract`.
    """
    from ..model import merge_traces
    from . import _validate

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("no path given")
    traces, fresh = [], False
    for i, p in enumerate(paths):
        def sub(f: float, i=i) -> None:
            progress((i + max(0.0, min(1.0, f))) / len(paths))

        if use_cache:
            from . import cache

            # a hit needs no sniffing (and no reader imports): the key is the files,
            # taken once before the read; any cache problem reads without the cache
            tr = cache.read_through(
                reader, p, lambda p=p, sub=sub: _read_one(p, reader, sub, cancelled))
            fresh = fresh or not tr.meta.get("cached")
        else:
            tr = _read_one(p, reader, sub, cancelled)
            fresh = True
        traces.append(tr)
    trace = merge_traces(traces, names=[str(p) for p in paths]) if len(traces) > 1 else traces[0]
    if len(traces) > 1:         # a merge is no cache entry: its analyses are not kept
        trace.meta.pop("cache_key", None)
    if fresh or len(traces) > 1:
        _validate.validate(trace)   # cached traces were validated before they were stored
    progress(1.0)
    trace = open_checks.warn_no_kernels(open_checks.warn_separate_runs(trace), paths)
    return replace(trace, meta=harvest(trace.meta))


@_one_input
def _read_one(path: Path, reader: str | None, progress: ProgressFn,
              cancelled: CancelledFn) -> Trace:
    from ._intervals import drop_bad_intervals

    if reader:
        r = get_reader(reader)
    else:
        path, r = _reader_for(path)
    trace = drop_bad_intervals(r.read(path, progress, cancelled), path)
    if path.is_dir():
        trace = _warn_unread_traces(trace, path)
    return replace(trace, meta=harvest(trace.meta))   # before the cache keeps it as JSON


def _warn_unread_traces(trace: Trace, folder: Path) -> Trace:
    """A folder reader reads its own files (a rocpd folder its databases): traces of
    other kinds beside them are named in a warning, never silently left out."""
    used = set()
    for s in trace.meta.get("sources") or []:
        try:
            used.add(Path(s).resolve())
        except (OSError, RuntimeError, ValueError):
            continue
    left = [(p, r) for p, r in _traces_inside(folder)
            if p.resolve() not in used and r.name != trace.meta.get("format")]
    if not left:
        return trace
    names = ", ".join(f"{p.name} ({r.name})" for p, r in left[:6])
    more = ", ..." if len(left) > 6 else ""
    warning = (f"{folder}: read as a {trace.meta.get('format')} folder; {len(left)} other "
               f"trace{'s' if len(left) > 1 else ''} beside it not read: {names}{more}")
    return trace.with_meta(warnings=[*trace.warnings,
                                     coded("input.traces_not_read", warning, folder)])


_MAX_INSIDE = 64    # files of a folder that no folder reader claims, sniffed one by one


def _reader_for(path: Path) -> tuple[Path, Reader]:
    """The reader of ``path``; for a folder that no folder reader claims, the one trace
    file directly inside it (a folder holding ``trace.json.gz`` and an ``env.txt`` opens
    as that trace). Several traces inside: one sentence naming them, never a guess."""
    try:
        return path, find_reader(path)
    except TraceFormatError:
        if not path.is_dir():
            raise
        found = _traces_inside(path)
        if len(found) == 1:
            return found[0]
        if not found:
            raise
        names = ", ".join(p.name for p, _ in found[:6]) + (", ..." if len(found) > 6 else "")
        raise TraceFormatError(path, None, "one trace, or one profiler output set",
                               f"{len(found)} separate traces ({names}): open one of "
                               "them") from None


def _traces_inside(folder: Path) -> list[tuple[Path, Reader]]:
    try:
        files = sorted(p for p in folder.iterdir()
                       if not p.name.startswith(".") and p.is_file())
    except OSError:
        return []
    if len(files) > _MAX_INSIDE:
        return []
    out = []
    for f in files:
        cands = candidates(f)
        if cands:
            out.append((f, cands[0].reader))
    return out


_LOAD_LOCK = threading.Lock()
_LOADED = False


def _load_builtin() -> None:
    """Import the built-in reader modules (each registers itself), once, thread-safely:
    two traces loading in two workers must both see every reader."""
    global _LOADED
    if _LOADED:
        return
    with _LOAD_LOCK:
        if _LOADED:
            return
        from ..model.plugins import load_group    # built-ins, then entry points

        load_group("hipscope.readers", [f"{__package__}.{mod}" for mod in BUILTIN_MODULES])
        _LOADED = True


BUILTIN_MODULES: Iterable[str] = (
    "rocprofv3_csv", "rocprofv3_json", "rocpd", "pftrace", "legacy_rocprof",
    "kineto", "rocprof_compute", "ncu_csv", "nsys", "jax",
)
