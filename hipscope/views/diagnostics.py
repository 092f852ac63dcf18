"""Diagnostics in the window: what the readers and analyses found wrong with a trace.

One :class:`DocumentDiagnostics` per Document gathers them (the reader's coded
``meta`` diagnostics, at once, plus incomplete graph replays, in a worker for big
traces); the tab's :class:`DiagnosticBanner` shows the most severe in one line, the
:class:`DiagnosticsView` panel lists them all with their codes, and
:class:`RangeMarkers` hatches the affected time ranges over the timeline. Codes:
docs/readers.md ("Diagnostic codes").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QStackedWidget,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..analysis.graphs import graph_replay_gaps
from ..model.diagnostics import GENERIC, Diagnostic, diagnostics
from ..qt.document import Document

log = logging.getLogger(__name__)

GRAPH_CODE = "analysis.incomplete_graph_replay"
SYNC_EVENTS = 200_000          # kernels + API calls: below this, gather on the GUI thread
RANK = {"error": 0, "warning": 1, "info": 2}
SYMBOL = {"error": "✖", "warning": "⚠", "info": "ℹ"}
COLOURS = {"error": QColor(176, 38, 38), "warning": QColor(191, 128, 0),
           "info": QColor(38, 104, 176)}
MARK_TEXT = {GRAPH_CODE: "kernels missing (graph replay)"}
_OBJECT_NAME = "hipscope_document_diagnostics"


@dataclass(frozen=True)
class Marker:
    """An affected time range ``[t0, t1)`` ns (``device`` -1: unknown) and its code."""

    t0: int
    t1: int
    device: int
    code: str


def gather(trace) -> tuple[list[dict[str, Any]], list[Marker]]:
    """Every diagnostic of ``trace`` (the reader's, then incomplete graph replays) and
    the markers of the affected ranges. Qt-free; runs in a worker for big traces."""
    out = diagnostics(trace)
    markers: list[Marker] = []
    try:
        gaps = graph_replay_gaps(trace)
    except Exception:  # noqa: BLE001 - the reader's diagnostics still show; log why
        log.exception("graph-replay check failed")
        return out, markers
    text = gaps.warning()
    if text:
        if not any(d.get("code") == GRAPH_CODE for d in out):
            out.append(Diagnostic(GRAPH_CODE, "warning", text).as_dict())
        s, e, dev = gaps.windows()
        markers = [Marker(int(a), int(b), int(c), GRAPH_CODE) for a, b, c in zip(s, e, dev)]
    return out, markers


def by_severity(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Most severe first, coded before generic (``reader.warning``), in their order
    otherwise."""
    return sorted(entries, key=lambda d: (RANK.get(d.get("severity", "warning"), 1),
                                          d.get("code") == GENERIC))


class DocumentDiagnostics(QObject):
    """The diagnostics of one Document's trace (a child of the Document; get it with
    :meth:`of`). ``changed`` is emitted when ``entries``/``markers`` change."""

    changed = Signal()

    def __init__(self, document: Document):
        super().__init__(document)
        self.setObjectName(_OBJECT_NAME)
        self.document = document
        self.entries: list[dict[str, Any]] = []
        self.markers: list[Marker] = []
        self.pending = False
        self._generation = 0
        self._tasks = document.scope("diagnostics")
        document.trace_loaded.connect(self._on_document_trace_loaded)
        if document.trace is not None:
            self._on_document_trace_loaded(document.trace)

    @classmethod
    def of(cls, document: Document) -> DocumentDiagnostics:
        found = document.findChild(DocumentDiagnostics, _OBJECT_NAME)
        return found if found is not None else cls(document)

    def shutdown(self) -> None:
        """Stop the worker (the tab is closing)."""
        self._generation += 1
        self._tasks.shutdown()

    def _on_document_trace_loaded(self, trace) -> None:
        self._generation += 1
        gen = self._generation
        self.entries, self.markers = diagnostics(trace), []
        if len(trace.kernels) + len(trace.api) < SYNC_EVENTS:
            self._apply(gen, gather(trace))
            return
        self.pending = True
        self.changed.emit()
        h = self._tasks.submit("gather", lambda progress, cancelled: gather(trace))
        h.succeeded.connect(lambda result, gen=gen: self._apply(gen, result))

    def _apply(self, gen: int, result) -> None:
        if gen != self._generation:
            return
        self.entries, self.markers = result
        self.pending = False
        self.changed.emit()

    def worst(self) -> str | None:
        """The most severe severity present (None when there is nothing)."""
        return by_severity(self.entries)[0]["severity"] if self.entries else None


class DiagnosticBanner(QFrame):
    """One line over the timeline: the most severe diagnostic, a count of the others,
    "Details" (``details_requested``: raise the Diagnostics panel) and a close button."""

    details_requested = Signal()

    def __init__(self, document: Document, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("diagnostic_banner")
        self.source = DocumentDiagnostics.of(document)
        self.dismissed = False
        self._colour = COLOURS["warning"]
        self.icon = QLabel(self)
        self.label = QLabel(self)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.details = QPushButton("Details", self)
        self.details.clicked.connect(self.details_requested)
        self.close_button = QToolButton(self)
        self.close_button.setText("×")
        self.close_button.setToolTip("Hide this banner (the Diagnostics panel keeps the list)")
        self.close_button.clicked.connect(self._dismiss)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 3, 4, 3)
        lay.addWidget(self.icon)
        lay.addWidget(self.label, 1)
        lay.addWidget(self.details)
        lay.addWidget(self.close_button)
        self.source.changed.connect(self._refresh)
        document.trace_loaded.connect(self._on_document_trace_loaded)
        self._refresh()

    def _on_document_trace_loaded(self, _trace) -> None:
        self.dismissed = False             # a reloaded trace shows its banner again
        self._refresh()

    def _dismiss(self) -> None:
        self.dismissed = True
        self.hide()

    def text(self) -> str:
        """The full line (the label shows it elided to the width)."""
        entries = by_severity(self.source.entries)
        if not entries:
            return ""
        more = len(entries) - 1
        return entries[0]["message"] + (f" (and {more} more)" if more else "")

    def summary(self) -> dict[str, Any] | None:
        """What the banner shows (None when hidden), for the screenshot hook."""
        if self.isHidden() or not self.source.entries:
            return None
        return {"severity": self.source.worst(), "text": self.text(),
                "count": len(self.source.entries)}

    def _refresh(self) -> None:
        sev = self.source.worst()
        if sev is None or self.dismissed:
            self.hide()
            return
        self._colour = COLOURS[sev]
        self.icon.setText(SYMBOL[sev])
        self.label.setToolTip("\n".join(f"[{d['code']}] {d['message']}"
                                        for d in by_severity(self.source.entries)))
        self._elide()
        self.show()

    def _elide(self) -> None:
        width = max(self.label.width(), 100)
        self.label.setText(QFontMetrics(self.label.font()).elidedText(
            self.text(), Qt.TextElideMode.ElideRight, width))

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        self._elide()

    def paintEvent(self, event) -> None:  # noqa: N802
        """A tint of the severity's colour and a line under it, painted (a style
        sheet would keep the children's text colours of the theme it was set in)."""
        p = QPainter(self)
        tint = QColor(self._colour)
        tint.setAlpha(60)
        p.fillRect(self.rect(), tint)
        p.fillRect(0, self.height() - 2, self.width(), 2, self._colour)
        p.end()


class DiagnosticsView(QWidget):
    """The Diagnostics panel: every diagnostic with its severity, code, message and
    place; double-clicking one with a marked range shows that range."""

    COLUMNS = ("Severity", "Code", "Message", "Where")

    def __init__(self, document: Document, parent: QWidget | None = None):
        super().__init__(parent)
        self.document = document
        self.source = DocumentDiagnostics.of(document)
        self.tree = QTreeWidget(self)
        self.tree.setHeaderLabels(list(self.COLUMNS))
        self.tree.setRootIsDecorated(False)
        self.tree.setAlternatingRowColors(True)
        self.tree.setWordWrap(True)
        self.tree.itemDoubleClicked.connect(self._on_item_double_clicked)
        header = self.tree.header()
        header.setStretchLastSection(False)
        for i, mode in enumerate((QHeaderView.ResizeMode.ResizeToContents,
                                  QHeaderView.ResizeMode.ResizeToContents,
                                  QHeaderView.ResizeMode.Stretch,
                                  QHeaderView.ResizeMode.Interactive)):
            header.setSectionResizeMode(i, mode)
        self.tree.setColumnWidth(3, 260)
        self.empty = QLabel("No diagnostics: the reader found nothing to warn about.", self)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setEnabled(False)
        self._stack = QStackedWidget(self)
        self._stack.addWidget(self.empty)
        self._stack.addWidget(self.tree)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self._stack)
        self.source.changed.connect(self._refresh)
        self._refresh()

    def rows(self) -> list[list[str]]:
        """[severity, code, message, where] per line, as listed."""
        items = [self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount())]
        return [[it.text(c) for c in range(4)] for it in items if it is not None]

    def _refresh(self) -> None:
        self.tree.clear()
        for d in by_severity(self.source.entries):
            sev = d.get("severity", "warning")
            item = QTreeWidgetItem([f"{SYMBOL.get(sev, '')} {sev}", d.get("code", ""),
                                    d.get("message", ""), d.get("where") or ""])
            item.setToolTip(2, d.get("message", ""))
            item.setForeground(0, QBrush(COLOURS.get(sev, COLOURS["warning"])))
            self.tree.addTopLevelItem(item)
        if self.source.pending:
            self.tree.addTopLevelItem(QTreeWidgetItem(["…", "", "checking graph replays…", ""]))
        self._stack.setCurrentWidget(self.tree if self.tree.topLevelItemCount() else self.empty)

    def _on_item_double_clicked(self, item: QTreeWidgetItem, _col: int) -> None:
        marks = [m for m in self.source.markers if m.code == item.text(1)]
        if marks:
            t0, t1 = min(m.t0 for m in marks), max(m.t1 for m in marks)
            pad = max((t1 - t0) // 20, 1)
            self.document.view_state.set_window(t0 - pad, t1 + pad)


class RangeMarkers(QWidget):
    """Hatched bands over a timeline's tracks for the marked ranges (transparent to the
    mouse; follows the document's window and the timeline's size)."""

    def __init__(self, timeline: Any, document: Document):
        """``timeline``: a TimelineView (its ``x_of`` and ``track_rect``)."""
        super().__init__(timeline)
        self.setObjectName("diagnostic_markers")
        self.timeline, self.source = timeline, DocumentDiagnostics.of(document)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground)
        self.source.changed.connect(self.update)
        document.view_changed.connect(self.update)
        timeline.installEventFilter(self)
        self.setGeometry(timeline.rect())

    def eventFilter(self, obj, event) -> bool:  # noqa: N802
        if obj is self.timeline and event.type() == QEvent.Type.Resize:
            self.setGeometry(self.timeline.rect())
        return False

    def bands(self) -> list[tuple[int, int, str]]:
        """(x0, x1, code) of the markers in view, widget pixels, at least 2 px wide."""
        r = self.timeline.track_rect
        out = []
        for m in self.source.markers:
            x0 = max(int(self.timeline.x_of(m.t0)), r.left())
            x1 = min(int(self.timeline.x_of(m.t1)), r.right())
            if x1 >= r.left() and x0 <= r.right():
                out.append((x0, max(x1, x0 + 2), m.code))
        return out

    def paintEvent(self, event) -> None:  # noqa: N802
        bands = self.bands()
        if not bands:
            return
        r = self.timeline.track_rect
        layout = getattr(self.timeline, "layout", None)
        bottom = r.bottom() if layout is None else min(
            r.bottom(), r.top() + int(layout.total) - int(self.timeline.scroll))
        height = max(bottom - r.top(), 0)
        p = QPainter(self)
        colour = QColor(COLOURS["warning"])
        fill, hatch = QColor(colour), QColor(colour)
        fill.setAlpha(40)
        hatch.setAlpha(150)
        fm = p.fontMetrics()
        for x0, x1, code in bands:
            p.fillRect(x0, r.top(), x1 - x0, height, fill)
            p.fillRect(x0, r.top(), x1 - x0, height, QBrush(hatch, Qt.BrushStyle.BDiagPattern))
            p.fillRect(x0, r.top() - 4, x1 - x0, 4, colour)
            text = MARK_TEXT.get(code, code)
            if x1 - x0 > fm.horizontalAdvance(text) + 8:
                p.fillRect(x0, r.top(), fm.horizontalAdvance(text) + 8, fm.height() + 2, colour)
                p.setPen(QPen(QColor(255, 255, 255)))
                p.drawText(x0 + 4, r.top() + fm.ascent() + 1, text)
        p.end()
