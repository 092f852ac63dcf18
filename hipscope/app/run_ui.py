"""The window's run UI: the Run menu, the Runs dock and the RunManager behind them."""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QDialog, QMenu

from ..qt.runs import RunManager
from ..views.launch_dialog import LaunchDialog
from ..views.runs_panel import RunsDock, ask_close_runs
from .actions import ActionId, make_action

log = logging.getLogger(__name__)


class RunUi(QObject):
    """Starts runs (the Run dialog), shows them (Runs dock) and stops them on close.
    The dock's requests go to the window's ``commands``."""

    def __init__(self, window, tabify_with):
        super().__init__(window)
        self.window = window
        self.manager = RunManager(window)
        self.manager.trace_ready.connect(window.commands.open_trace)
        self.dock = RunsDock(self.manager, window)
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.dock)
        if tabify_with is not None:
            window.tabifyDockWidget(tabify_with, self.dock)
            tabify_with.raise_()
        self.dock.open_requested.connect(window.commands.open_trace)
        self.dock.rerun_requested.connect(window.commands.new_run)
        self.dock.compare_requested.connect(window.commands.compare_runs)
        mb = window.menuBar()
        m = QMenu("&Run", window)
        mb.insertMenu(mb.actions()[-1], m)          # before Help
        window.action_by_id[ActionId.NEW_RUN] = make_action(window, m, "&New Run…",
                                                            self.new_run, "Ctrl+R")
        window.action_by_id[ActionId.RUNS_PANEL] = make_action(window, m, "Runs &Panel",
                                                               self.show_runs_panel)

    def new_run(self, spec=None) -> None:
        """The Run dialog (pre-filled from ``spec``, else the last run); starts the run."""
        dlg = LaunchDialog(self.window.settings, spec, self.window)
        if dlg.exec() == QDialog.DialogCode.Accepted:
            self.start_run(dlg.result_spec)

    def start_run(self, spec):
        try:
            return self.manager.start(spec)
        except (ValueError, OSError) as exc:
            log.info("run not started: %s", exc)
            self.window.statusBar().showMessage(f"The run could not start: {exc}", 15000)
            return None

    def show_runs_panel(self) -> None:
        self.dock.show()
        self.dock.raise_()
        self.dock.tabs.setCurrentIndex(0)
        self.dock.runs_panel.refresh()

    def stop_runs(self, ask) -> bool:
        """On close: local runs are cancelled; remote ones may be left running
        (``ask(active)``: 'cancel', 'detach' or None to keep the window open)."""
        active = self.manager.active()
        choice = ask(active) if active else "cancel"
        if choice is None:
            return False
        self.manager.shutdown(detach_remote=choice == "detach")
        self.dock.shutdown()
        return True


__all__ = ["RunUi", "ask_close_runs"]
