"""A main-window tab that compares two or more runs: loads them in workers (or takes
traces another tab already holds), then shows :class:`~hipscope.views.compare.CompareView`.

It offers the TraceTab interface the window relies on: ``state``/``state_changed``
("loading" -> "loaded" | "failed" | "cancelled"), ``paths``, ``error``, ``title``,
``panels`` (none: its panels live inside the tab), ``dispose()``, ``timelines``.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPushButton, QVBoxLayout, QWidget

from ..qt.tasks import TaskHandle, TaskRunner
from .loading_tab import LoadingTab
from .trace_tab import Loader, default_loader

log = logging.getLogger(__name__)


class CompareTab(LoadingTab):
    """``paths``: one per run (A first), naming it; ``groups``: per run, the files read
    as its one trace (a run of several processes or ranks), default its path alone."""

    def __init__(self, paths: list[Path], preloaded: dict | None = None, parent=None,
                 groups: list[list[Path]] | None = None):
        super().__init__(paths, parent)
        self.groups = [list(map(Path, g)) for g in groups] if groups is not None \
            else [[p] for p in self.paths]
        if len(self.groups) != len(self.paths):
            raise ValueError("one group of files per run")
        self.traces: list = [None] * len(self.paths)
        for i, t in (preloaded or {}).items():
            self.traces[i] = t
        self.panels: dict[str, QWidget] = {}
        self.controller = None
        self.view = None
        self._build_pages(f"Comparing {self.title}…")

    @property
    def title(self) -> str:
        names = [p.parent.name if len(set(q.name for q in self.paths)) < len(self.paths)
                 else p.name or str(p) for p in self.paths]
        return " ⇄ ".join(names[:2]) + (f" (+{len(names) - 2})" if len(names) > 2 else "")

    @property
    def timelines(self) -> list:
        return list(self.view.timelines) if self.view is not None else []

    def _build_error_page(self) -> QWidget:
        page = QWidget(self)
        v = QVBoxLayout(page)
        v.addStretch(1)
        self._make_error_label(page)
        close = QPushButton("Close tab", page)
        close.clicked.connect(self.close_requested)
        v.addWidget(QLabel("<b>The comparison could not be made</b>", page),
                    0, Qt.AlignmentFlag.AlignHCenter)
        v.addWidget(self.error_label)
        v.addWidget(close, 0, Qt.AlignmentFlag.AlignHCenter)
        v.addStretch(2)
        return page

    # ---- loading -----------------------------------------------------------------------
    def start_load(self, runner: TaskRunner, loader: Loader = default_loader) -> None:
        """Read the runs not given yet, one after the other in one worker (readers
        register themselves on first use; one worker keeps that single-threaded);
        then compare."""
        self._set_state("loading")
        todo = [(i, g) for i, g in enumerate(self.groups) if self.traces[i] is None]
        if not todo:
            self._maybe_compare()
            return

        def job(progress, cancelled):
            from ..parsers import cache_jobs

            out = {}
            for k, (i, g) in enumerate(todo):
                out[i] = loader(g, lambda f, k=k: progress((k + f) / len(todo)), cancelled)
                cache_jobs.release(getattr(out[i], "meta", {}).get("cache_key"))  # stored now
            return out

        h = runner.submit(f"compare-load:{id(self)}", job)
        h.progressed.connect(lambda f: self.progress_bar.setValue(int(800 * f)))
        h.succeeded.connect(lambda traces, h=h: self._on_load_succeeded(h, traces))
        h.failed.connect(lambda msg, h=h: self._on_load_failed(h, msg))
        self._handle = h

    def cancel_load(self) -> None:
        if self.state != "loading":
            return
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self.controller is not None:
            self.controller.runner.cancel("compare")
        self._set_state("cancelled")

    def dispose(self) -> None:
        self.blockSignals(True)
        self.cancel_load()
        if self.view is not None:
            self.view.close()
        if self.controller is not None:
            self.controller.shutdown()

    def _on_load_succeeded(self, h: TaskHandle, traces: dict) -> None:
        if not self._take_handle(h):
            return
        for i, t in traces.items():
            self.traces[i] = t
        self._maybe_compare()

    def _on_load_failed(self, h: TaskHandle, message: str) -> None:
        if self._take_handle(h):
            self._fail(message)

    def _maybe_compare(self) -> None:
        if self.state != "loading" or any(t is None for t in self.traces):
            return
        from ..qt.compare import CompareController
        from ..views.compare import CompareView

        self.loading_label.setText(f"Comparing {self.title}: kernels, figures, alignment…")
        self.controller = CompareController(self.traces, self.paths, self)
        self.view = CompareView(self.controller, self)
        self._stack.addWidget(self.view)
        self.controller.bridge.changed.connect(self._on_compare_state_changed)
        self.controller.start()

    def _on_compare_state_changed(self, what: str, value) -> None:
        st = self.controller.state
        if what == "busy" and value:
            self.progress_bar.setValue(800 + int(200 * st.progress))
        if self.state != "loading":
            return
        if what == "alignment" and st.result is not None:
            self._stack.setCurrentWidget(self.view)
            self._set_state("loaded")
        elif what == "error" and st.result is None and value:
            self._fail(value)
