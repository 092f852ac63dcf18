"""The base of the main window's tabs that load traces in a worker first
(:class:`~.trace_tab.TraceTab`, :class:`~.compare_tab.CompareTab`): a stack of a loading
page, an error page and the tab's content, and the load's ``state``."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QLabel,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from ..qt.tasks import TaskHandle
from ..views.progress_page import build_progress_page


class LoadingTab(QWidget):
    """Subclasses build their error page (:meth:`_build_error_page`, which sets
    ``error_label``) and call :meth:`_build_pages` in their ``__init__``."""

    state_changed = Signal(str)          # "loading" | "loaded" | "failed" | "cancelled"
    close_requested = Signal()

    def __init__(self, paths: list[Path], parent=None):
        super().__init__(parent)
        self.paths = [Path(p) for p in paths]
        self.state = "new"
        self.error = ""
        self._handle: TaskHandle | None = None

    # ---- pages -------------------------------------------------------------------------
    def _build_pages(self, loading_text: str) -> None:
        """The stack, filling the tab: page 0 loading, page 1 the error."""
        self._stack = QStackedWidget(self)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self._stack)
        pp = build_progress_page(self, loading_text, self.cancel_load)
        self.loading_label, self.progress_bar, self.cancel_button = pp.label, pp.bar, pp.cancel
        self._stack.addWidget(pp.page)
        self._stack.addWidget(self._build_error_page())

    def _build_error_page(self) -> QWidget:
        raise NotImplementedError

    def _make_error_label(self, page: QWidget) -> QLabel:
        """``error_label``: the reason, as plain wrapped text, centred."""
        self.error_label = QLabel("", page)
        self.error_label.setTextFormat(Qt.TextFormat.PlainText)
        self.error_label.setWordWrap(True)
        self.error_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        return self.error_label

    # ---- loading -----------------------------------------------------------------------
    def cancel_load(self) -> None:
        raise NotImplementedError

    def _take_handle(self, h: TaskHandle) -> bool:
        """True when ``h`` is the load in flight (it is then no longer); False for the
        late answer of a load that was cancelled or replaced."""
        if h is not self._handle:
            return False
        self._handle = None
        return True

    def _fail(self, message: str) -> None:
        self.error = message
        self.error_label.setText(message)
        self._stack.setCurrentIndex(1)
        self._set_state("failed")

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.state_changed.emit(state)
