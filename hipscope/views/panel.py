"""The base of the dock panels that follow a Document and compute in workers
(:class:`~.heatmap.CounterHeatmapView`, :class:`~.queue_delay.QueueDelayView`)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QStackedLayout, QWidget

from ..qt.document import Document

__all__ = ["Document", "WorkerPanel"]     # the base of the worker panels, and what they follow


class WorkerPanel(QWidget):
    """Holds ``document`` and ``tasks`` (its share of the document's job runner, whose
    tasks are cancelled when the panel closes);
    shows ``empty`` (a reason) instead of its content when the trace has nothing for it.

    A subclass builds its content, hands it to :meth:`_set_pages`, then calls
    :meth:`_follow_document`.
    """

    def __init__(self, document: Document, parent: QWidget | None = None):
        super().__init__(parent)
        self.document = document
        self.tasks = document.scope(type(self).__name__)

    def _set_pages(self, empty_text: str, content: QWidget) -> None:
        """``stack``: page 0 the ``empty`` label, page 1 ``content``."""
        self.empty = QLabel(empty_text)
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.stack = QStackedLayout(self)
        self.stack.addWidget(self.empty)
        self.stack.addWidget(content)

    def _follow_document(self) -> None:
        """Follow the document's trace and window; take its trace when it has one."""
        self.document.trace_loaded.connect(self._on_document_trace_loaded)
        self.document.view_changed.connect(self._on_document_view_changed)
        if self.document.trace is not None:
            self._on_document_trace_loaded(self.document.trace)

    def _on_document_trace_loaded(self, trace) -> None:
        raise NotImplementedError

    def _on_document_view_changed(self, window) -> None:
        raise NotImplementedError

    @property
    def is_empty(self) -> bool:
        return self.stack.currentIndex() == 0

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        self.tasks.shutdown()
        super().closeEvent(event)
