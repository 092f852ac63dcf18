"""One tab of the main window: a Document, its loading/error/content pages, the
timeline and one panel per registered PanelSpec (the window shows them in its docks)."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from ..model.units import fmt_duration
from ..qt.document import Document
from ..qt.panels import panel_specs
from ..qt.tasks import TaskHandle, TaskRunner
from ..qt.timeline_api import RangeStats, Timeline
from ..views.diagnostics import DiagnosticBanner, DocumentDiagnostics, RangeMarkers
from .head_start import Loader, default_loader
from .loading_tab import LoadingTab

log = logging.getLogger(__name__)

__all__ = ["Loader", "TraceTab", "default_loader", "make_timeline"]


def make_timeline(document: Document, parent: QWidget) -> QWidget:
    """The TimelineView, imported lazily; a placeholder while it is not there."""
    try:
        from ..views.timeline import TimelineView
    except ImportError as exc:
        log.info("timeline view not available: %s", exc)
        return _placeholder("The timeline view is not available in this build.", parent)
    try:
        return TimelineView(document, parent)
    except Exception as exc:  # noqa: BLE001 - keep the tables usable; log the traceback
        log.exception("the timeline view failed to start")
        return _placeholder(f"The timeline view failed to start: {exc}", parent)


def _placeholder(text: str, parent: QWidget) -> QLabel:
    lab = QLabel(text, parent)
    lab.setAlignment(Qt.AlignmentFlag.AlignCenter)
    lab.setEnabled(False)
    lab.setObjectName("timeline_placeholder")
    return lab


class TraceTab(LoadingTab):
    """Loading page -> content page (timeline) or error page."""

    range_text_changed = Signal(str)
    diagnostics_requested = Signal()     # the banner's "Details"

    def __init__(self, paths: list[Path], parent=None):
        super().__init__(paths, parent)
        self.document = Document(self.paths, self)
        self.range_text = ""
        self.range_stats: RangeStats | None = None
        self._build_pages(f"Loading {self.document.title}…")
        self.diagnostics = DocumentDiagnostics.of(self.document)
        self.timeline = make_timeline(self.document, self)
        self._stack.addWidget(self._build_content_page())
        if isinstance(self.timeline, Timeline):
            self.timeline.range_measured.connect(self._on_timeline_range_measured)
            self.markers = RangeMarkers(self.timeline, self.document)
        # panels shown by the window's docks (the window re-parents them), by spec key
        self.panels: dict[str, QWidget] = {spec.key: spec.factory(self.document)
                                           for spec in panel_specs()}

    @property
    def has_timeline(self) -> bool:
        return self.timeline_api is not None

    @property
    def timelines(self) -> list[Timeline]:
        """The tab's timelines (none while a placeholder stands in)."""
        return [] if self.timeline_api is None else [self.timeline_api]

    @property
    def timeline_api(self) -> Timeline | None:
        """The timeline, or None while a placeholder stands in for it."""
        return self.timeline if isinstance(self.timeline, Timeline) else None

    # ---- pages -------------------------------------------------------------------------
    def _build_content_page(self) -> QWidget:
        """The diagnostics banner over the timeline."""
        self.content_page = page = QWidget(self)
        v = QVBoxLayout(page)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(0)
        self.banner = DiagnosticBanner(self.document, page)
        self.banner.details_requested.connect(self.diagnostics_requested)
        v.addWidget(self.banner)
        v.addWidget(self.timeline, 1)
        return page

    def _build_error_page(self) -> QWidget:
        page = QWidget(self)
        v = QVBoxLayout(page)
        v.addStretch(1)
        title = QLabel("<b>This trace could not be opened</b>", page)
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._make_error_label(page)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.setMaximumWidth(900)
        retry = QPushButton("Retry", page)
        retry.clicked.connect(lambda: self.start_load(self._runner, self._loader))
        close = QPushButton("Close tab", page)
        close.clicked.connect(self.close_requested)
        v.addWidget(title)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.error_label, 4)
        row.addStretch(1)
        v.addLayout(row)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(retry)
        buttons.addWidget(close)
        buttons.addStretch(1)
        v.addLayout(buttons)
        v.addStretch(2)
        return page

    # ---- loading -----------------------------------------------------------------------
    def start_load(self, runner: TaskRunner, loader: Loader = default_loader) -> TaskHandle:
        """Read the trace in a worker; a second call cancels the first (latest wins)."""
        self._runner, self._loader = runner, loader
        paths = list(self.paths)
        self._set_state("loading")
        self.progress_bar.setValue(0)
        self._stack.setCurrentIndex(0)
        h = runner.submit(f"load:{id(self)}",
                          lambda progress, cancelled: loader(paths, progress, cancelled))
        h.progressed.connect(self._on_load_progressed)
        h.succeeded.connect(lambda trace, h=h: self._on_load_succeeded(h, trace))
        h.failed.connect(lambda msg, h=h: self._on_load_failed(h, msg))
        h.cancelled.connect(lambda h=h: self._on_load_cancelled(h))
        self._handle = h
        return h

    def cancel_load(self) -> None:
        if self._handle is not None and self.state == "loading":
            self._handle.cancel()
            self._handle = None          # its late result is ignored
            self._set_state("cancelled")

    def dispose(self) -> None:
        """Stop this tab's work: its load, then every panel's, and wait for the
        document's workers (the trace's one job runner)."""
        self.blockSignals(True)           # closing is not a 'cancelled' to react to
        self.cancel_load()
        self.diagnostics.shutdown()
        self.timeline.close()             # each panel cancels its own tasks on close
        for view in self.panels.values():
            view.close()
        self.document.shutdown()

    def _on_load_progressed(self, fraction: float) -> None:
        self.progress_bar.setValue(int(round(1000 * fraction)))

    def _on_load_succeeded(self, h: TaskHandle, trace) -> None:
        if not self._take_handle(h):
            return
        self._stack.setCurrentWidget(self.content_page)
        self.document.set_trace(trace)
        self._set_state("loaded")

    def _on_load_failed(self, h: TaskHandle, message: str) -> None:
        if self._take_handle(h):
            self._fail(message)

    def _on_load_cancelled(self, h: TaskHandle) -> None:
        if self._take_handle(h):
            self._set_state("cancelled")

    # ---- status ------------------------------------------------------------------------
    def status_texts(self) -> tuple[str, str]:
        """(format, kernel count) for the status bar."""
        tr = self.document.trace
        if tr is None:
            return "", ""
        span = tr.time_range()
        kernels = f"{len(tr.kernels):,} kernels"
        if span is not None:
            kernels += f" in {fmt_duration(span[1] - span[0])}"
        return f"format: {tr.format}", kernels

    def _on_timeline_range_measured(self, stats: RangeStats | None) -> None:
        self.range_stats = stats
        self.range_text = "" if self.range_stats is None else self.range_stats.text()
        self.range_text_changed.emit(self.range_text)

