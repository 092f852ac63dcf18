"""The Runs panel: past runs from the data directory (``<data>/runs``, see
:mod:`hipscope.launchers.rundir`) with Open, Re-run, Open folder, Compare and Delete;
and :class:`RunsDock`, the window's dock holding the list and one tab per run.

The list is read in a worker (a data directory may hold many runs); actions are
signals the window connects (views never call the window).
"""

from __future__ import annotations

import json
import logging
import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QAction, QColor, QDesktopServices
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDockWidget,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QTableView,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..launchers.rundir import Damaged, RunSummary, list_runs, read_status, runs_dir
from ..launchers.spec import RunSpec
from ..qt.runs import RunManager, RunSession, fmt_seconds
from .run_panel import STATE_COLOUR, STATE_TEXT, RunPanel

log = logging.getLogger(__name__)

COLUMNS = ("Status", "Started", "Duration", "Target", "Profiler", "Command", "Exit", "Run")
COL_COMMAND, COL_EXIT, COL_RUN = 5, 6, 7
ROLE_ROW = Qt.ItemDataRole.UserRole + 1


@dataclass(frozen=True)
class RunRow:
    summary: RunSummary
    trace_inputs: tuple[Path, ...]
    profiler: str = "none"

    @property
    def run_id(self) -> str:
        return self.summary.run_id


def read_rows(base: Path | None = None) -> list[RunRow]:
    """Every run, newest first, with the trace inputs its status names (worker); a
    damaged run folder is a row too (state unknown, the damage in its tooltip)."""
    rows = []
    for s in reversed(list_runs(base)):
        try:
            st = read_status(s.path)
        except Damaged:
            st = {}
        rows.append(RunRow(s, tuple(Path(p) for p in st.get("trace_inputs") or []),
                           str(st.get("profiler") or "none")))
    return rows


class RunsTableModel(QAbstractTableModel):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list[RunRow] = []

    def set_rows(self, rows: list[RunRow]) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 (Qt name)
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if (orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole
                and 0 <= section < len(COLUMNS)):
            return COLUMNS[section]
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not (0 <= index.row() < len(self.rows)):
            return None
        row = self.rows[index.row()]
        s, col = row.summary, index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._text(row, col)
        if role == Qt.ItemDataRole.ToolTipRole:
            if col == 0:
                return s.reason or s.state
            if col == 4 and row.trace_inputs:
                return "trace:\n" + "\n".join(str(p) for p in row.trace_inputs)
            if col == COL_COMMAND:
                return shlex.join(s.command)
            if col == COL_RUN:
                return str(s.path)
            return None
        if role == Qt.ItemDataRole.ForegroundRole and col == 0 and s.state in STATE_COLOUR:
            return QColor(STATE_COLOUR[s.state])
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (2, COL_EXIT):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == ROLE_ROW:
            return row
        return None

    @staticmethod
    def _text(row: RunRow, col: int) -> str:
        s = row.summary
        if col == 0:
            if s.state == "unknown" and (s.reason or "").startswith("damaged"):
                return "⚠ damaged"
            return STATE_TEXT.get(s.state, s.state)
        if col == 1:
            return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.created)) \
                if s.created else ""
        if col == 2:
            return fmt_seconds(s.duration_s) if s.duration_s is not None else ""
        if col == 3:
            return s.target
        if col == 4:
            return "—" if row.profiler == "none" else row.profiler
        if col == COL_COMMAND:
            return shlex.join(s.command)
        if col == COL_EXIT:
            return "" if s.exit_status is None else str(s.exit_status)
        return s.run_id


class RunsPanel(QWidget):
    """Past runs. Signals: ``open_requested(list)`` (one trace of one run),
    ``rerun_requested(RunSpec)``, ``compare_requested(list, list)``, ``refreshed``."""

    open_requested = Signal(list)
    rerun_requested = Signal(object)
    compare_requested = Signal(list, list)
    refreshed = Signal()

    def __init__(self, is_active: Callable[[str], bool] = lambda _id: False, parent=None):
        super().__init__(parent)
        from ..qt.tasks import TaskRunner

        self.is_active = is_active
        self.runner = TaskRunner(self, max_threads=1)
        self.model = RunsTableModel(self)
        self.view = QTableView(self)
        self.view.setModel(self.model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.view.setAlternatingRowColors(True)
        self.view.setWordWrap(False)
        self.view.verticalHeader().hide()
        self.view.verticalHeader().setDefaultSectionSize(
            self.view.fontMetrics().height() + 6)
        hh = self.view.horizontalHeader()
        for c in range(len(COLUMNS)):
            hh.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        hh.setSectionResizeMode(COL_COMMAND, QHeaderView.ResizeMode.Stretch)
        self.view.doubleClicked.connect(lambda _i: self.open_selected())
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._on_view_context_menu)
        self.view.selectionModel().selectionChanged.connect(self._update_actions)
        self.actions_: dict[str, QAction] = {}
        bar = QHBoxLayout()
        for key, text, slot, tip in (
                ("refresh", "Refresh", self.refresh, "Read the run folders again"),
                ("open", "Open", self.open_selected, "Open the selected run's trace"),
                ("rerun", "Re-run…", self.rerun_selected,
                 "Open the Run dialog filled in from the selected run"),
                ("folder", "Open folder", self.open_folder, "Show the run folder"),
                ("compare", "Compare", self.compare_selected, "Compare two selected runs"),
                ("delete", "Delete…", self.delete_selected, "Delete the selected runs' folders")):
            a = QAction(text, self)
            a.setToolTip(tip)
            a.triggered.connect(lambda _c=False, f=slot: f())
            self.actions_[key] = a
            b = QToolButton(self)
            b.setDefaultAction(a)
            b.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
            bar.addWidget(b)
        bar.addStretch(1)
        self.count_label = QLabel("", self)
        self.count_label.setEnabled(False)
        bar.addWidget(self.count_label)
        v = QVBoxLayout(self)
        v.setContentsMargins(4, 4, 4, 4)
        v.addLayout(bar)
        v.addWidget(self.view, 1)
        self._update_actions()

    # ---- data ------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the run folders in a worker; the selection is kept (by run id)."""
        h = self.runner.submit("runs", lambda _p, _c: read_rows())
        h.succeeded.connect(self._on_rows_read)
        h.failed.connect(lambda msg: self.count_label.setText(msg))

    def _on_rows_read(self, rows: list[RunRow]) -> None:
        keep = {r.run_id for r in self.selected_rows()}
        self.model.set_rows(rows)
        sel = self.view.selectionModel()
        for i, r in enumerate(rows):
            if r.run_id in keep:
                sel.select(self.model.index(i, 0), sel.SelectionFlag.Select
                           | sel.SelectionFlag.Rows)
        self.count_label.setText(f"{len(rows)} runs in {runs_dir()}" if rows else
                                 f"No runs yet in {runs_dir()} (Run > New run…)")
        self._update_actions()
        self.refreshed.emit()

    def selected_rows(self) -> list[RunRow]:
        rows = sorted({i.row() for i in self.view.selectionModel().selectedRows()})
        return [self.model.rows[r] for r in rows if r < len(self.model.rows)]

    def _update_actions(self, *_a) -> None:
        rows = self.selected_rows()
        one = len(rows) == 1
        a = self.actions_
        a["open"].setEnabled(bool(rows) and all(r.trace_inputs for r in rows))
        a["rerun"].setEnabled(one)
        a["folder"].setEnabled(one)
        busy = [r for r in rows if self.is_active(r.run_id)]
        a["delete"].setEnabled(bool(rows) and not busy)
        a["delete"].setToolTip("a run in progress cannot be deleted" if busy else
                               "Delete the selected runs' folders")
        ok, why = self._can_compare(rows)
        a["compare"].setEnabled(ok)
        a["compare"].setToolTip(why)

    def _can_compare(self, rows: list[RunRow]) -> tuple[bool, str]:
        if len(rows) != 2:
            return False, "select exactly two runs to compare them"
        if not all(r.trace_inputs for r in rows):
            return False, "both runs need a trace (a profiled run that finished)"
        return True, "Compare the two selected runs (the older one is A)"

    # ---- actions ---------------------------------------------------------------------
    def open_selected(self) -> None:
        for r in self.selected_rows():
            if r.trace_inputs:
                self.open_requested.emit(list(r.trace_inputs))

    def rerun_selected(self) -> None:
        rows = self.selected_rows()
        if len(rows) != 1:
            return
        try:
            spec = RunSpec.from_json(json.loads((rows[0].summary.path / "spec.json").read_text()))
        except (OSError, ValueError, TypeError, AttributeError, KeyError) as exc:
            QMessageBox.warning(self, "Re-run", f"Cannot read the run's spec.json: {exc}")
            return
        self.rerun_requested.emit(spec)

    def open_folder(self) -> None:
        for r in self.selected_rows()[:1]:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(r.summary.path)))

    def compare_selected(self) -> None:
        rows = self.selected_rows()
        ok, _why = self._can_compare(rows)
        if ok:
            a, b = sorted(rows, key=lambda r: (r.summary.created or 0.0, r.run_id))
            self.compare_requested.emit(list(a.trace_inputs), list(b.trace_inputs))

    def delete_selected(self) -> None:
        rows = [r for r in self.selected_rows() if not self.is_active(r.run_id)]
        if not rows:
            return
        names = "\n".join(r.run_id for r in rows[:8]) + ("\n…" if len(rows) > 8 else "")
        got = QMessageBox.question(
            self, "Delete runs",
            f"Delete {len(rows)} run folder(s) with their logs and traces?\n\n{names}",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No)
        if got != QMessageBox.StandardButton.Yes:
            return
        paths = [r.summary.path for r in rows]

        def work(_p, _c):
            for p in paths:
                shutil.rmtree(p)
            return len(paths)
        h = self.runner.submit("delete", work)
        h.finished.connect(self.refresh)
        h.failed.connect(lambda msg: QMessageBox.warning(self, "Delete runs", msg))

    def _on_view_context_menu(self, pos) -> None:
        menu = QMenu(self)
        for key in ("open", "rerun", "folder", "compare"):
            menu.addAction(self.actions_[key])
        menu.addSeparator()
        menu.addAction(self.actions_["delete"])
        menu.exec(self.view.viewport().mapToGlobal(pos))

    def shutdown(self) -> None:
        self.runner.shutdown()


class RunsDock(QDockWidget):
    """The window's Runs dock: the list of past runs, then one tab per run started
    in this session. Re-emits the panels' requests for the window."""

    open_requested = Signal(list)
    rerun_requested = Signal(object)
    compare_requested = Signal(list, list)

    def __init__(self, manager: RunManager, parent=None):
        super().__init__("Runs", parent)
        self.setObjectName("dock_runs")
        self.manager = manager
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        self.tabs.setTabsClosable(True)
        self.tabs.tabCloseRequested.connect(self._on_tabs_close_requested)
        self.runs_panel = RunsPanel(self._is_active, self.tabs)
        self.tabs.addTab(self.runs_panel, "History")
        self.tabs.tabBar().setTabButton(0, self.tabs.tabBar().ButtonPosition.RightSide, None)
        self.setWidget(self.tabs)
        self.panels: dict[str, RunPanel] = {}
        self.runs_panel.open_requested.connect(self.open_requested)
        self.runs_panel.rerun_requested.connect(self.rerun_requested)
        self.runs_panel.compare_requested.connect(self.compare_requested)
        manager.session_started.connect(self._on_manager_session_started)
        self._refresh_soon = QTimer(self)
        self._refresh_soon.setSingleShot(True)
        self._refresh_soon.setInterval(300)
        self._refresh_soon.timeout.connect(self.runs_panel.refresh)
        self.visibilityChanged.connect(self._on_visibility_changed)

    def _on_visibility_changed(self, visible: bool) -> None:
        if visible:                     # read the folders when someone looks
            self._refresh_soon.start()

    def _is_active(self, run_id: str) -> bool:
        return any(s.run_id == run_id and s.active for s in self.manager.sessions)

    def _on_manager_session_started(self, s: RunSession) -> None:
        panel = RunPanel(s, self.tabs)
        panel.open_requested.connect(self.open_requested)
        self.panels[s.run_id] = panel
        i = self.tabs.addTab(panel, "")
        self._set_tab_text(panel)
        self.tabs.setCurrentIndex(i)
        s.state_changed.connect(lambda *_a, p=panel: self._on_panel_state_changed(p))
        self.show()
        self.raise_()
        win = self.parent()
        if isinstance(win, QMainWindow) and not self.isFloating() and self.height() < 460:
            win.resizeDocks([self], [max(460, win.height() * 45 // 100)], Qt.Orientation.Vertical)
        self._refresh_soon.start()

    def _on_panel_state_changed(self, panel: RunPanel) -> None:
        self._set_tab_text(panel)
        self._refresh_soon.start()

    def _set_tab_text(self, panel: RunPanel) -> None:
        i = self.tabs.indexOf(panel)
        if i < 0:
            return
        icon = STATE_TEXT.get(panel.session.state, "").split(" ")[0]
        self.tabs.setTabText(i, f"{icon} {panel.title}")
        self.tabs.setTabToolTip(i, f"{panel.session.run_id}: {panel.session.state}")
        btn = self.tabs.tabBar().tabButton(i, self.tabs.tabBar().ButtonPosition.RightSide)
        if btn is not None:
            btn.setVisible(not panel.session.active)   # a running run's tab stays

    def _on_tabs_close_requested(self, i: int) -> None:
        panel = self.tabs.widget(i)
        if isinstance(panel, RunPanel) and not panel.session.active:
            self.tabs.removeTab(i)
            self.panels.pop(panel.session.run_id, None)
            panel.deleteLater()

    def shutdown(self) -> None:
        self._refresh_soon.stop()
        self.runs_panel.shutdown()


def ask_close_runs(parent: QWidget, active: list[RunSession]) -> str | None:
    """Runs are going and the window closes: 'cancel' (all), 'detach' (cancel the local
    ones, leave remote ones running on their targets) or None (do not close)."""
    local = [s for s in active if not s.remote]
    remote = [s for s in active if s.remote]
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("Runs in progress")
    lines = []
    if local:
        lines.append(f"{len(local)} local run(s) will be cancelled (the programs are ended).")
    if remote:
        lines.append(f"{len(remote)} remote run(s) can keep running on their targets: their "
                     "run folders there keep the output and the traces.")
    box.setText("Runs are still in progress.")
    box.setInformativeText("\n".join(lines))
    detach = box.addButton("Leave remote runs running", QMessageBox.ButtonRole.AcceptRole) \
        if remote else None
    cancel = box.addButton("Cancel all runs" if remote else "Cancel runs and close",
                           QMessageBox.ButtonRole.DestructiveRole)
    keep = box.addButton("Don't close", QMessageBox.ButtonRole.RejectRole)
    box.setDefaultButton(detach or keep)
    box.exec()
    got = box.clickedButton()
    if got is cancel:
        return "cancel"
    if detach is not None and got is detach:
        return "detach"
    return None
