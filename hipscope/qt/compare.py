"""The comparison's controller and the synchronisation of its timelines.

* :class:`TimelineSync` keeps the documents of several runs in step: when one run's
  window changes, every other run shows the same times relative to its own alignment
  origin (``window_B = window_A - origin_A + origin_B``); selecting a kernel in one
  run selects the matched instance (same normalised name, same launch-order index) in
  the others. Each run keeps its own Document/ViewState; the sync only listens to
  their signals and writes their ViewStates (a guard stops the echo).
* :class:`CompareController` owns the runs' documents, the plain
  :class:`~hipscope.analysis.compare_state.CompareState` and a TaskRunner: state
  changes that need work (rules -> a new result, alignment choice -> new origins) run
  in workers; results are applied to the state on the GUI thread. Its ``bridge``
  (an :class:`~hipscope.qt.bridge.ObservableBridge`) is how the comparison's widgets
  follow the state: ``controller.bridge.changed(what, value)``.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QObject

from ..analysis import compare_state as cs
from ..analysis.compare_state import op_alignment  # noqa: F401  (its old import path)
from ..analysis.diff import Alignment, RulesError
from ..model.view_state import Selection
from .bridge import ObservableBridge
from .document import Document
from .tasks import TaskRunner

log = logging.getLogger(__name__)


class TimelineSync(QObject):
    """Windows and kernel selections of several documents kept in step."""

    def __init__(self, documents: list[Document], parent: QObject | None = None):
        super().__init__(parent)
        self.documents = documents
        self.origins = [d.full_range()[0] for d in documents]
        self.matcher: cs.Matcher | None = None
        self.enabled = True
        self._echo = False
        for i, d in enumerate(documents):
            d.view_changed.connect(lambda w, i=i: self._on_document_view_changed(i, w))
            d.selection_changed.connect(
                lambda s, i=i: self._on_document_selection_changed(i, s))

    def set_origins(self, origins: list[int], windows: list[tuple[int, int]] | None = None
                    ) -> None:
        """New alignment; ``windows`` (one per run) are shown at once, else run A's
        window is carried over to the others by the new origins."""
        self.origins = [int(o) for o in origins]
        self._echo = True
        try:
            if windows is not None:
                for d, w in zip(self.documents, windows):
                    d.view_state.set_window(*w)
        finally:
            self._echo = False
        if windows is None:
            self._on_document_view_changed(0, self.documents[0].view_state.window)

    def _on_document_view_changed(self, i: int, window) -> None:
        if self._echo or not self.enabled:
            return
        self._echo = True
        try:
            for j, d in enumerate(self.documents):
                if j != i:
                    d.view_state.set_window(*cs.synced_window(
                        window, self.origins[i], self.origins[j]))
        finally:
            self._echo = False

    def _on_document_selection_changed(self, i: int, sel: Selection | None) -> None:
        if self._echo or not self.enabled or self.matcher is None:
            return
        if sel is not None and sel.table != "kernels":
            return
        self._echo = True
        try:
            for j, d in enumerate(self.documents):
                if j == i:
                    continue
                row = self.matcher.match(i, sel.row, j) if sel is not None else -1
                d.view_state.select(Selection("kernels", row) if row >= 0 else None)
        finally:
            self._echo = False


class CompareController(QObject):
    """Documents, state and workers of one comparison (see module docstring)."""

    def __init__(self, traces, paths: list[Path], parent: QObject | None = None):
        super().__init__(parent)
        self.traces = list(traces)
        self.paths = [Path(p) for p in paths]
        labels = ["A"] + (["B"] if len(self.traces) == 2 else
                          [f"B{i}" for i in range(1, len(self.traces))])
        self.state = cs.CompareState(labels=labels)
        self.runner = TaskRunner(self, max_threads=2)
        self.documents = []
        for p, t in zip(self.paths, self.traces):
            d = Document([p], self)
            d.set_trace(t)
            self.documents.append(d)
        self.sync = TimelineSync(self.documents, self)
        self.bridge = ObservableBridge(self.state, self)
        self.bridge.changed.connect(self._on_state_changed)
        for d in self.documents[:1]:
            d.selection_changed.connect(self._on_a_selection_changed)

    # ---- work --------------------------------------------------------------------------
    def start(self) -> None:
        """First result (and alignment) in a worker."""
        self._submit_compute()

    def _submit_compute(self) -> None:
        traces, rules, choice = self.traces, self.state.rules_text, self.state.align
        self.state.set_busy(True, 0.0)

        def job(progress, cancelled):
            try:
                result = cs.compute(traces, rules, progress, cancelled)
            except RulesError as exc:
                return choice, None, None, str(exc)
            return (choice, result, *_aligned(traces, choice, result))

        h = self.runner.submit("compare", job)
        h.progressed.connect(lambda f: self.state.set_busy(True, f))
        h.succeeded.connect(self._on_compute_succeeded)
        h.failed.connect(self._on_work_failed)

    def _on_compute_succeeded(self, payload) -> None:
        choice, result, al, error = payload
        if result is None:                        # bad rules: keep the last result
            self.state.set_busy(False)
            self.state.set_error(error)
            return
        self.state.set_result(result)
        self.state.set_busy(False)
        if choice != self.state.align:            # changed while this was running
            self._submit_align()
        else:
            self._apply_alignment(al, error)

    def _submit_align(self) -> None:
        result, choice, traces = self.state.result, self.state.align, self.traces
        if result is None:
            return                                  # the running compute aligns too
        h = self.runner.submit("align", lambda p, c: _aligned(traces, choice, result))
        h.succeeded.connect(lambda payload: self._apply_alignment(*payload))
        h.failed.connect(self._on_work_failed)

    def _apply_alignment(self, al: Alignment | None, error: str) -> None:
        self.state.set_alignment(al, error)

    @property
    def aligned_at_op(self) -> bool:
        """Whether the timelines are aligned at an Ops-table row (align_at_op)."""
        return self.state.align.kind == "op"

    def _on_work_failed(self, message: str) -> None:
        self.state.set_busy(False)
        self.state.set_error(message)

    # ---- state -> documents ------------------------------------------------------------
    def _on_state_changed(self, what: str, value) -> None:
        if what == "rules_text":
            self._submit_compute()
        elif what == "align":
            self._submit_align()
        elif what == "result":
            self.sync.matcher = value.matcher
            for d, r in zip(self.documents, value.ratios):
                d.view_state.set_color_values(r)
        elif what == "alignment" and value is not None:
            self.sync.set_origins(value.origins, cs.initial_windows(value, self.state.align))
        elif what == "delta_colours":
            for d in self.documents:
                d.view_state.set_color_mode("delta" if value else "name")

    def _on_a_selection_changed(self, sel) -> None:
        """A kernel picked in run A's timeline becomes the kernel the tables show."""
        m = self.sync.matcher
        if sel is None or sel.table != "kernels" or m is None:
            return
        k = int(m.key[0][sel.row]) if 0 <= sel.row < len(m.key[0]) else -1
        if k >= 0:
            self.state.select_kernel(m.names[k])

    def align_at_instance(self, name: str, n: int) -> None:
        self.state.set_align(cs.AlignChoice("kernel", name, int(n)))

    def align_at_op(self, row: dict, n: int, b: int = 1) -> None:
        """Time 0 of A and of run ``b`` at the ``n``-th matched instance of a row of
        the Ops table (matched by the by-op comparison itself), in a worker; the
        "Align at" menu then reads this op."""
        self.state.set_align(cs.AlignChoice.at_op(row, n, b))

    def shutdown(self) -> None:
        self.bridge.detach()
        self.runner.shutdown()


def _aligned(traces, choice: cs.AlignChoice, result: cs.CompareResult):
    try:
        return cs.alignment(traces, choice, result.normalizer), ""
    except LookupError as exc:
        return None, str(exc.args[0] if exc.args else exc)
