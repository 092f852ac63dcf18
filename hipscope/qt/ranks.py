"""The Ranks tab's controller: runs the job analysis (``hipscope.ranks.engine.analyse_job``)
in the window's job runner with progress and Cancel, and keeps the :class:`JobOverview`.

The engine is imported inside the job (it pulls in Dask); a build without it fails the
job with one sentence. ``analyse`` can be any callable with the engine's signature
(tests pass one that waits on its ``cancelled``). Also here: where a double-click on a
rank, a heatmap cell or a collective opens that rank's timeline (plain functions over
the overview, no widgets).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from ..model.progress import CancelledFn, ProgressFn
from ..ranks.model import CollectiveInstance, JobOverview, RankSummary
from .tasks import TaskHandle, TaskRunner

log = logging.getLogger(__name__)

Analyse = Callable[..., JobOverview]
ENGINE_MISSING = ("The rank analysis engine (hipscope.ranks.engine) is not installed in this "
                  "build; install hipscope with its 'ranks' extra.")
ZOOM_BINS = 2          # a heatmap cell opens its bin with this many bins either side
ZOOM_PAD = 0.25        # a collective opens its arrivals..ends padded by this share


class EngineMissing(Exception):
    """The engine cannot be imported (its message is the sentence shown)."""


def engine_analyse(paths: Sequence[str | Path], **kw: Any) -> JobOverview:
    """The real engine (imported here: it pulls in Dask)."""
    try:
        engine = importlib.import_module("hipscope.ranks.engine")
    except ImportError as exc:
        log.info("ranks engine not importable: %s", exc)
        raise EngineMissing(ENGINE_MISSING) from None
    return engine.analyse_job(paths, **kw)


def describe_paths(paths: Sequence[str | Path]) -> str:
    """The job's folders/globs as people read them (first two, then a count)."""
    names = [str(p) for p in paths]
    return ", ".join(names[:2]) + (f" and {len(names) - 2} more" if len(names) > 2 else "")


class RanksController(QObject):
    """One job's analysis. ``state``: new -> running -> done | failed | cancelled.

    ``options`` go to the engine as keywords (``workers``, ``scheduler``, ``slurm``,
    ``cache_dir``). Signals arrive on the GUI thread."""

    progressed = Signal(float)
    state_changed = Signal(str)

    def __init__(self, paths: Sequence[str | Path], options: dict[str, Any] | None = None,
                 analyse: Analyse | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.paths = [str(p) for p in paths]
        self.options = dict(options or {})
        self.analyse = analyse or engine_analyse
        self.state = "new"
        self.error = ""
        self.overview: JobOverview | None = None
        self._handle: TaskHandle | None = None

    def start(self, runner: TaskRunner) -> TaskHandle:
        """Run the analysis in a worker of ``runner``; a second start replaces the first."""
        paths, options, analyse = list(self.paths), dict(self.options), self.analyse

        def job(progress: ProgressFn, cancelled: CancelledFn) -> JobOverview | str:
            try:
                return analyse(paths, progress=progress, cancelled=cancelled, **options)
            except EngineMissing as exc:
                return str(exc)       # a sentence, not an unexpected error

        self.overview, self.error = None, ""
        self._set_state("running")
        h = runner.submit(f"ranks:{id(self)}", job)
        h.progressed.connect(self.progressed)
        h.succeeded.connect(lambda ov, h=h: self._on_done(h, "done", ov, ""))
        h.failed.connect(lambda msg, h=h: self._on_done(h, "failed", None, msg))
        h.cancelled.connect(lambda h=h: self._on_done(h, "cancelled", None, ""))
        self._handle = h
        return h

    def cancel(self) -> None:
        """Stop the job (its tasks are cancelled by the engine's ``cancelled()`` poll)."""
        if self._handle is not None and self.state == "running":
            self._handle.cancel()
            self._handle = None
            self._set_state("cancelled")

    @property
    def running(self) -> bool:
        return self.state == "running"

    def _on_done(self, h: TaskHandle, state: str, overview: JobOverview | str | None,
                 error: str) -> None:
        if h is not self._handle:
            return                    # a cancelled or replaced job's late answer
        self._handle = None
        if isinstance(overview, str):          # the job's own sentence (no engine)
            state, error = "failed", overview
        ov = self.overview = overview if isinstance(overview, JobOverview) else None
        self.error = error
        if state == "done" and ov is not None and not ov.ranks and not ov.failed:
            self.error = f"No rank traces were found in {describe_paths(self.paths)}."
        self._set_state(state)

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.state_changed.emit(state)


# ---- where a double-click opens a rank's timeline --------------------------------------
def rank_span(rank: RankSummary) -> tuple[int, int]:
    """A rank row: the rank's whole span."""
    return int(rank.start_ns), max(int(rank.end_ns), int(rank.start_ns) + 1)


def cell_window(overview: JobOverview, column: int) -> tuple[int, int]:
    """A heatmap cell: its bin, with ``ZOOM_BINS`` bins either side."""
    b = int(overview.grid_bin_ns)
    t = int(overview.grid_start_ns) + column * b
    return t - ZOOM_BINS * b, t + (ZOOM_BINS + 1) * b


def collective_window(c: CollectiveInstance) -> tuple[int, int]:
    """A collective: the first arrival to the last end (the last rank's wait and its
    kernel), padded by ``ZOOM_PAD`` of that either side."""
    t0 = min(c.arrival_ns.values())
    t1 = max([*c.end_ns.values(), *c.arrival_ns.values()])
    pad = max(1, int((t1 - t0) * ZOOM_PAD))
    return t0 - pad, t1 + pad


def worst_instance(overview: JobOverview, rank: int) -> CollectiveInstance | None:
    """The collective where ``rank`` arrived last and kept the others waiting longest."""
    mine = [c for c in overview.collectives if c.last_rank == rank]
    return max(mine, key=lambda c: c.wait_ns) if mine else None


def rank_by_number(overview: JobOverview, rank: int) -> RankSummary | None:
    return next((r for r in overview.ranks if r.rank == rank), None)
