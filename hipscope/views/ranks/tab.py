"""The Ranks tab: a progress bar with Cancel while the job is analysed (in the window's
job runner, never on the GUI thread), then the overview (:class:`RanksView`), or one
sentence when nothing could be analysed.

It offers what the main window asks of its tabs: ``state``/``state_changed``
("loading" -> "loaded" | "failed" | "cancelled"), ``error``, ``title``, ``paths`` (none:
its files are a job's, not one trace's, so they are not kept as recent files or
session tabs), ``panels`` (none), ``timelines`` (none), ``close_requested``,
``dispose()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from ...qt.commands import Commands
from ...qt.ranks import Analyse, RanksController, describe_paths
from ...qt.tasks import TaskRunner
from ..progress_page import build_progress_page
from .view import RanksView


class RanksTab(QWidget):
    """One job: ``job_paths`` (files, folders or globs) analysed by the rank engine."""

    state_changed = Signal(str)
    close_requested = Signal()
    kind = "ranks"

    def __init__(self, job_paths: Sequence[str | Path], commands: Commands,
                 options: dict[str, Any] | None = None, analyse: Analyse | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("ranks_tab")
        self.job_paths = [str(p) for p in job_paths]
        self.paths: list[Path] = []
        self.panels: dict[str, QWidget] = {}
        self.timelines: list = []
        self.state, self.error = "new", ""
        self.controller = RanksController(self.job_paths, options, analyse, self)
        self.controller.progressed.connect(self._on_progressed)
        self.controller.state_changed.connect(self._on_controller_state_changed)
        self._runner: TaskRunner | None = None
        self.view = RanksView(commands, self)
        self._stack = QStackedWidget(self)
        pp = build_progress_page(
            self, f"Analysing the ranks of {describe_paths(self.job_paths)}…", self.cancel_load)
        self.loading_label, self.progress_bar, self.cancel_button = pp.label, pp.bar, pp.cancel
        self._stack.addWidget(pp.page)
        self._stack.addWidget(self._build_message_page())
        self._stack.addWidget(self.view)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self._stack)

    @property
    def title(self) -> str:
        names = [Path(p).name or p for p in self.job_paths]
        return "Ranks: " + (names[0] if len(names) == 1 else f"{names[0]} (+{len(names) - 1})")

    # ---- pages ---------------------------------------------------------------------------
    def _build_message_page(self) -> QWidget:
        """One sentence (nothing found, or why the job could not run), Retry, Close."""
        page = QWidget(self)
        v = QVBoxLayout(page)
        v.addStretch(1)
        self.message_label = QLabel("", page)
        self.message_label.setTextFormat(Qt.TextFormat.PlainText)
        self.message_label.setWordWrap(True)
        self.message_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        v.addWidget(self.message_label)
        row = QHBoxLayout()
        row.addStretch(1)
        for text, slot in (("Retry", lambda: self.start_load(self._runner)),
                           ("Close tab", self.close_requested.emit)):
            b = QPushButton(text, page)
            b.clicked.connect(slot)
            row.addWidget(b)
        row.addStretch(1)
        v.addLayout(row)
        v.addStretch(2)
        return page

    # ---- the job -------------------------------------------------------------------------
    def start_load(self, runner: TaskRunner | None, _loader: object = None) -> None:
        """Analyse the job in a worker of ``runner`` (a second call replaces the first)."""
        if runner is None:
            return
        self._runner = runner
        self.progress_bar.setValue(0)
        self._stack.setCurrentIndex(0)
        self._set_state("loading")
        self.controller.start(runner)

    def cancel_load(self) -> None:
        if self.state == "loading":
            self.controller.cancel()

    def dispose(self) -> None:
        """Stop the job (the window is closing the tab)."""
        self.blockSignals(True)
        self.controller.cancel()

    def _on_progressed(self, fraction: float) -> None:
        self.progress_bar.setValue(int(round(1000 * fraction)))

    def _on_controller_state_changed(self, state: str) -> None:
        c = self.controller
        if state == "done" and c.overview is not None and not c.error:
            self.view.set_overview(c.overview)
            self._stack.setCurrentWidget(self.view)
            self._set_state("loaded")
        elif state in ("done", "failed"):
            self.error = c.error
            self.message_label.setText(c.error)
            self._stack.setCurrentIndex(1)
            self._set_state("failed")
        elif state == "cancelled":
            self._set_state("cancelled")

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.state_changed.emit(state)
