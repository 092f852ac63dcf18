"""The trace tabs' loader (Qt-free), and a head start for the trace named on the
command line: its read begins on a thread before Qt, the theme and the main window are
built (half a second to a second of imports and widgets that the read need not wait
for), and the tab that opens it adopts that read instead of starting its own.

The tab sees what a read of its own would give: the same trace or the same error, the
read's progress, and Cancel (the tab's cancel stops the read at its next check). Only
the first load of exactly those paths adopts it; a retry or reload reads again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..model.progress import Cancelled, CancelledFn, ProgressFn

POLL_S = 0.05       # how often the adopting worker forwards progress and checks Cancel

Loader = Callable[[list[Path], ProgressFn, CancelledFn], Any]


def default_loader(paths: list[Path], progress: ProgressFn, cancelled: CancelledFn) -> Any:
    """Read the trace; files of a run folder get the run's telemetry as samples. Its
    cache entry is stored behind, once the tab drew it (``cache_jobs.release``)."""
    from ..launchers.samples import attach_telemetry, run_folder_of
    from ..parsers import cache_jobs, open_trace

    with cache_jobs.in_background(wait=False, held=True):   # the timeline goes first
        trace = open_trace(paths, progress, cancelled, use_cache=True)
    folder = run_folder_of(paths)
    trace = trace if folder is None else attach_telemetry(trace, folder)
    _preload_first_frame(trace)
    return trace


def _preload_first_frame(trace: Any) -> None:
    """A trace from the cache: its first frame's rows (the timeline's defaults) read
    from disk here too, so the tab's timeline takes them at once. On the command
    line's head start this runs while the window is still being built."""
    from ..analysis.context import analyses_of
    from ..model.view_state import ViewState

    if trace.meta.get("cached"):
        vs = ViewState()
        analyses_of(trace).preload("timeline_frame", vs.grouping, vs.color_mode)


def _ready() -> None:
    """What the loader imports, and the readers' code digest, done on the calling
    thread before the head start's thread begins. On that thread, each of their many
    small file reads gave up the GIL and waited up to a switch interval to get it back
    from the main thread's Qt imports: the digest took 0.22 s there and 0.014 s alone,
    and a warm first frame came 0.15 s later (median of 6 interleaved runs)."""
    from ..analysis import context, persist  # noqa: F401
    from ..launchers import samples  # noqa: F401
    from ..parsers import _inputs, _validate, cache, open_checks, run_provenance  # noqa: F401

    cache.code_version()


class HeadStart:
    """``loader(paths, progress, cancelled)`` run at once on its own thread for
    ``paths``; :meth:`loader` is the window's loader (the read for those paths, then
    ``loader`` itself for any other)."""

    def __init__(self, paths: list[Path], loader: Loader):
        self.paths = [Path(p) for p in paths]
        self._load = loader
        self._cancel = threading.Event()
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._taken = False
        self._fraction = 0.0
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="hipscope-head-start",
                                        daemon=False)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._load(self.paths, self._progress, self._cancel.is_set)
        except BaseException as exc:  # noqa: BLE001 - handed to the adopting worker
            self._error = exc
        finally:
            self._done.set()

    def _progress(self, fraction: float) -> None:
        self._fraction = float(fraction)

    def _take(self, paths: list[Path]) -> bool:
        with self._lock:
            if self._taken or [Path(p) for p in paths] != self.paths:
                return False
            self._taken = True
            return True

    def loader(self, paths: list[Path], progress: ProgressFn, cancelled: CancelledFn) -> Any:
        """The head start's outcome for its paths (once), else a read of their own."""
        if not self._take(paths):
            return self._load(paths, progress, cancelled)
        while not self._done.wait(POLL_S):
            if cancelled():
                self._cancel.set()
                raise Cancelled()
            progress(self._fraction)
        if self._error is not None:
            raise self._error
        value, self._value = self._value, None      # the tab holds the trace, not us
        return value

    def cancel(self) -> None:
        """Stop the read when no tab took it (the window closed first, or never opened
        its path); a taken read is the tab's to cancel."""
        with self._lock:
            if not self._taken:
                self._taken = True
                self._cancel.set()
                self._value = None


def head_start(paths: list[Path], compare: bool = False, ranks: bool = False
               ) -> HeadStart | None:
    """The head start for the app's command line: one trace opened plainly (not a
    comparison or a job's ranks); None otherwise."""
    if len(paths) != 1 or compare or ranks:
        return None
    _ready()
    return HeadStart([Path(paths[0])], default_loader)
