"""The main window: a thin shell of tabs (one per trace), docks, menus and actions.

Every panel belongs to a tab (:class:`TraceTab`); the docks (one per registered
PanelSpec) hold one stacked page per tab and show the current tab's. Actions act on
the current tab's document; panels' intents arrive through ``commands``. Parts: the
action ids (:mod:`.actions`), the find bar, the exports, the run UI.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ..qt.commands import Commands
from ..qt.panels import panel_specs
from ..qt.tasks import TaskHandle, TaskRunner
from . import file_dialogs as fd
from . import ranks_ui, session
from .actions import raise_dock
from .compare_tab import CompareTab
from .docks import PanelDocks
from .empty_page import EmptyPage, sample_path
from .export import ExportController, pftrace_writer_available
from .find_bar import FindBar
from .menus import build_menus, build_toolbar
from .run_ui import RunUi, ask_close_runs
from .settings import Settings
from .trace_tab import Loader, TraceTab, default_loader

__all__ = ["EMPTY_TEXT", "MainWindow", "pftrace_writer_available", "sample_path"]

log = logging.getLogger(__name__)

EMPTY_TEXT = "Open a trace (File > Open or drop a file here)"


class MainWindow(QMainWindow):
    """Signals: ``loads_settled`` when no tab is loading any more."""

    loads_settled = Signal()

    def __init__(self, settings: Settings | None = None, loader: Loader | None = None,
                 persist: bool = True, parent=None):
        super().__init__(parent)
        self.setWindowTitle("hipscope")
        self.setObjectName("hipscope_main_window")
        self.setAcceptDrops(True)
        self.settings = settings or Settings()
        self.persist = persist
        self.theme_choice = self.settings.theme()
        self.theme_actions: dict[str, object] = {}
        self.loader = loader or default_loader
        self.runner = TaskRunner(self)
        self.last_error = ""
        self.action_by_id: dict[str, object] = {}
        self.commands = Commands(self)
        self.exports = ExportController(self)
        self.export_finished = self.exports.finished
        self._connect_commands()
        self._build_central()
        self._build_docks()
        build_toolbar(self)
        self._build_status()
        build_menus(self)
        self.run_ui = RunUi(self, self.panel_docks.first_bottom())
        self.run_manager, self.runs_dock = self.run_ui.manager, self.run_ui.dock
        self.resize(1500, 950)
        if persist:
            geo, state = self.settings.geometry(), self.settings.window_state()
            if geo is not None:
                self.restoreGeometry(geo)
            if state is not None:
                self.restoreState(state)
                self.panel_docks.defaults_pending = False     # the user's layout wins
        self._on_tabs_current_changed(-1)
        hints = QApplication.styleHints()
        if hasattr(hints, "colorSchemeChanged"):
            hints.colorSchemeChanged.connect(self._on_color_scheme_changed)

    def _connect_commands(self) -> None:
        c = self.commands
        c.open_requested.connect(self.open_run_trace)
        c.open_at_requested.connect(lambda paths, win: ranks_ui.open_at(self, paths, win))
        c.compare_requested.connect(self.compare_paths)
        c.compare_runs_requested.connect(self.compare_runs)
        c.run_requested.connect(self.new_run)
        c.export_table_requested.connect(lambda panel, stem: self.exports.table_csv(panel, stem))
        c.show_panel_requested.connect(lambda key: raise_dock(self, key))

    # ---- construction ------------------------------------------------------------------
    def _build_central(self) -> None:
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        self.tabs.setTabsClosable(True)
        self.tabs.setMovable(True)
        self.tabs.tabCloseRequested.connect(lambda i: self.close_tab(self.tabs.widget(i)))
        self.tabs.currentChanged.connect(self._on_tabs_current_changed)
        self.empty_page = EmptyPage(EMPTY_TEXT, self.settings.recent_files, sample_path(), self)
        self.empty_label = self.empty_page.label
        self.empty_page.open_requested.connect(self.open_paths)
        self.empty_page.open_dialog_requested.connect(lambda: fd.open_dialog(self))
        self._central_stack = QStackedWidget(self)
        self._central_stack.addWidget(self.empty_page)
        self._central_stack.addWidget(self.tabs)
        self.find_bar = FindBar(self)
        self.find_edit, self.find_regex = self.find_bar.edit, self.find_bar.regex
        self.find_bar.changed.connect(self._apply_find)
        self.find_bar.next_requested.connect(self.find_next)
        self.find_bar.prev_requested.connect(self.find_prev)
        central = QWidget(self)
        lay = QVBoxLayout(central)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self._central_stack, 1)
        lay.addWidget(self.find_bar)
        self.setCentralWidget(central)

    def _build_docks(self) -> None:
        """One dock per registered panel (app/docks.py)."""
        self.panel_specs = panel_specs()
        self.panel_docks = PanelDocks(self, self.panel_specs)
        self.docks, self._dock_stacks = self.panel_docks.docks, self.panel_docks.stacks

    def _build_status(self) -> None:
        sb = self.statusBar()
        self.format_label = QLabel(sb)
        self.kernels_label = QLabel(sb)
        self.range_label = QLabel(sb)
        sb.addPermanentWidget(self.range_label)
        sb.addPermanentWidget(self.kernels_label)
        sb.addPermanentWidget(self.format_label)

    def run_panel_action(self, key: str, action) -> object:
        tab = self.current_tab()
        if tab is None or tab.document.trace is None:
            return None
        return action.run(tab.panels[key], self.commands)

    # ---- tabs --------------------------------------------------------------------------
    def tab_list(self) -> list[TraceTab]:
        return [self.tabs.widget(i) for i in range(self.tabs.count())]

    def current_tab(self) -> TraceTab | None:
        w = self.tabs.currentWidget()
        return w if isinstance(w, TraceTab) else None

    def open_paths(self, paths) -> list[TraceTab]:
        """Open each path in its own tab (an already open one is brought to front)."""
        out = []
        for p in paths:
            p = Path(p)
            existing = next((t for t in self.tab_list()
                             if [x.resolve() for x in t.paths] == [p.resolve()]), None)
            if existing is not None and existing.state in ("loading", "loaded"):
                self.tabs.setCurrentWidget(existing)
                out.append(existing)
                continue
            out.append(self._add_tab([p]))
        return out

    def compare_paths(self, paths, preloaded: dict | None = None,
                      groups: list[list[Path]] | None = None) -> CompareTab:
        """Open runs as one comparison tab (``paths[0]`` is A); ``preloaded``: index ->
        Trace already held by another tab (not read again); ``groups``: per run, the
        files read as its one trace (default: its path alone)."""
        paths = [Path(p) for p in paths]
        if len(paths) < 2:
            raise ValueError("a comparison needs two or more traces")
        tab = CompareTab(paths, preloaded, self.tabs, groups=groups)
        self.add_tab(tab, "Comparison\n" + "\n".join(str(p) for g in tab.groups for p in g))
        tab.start_load(self.runner, self.loader)
        return tab

    def add_tab(self, tab: QWidget, tip: str) -> None:
        """Show a tab that has its panels inside (comparison, ranks) and follow its state."""
        tab.state_changed.connect(lambda s, t=tab: self._on_tab_state_changed(t, s))
        tab.close_requested.connect(lambda t=tab: self.close_tab(t))
        i = self.tabs.addTab(tab, tab.title)
        self.tabs.setTabToolTip(i, tip)
        self.tabs.setCurrentIndex(i)
        self._central_stack.setCurrentWidget(self.tabs)

    def _add_tab(self, paths: list[Path]) -> TraceTab:
        tab = TraceTab(paths, self.tabs)
        self.panel_docks.add_panels(tab.panels)
        tab.state_changed.connect(lambda s, t=tab: self._on_tab_state_changed(t, s))
        tab.close_requested.connect(lambda t=tab: self.close_tab(t))
        tab.range_text_changed.connect(lambda s, t=tab: self._on_tab_range_text_changed(t, s))
        tab.diagnostics_requested.connect(self.show_diagnostics)
        for spec in self.panel_specs:
            if spec.connect is not None:
                spec.connect(tab.panels[spec.key], self.commands)
        d = tab.document
        d.color_mode_changed.connect(lambda _m, t=tab: self._sync_toolbar(t))
        d.grouping_changed.connect(lambda _g, t=tab: self._sync_toolbar(t))
        i = self.tabs.addTab(tab, d.title)
        self.tabs.setTabToolTip(i, "\n".join(str(p) for p in paths))
        self.tabs.setCurrentIndex(i)
        self._central_stack.setCurrentWidget(self.tabs)
        tab.start_load(self.runner, self.loader)
        return tab

    def close_tab(self, tab: TraceTab | None) -> None:
        if tab is None or self.tabs.indexOf(tab) < 0:
            return
        session.save_tracks(self, tab)
        tab.dispose()
        for view in tab.panels.values():
            view.setParent(None)
            view.deleteLater()
        self.tabs.removeTab(self.tabs.indexOf(tab))
        tab.deleteLater()
        if self.tabs.count() == 0:
            self.empty_page.refresh()
            self._central_stack.setCurrentWidget(self.empty_page)
        self._check_settled()

    def show_diagnostics(self) -> None:
        """Show and raise the Diagnostics dock (the banner's "Details")."""
        dock = self.docks.get("diagnostics")
        if dock is not None:
            dock.show()
            dock.raise_()

    def close_current_tab(self) -> None:
        self.close_tab(self.current_tab())

    def reload_current(self) -> None:
        tab = self.current_tab()
        if tab is not None:
            tab.start_load(self.runner, self.loader)

    def is_loading(self) -> bool:
        return any(t.state == "loading" for t in self.tab_list())

    def _on_tab_state_changed(self, tab: TraceTab, state: str) -> None:
        i = self.tabs.indexOf(tab)
        if state == "loaded":
            if self.persist:
                for p in tab.paths:
                    self.settings.add_recent(p)
                session.restore_tracks(self, tab)
            if i >= 0:
                self.tabs.setTabText(i, _title(tab))
        elif state == "failed":
            self.last_error = tab.error
            if i >= 0:
                self.tabs.setTabText(i, f"⚠ {_title(tab)}")
            self.statusBar().showMessage(tab.error, 15000)
        elif state == "cancelled":
            self.statusBar().showMessage(f"Cancelled loading {_title(tab)}.", 5000)
            QTimer.singleShot(0, lambda: self.close_tab(tab))
        if tab is self.tabs.currentWidget():
            self._on_tabs_current_changed(self.tabs.currentIndex())
        self._check_settled()

    def _check_settled(self) -> None:
        if not self.is_loading():
            self.loads_settled.emit()

    def _on_tabs_current_changed(self, _index: int) -> None:
        comparing = self.tabs.count() > 0 and not isinstance(self.tabs.currentWidget(), TraceTab)
        self.panel_docks.set_shown(not comparing)
        tab = self.current_tab()
        state = "comparing" if comparing else tab.state if tab is not None else "none"
        self.panel_docks.show_tab(tab.panels if tab is not None else None, state)
        fmt, kernels = tab.status_texts() if tab is not None else ("", "")
        self.format_label.setText(fmt)
        self.kernels_label.setText(kernels)
        self.range_label.setText(tab.range_text if tab is not None else "")
        title = "hipscope" if tab is None else f"{tab.document.title} — hipscope"
        if comparing:
            title = f"{self.tabs.currentWidget().title} — hipscope"
        self.setWindowTitle(title)
        if tab is not None:
            self._sync_toolbar(tab)
            vs = tab.document.view_state
            self.find_bar.show_query(vs.find_text, vs.find_regex)
        self.find_bar.follow(tab.timeline_api if tab is not None else None)
        self.update_actions()

    def _on_tab_range_text_changed(self, tab: TraceTab, text: str) -> None:
        if tab is self.current_tab():
            self.range_label.setText(text)

    def _sync_toolbar(self, tab: TraceTab) -> None:
        if tab is not self.current_tab():
            return
        vs = tab.document.view_state
        self.color_combo.setCurrentIndex(max(0, self.color_combo.findData(vs.color_mode)))
        self.group_combo.setCurrentIndex(max(0, self.group_combo.findData(vs.grouping)))

    def update_actions(self) -> None:
        tab = self.current_tab()
        loaded = tab is not None and tab.state == "loaded"
        timeline = loaded and tab.has_timeline
        for a in (self.export_png_action, self.export_svg_action):
            a.setEnabled(timeline)
            a.setToolTip("" if timeline else "needs a loaded trace and the timeline view")
        have_pf = pftrace_writer_available()
        self.export_pftrace_action.setEnabled(loaded and have_pf)
        self.export_pftrace_action.setToolTip(
            "" if have_pf else "the Perfetto writer (hipscope.export) is not installed")
        for a in (*self.panel_actions, self.fit_action, self.reload_action):
            a.setEnabled(loaded or (a is self.reload_action and tab is not None))
        self.close_tab_action.setEnabled(tab is not None)
        for w in (self.color_combo, self.group_combo):
            w.setEnabled(loaded)

    # ---- view actions ------------------------------------------------------------------
    def on_color_combo_activated(self, _i: int) -> None:
        tab = self.current_tab()
        if tab is not None:
            tab.document.view_state.set_color_mode(self.color_combo.currentData())

    def on_group_combo_activated(self, _i: int) -> None:
        tab = self.current_tab()
        if tab is not None:
            tab.document.view_state.set_grouping(self.group_combo.currentData())

    def _timeline(self):
        tab = self.current_tab()
        return tab.timeline_api if tab is not None else None

    def fit(self) -> None:
        if (tl := self._timeline()) is not None:
            tl.fit()

    def show_find_bar(self) -> None:
        self.find_bar.open()

    def _apply_find(self) -> None:
        tab = self.current_tab()
        if tab is not None:
            tab.document.view_state.set_find(self.find_edit.text(), self.find_regex.isChecked())

    def find_next(self) -> None:
        self._apply_find()
        if (tl := self._timeline()) is not None:
            tl.find_next()

    def find_prev(self) -> None:
        self._apply_find()
        if (tl := self._timeline()) is not None:
            tl.find_prev()

    # ---- files (dialogs: app/file_dialogs.py) ----------------------------------------
    def dragEnterEvent(self, event) -> None:  # noqa: N802 (Qt name)
        if _local_paths(event.mimeData()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event) -> None:  # noqa: N802
        paths = _local_paths(event.mimeData())
        if not paths:
            return
        event.acceptProposedAction()
        if not (paths := ranks_ui.offer_ranks(self, paths)):   # rank folders: as ranks?
            return
        target = self._drop_target(event.position().toPoint())
        open_now = {tuple(x.resolve() for x in t.paths) for t in self.tab_list()}
        if target is None or any((p.resolve(),) in open_now for p in paths):
            self.open_paths(paths)          # nothing to compare with, or already open
            return
        choice = self.ask_drop_action(target, paths, event.position().toPoint())
        if choice == "compare":
            self.compare_with(target, paths)
        elif choice == "open":
            self.open_paths(paths)

    def _drop_target(self, pos) -> TraceTab | None:
        """The loaded trace tab a drop lands on: the tab under the cursor on the tab
        bar, else the current tab."""
        bar = self.tabs.tabBar()
        i = bar.tabAt(bar.mapFrom(self, pos))
        w = self.tabs.widget(i) if i >= 0 else self.tabs.currentWidget()
        return w if isinstance(w, TraceTab) and w.state == "loaded" else None

    def ask_drop_action(self, target: TraceTab, paths: list[Path], pos) -> str | None:
        """'open', 'compare' or None (a menu at the drop point)."""
        menu = QMenu(self)
        names = ", ".join(p.name for p in paths)
        open_a = menu.addAction(f"Open {names} in a new tab")
        cmp_a = menu.addAction(f"Compare with {target.document.title}")
        menu.addSeparator()
        menu.addAction("Cancel")
        got = menu.exec(self.mapToGlobal(pos))
        return "compare" if got is cmp_a else "open" if got is open_a else None

    def compare_with(self, tab: TraceTab, paths: list[Path]) -> CompareTab:
        """Compare a loaded tab's trace (A, not read again) with ``paths``."""
        return self.compare_paths([tab.paths[0], *paths], {0: tab.document.trace})

    # ---- runs (Run menu, Runs dock: app/run_ui.py) ------------------------------------
    def new_run(self, spec=None) -> None:
        self.run_ui.new_run(spec)

    def start_run(self, spec):
        return self.run_ui.start_run(spec)

    def show_runs_panel(self) -> None:
        self.run_ui.show_runs_panel()

    def open_run_trace(self, paths) -> TraceTab:
        """Open the files of one run (one per process or rank) as one trace, one tab."""
        paths = [Path(p) for p in paths]
        want = [p.resolve() for p in paths]
        for t in self.tab_list():
            if isinstance(t, TraceTab) and [x.resolve() for x in t.paths] == want \
                    and t.state in ("loading", "loaded"):
                self.tabs.setCurrentWidget(t)
                return t
        return self._add_tab(paths)

    def compare_runs(self, paths_a, paths_b) -> CompareTab:
        """Compare two runs (each one trace of one or more files)."""
        if len(paths_a) == 1 and len(paths_b) == 1:
            return self.compare_paths([paths_a[0], paths_b[0]])
        return self.open_comparison(paths_a, paths_b)

    def open_comparison(self, paths_a, paths_b) -> CompareTab:
        """A comparison tab of two runs whose traces span several files each (one per
        process or rank): each run's files are read as one trace."""
        groups = [[Path(p) for p in paths_a], [Path(p) for p in paths_b]]
        return self.compare_paths([groups[0][0], groups[1][0]], groups=groups)

    def ask_close_runs(self, active) -> str | None:
        return ask_close_runs(self, active)

    # ---- export (app/export.py) ----------------------------------------------------------
    def export_timeline(self, kind: str, path: Path | None = None) -> bool:
        return self.exports.timeline(self.current_tab(), kind, path)

    def export_pftrace(self, path: Path | None = None) -> TaskHandle | None:
        return self.exports.pftrace(self.current_tab(), path)

    def export_table_csv(self, key: str, path: Path | None = None) -> TaskHandle | None:
        """Write a table panel (``key``: its PanelSpec key) as CSV in a worker."""
        tab = self.current_tab()
        if tab is None or tab.document.trace is None:
            return None
        return self.exports.table_csv(tab.panels[key], key, path)

    # ---- theme and session (app/session.py) ---------------------------------------------
    def set_theme(self, choice: str) -> None:
        """View > Theme: ``system``, ``light`` or ``dark`` (kept for the next start)."""
        session.set_theme(self, choice)

    def _on_color_scheme_changed(self, _scheme) -> None:
        if self.theme_choice == "system":
            session.set_theme(self, "system")

    def restore_session(self) -> list:
        """Reopen the last session's trace tabs (when that setting is on)."""
        return session.restore(self)

    # ---- lifecycle -----------------------------------------------------------------------
    def about(self) -> None:
        from .. import __version__

        QMessageBox.about(self, "About hipscope",
                          f"hipscope {__version__}\nGPU trace viewer for ROCm and CUDA.")

    def closeEvent(self, event) -> None:  # noqa: N802
        if not self.run_ui.stop_runs(self.ask_close_runs):
            event.ignore()
            return
        self.panel_docks.set_shown(True)        # save the layout the user chose
        if self.persist:
            self.settings.save_window(self.saveGeometry(), self.saveState())
            self.settings.save_session(session.open_tabs(self))
        for tab in self.tab_list():
            session.save_tracks(self, tab)
            tab.dispose()
        self.runner.shutdown()
        super().closeEvent(event)


def _title(tab) -> str:
    return tab.document.title if isinstance(tab, TraceTab) else tab.title


def _local_paths(mime) -> list[Path]:
    if not mime.hasUrls():
        return []
    return [Path(u.toLocalFile()) for u in mime.urls() if u.isLocalFile()]
