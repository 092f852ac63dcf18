"""The main window: a thin shell of tabs (one per trace), docks, menus and actions.

Every panel belongs to a tab (:class:`TraceTab`); the docks hold one stacked page per
tab and show the current tab's. Actions act on the current tab's document.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMenu,
    QMessageBox,
    QStackedWidget,
    QTabWidget,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..model.view_state import COLOR_MODES, GROUPINGS
from .compare_tab import CompareTab
from .settings import Settings
from ..qt.tasks import TaskHandle, TaskRunner
from .trace_tab import Loader, TraceTab, default_loader

log = logging.getLogger(__name__)

EMPTY_TEXT = "Open a trace (File > Open or drop a file here)"
COLOR_LABELS = {"name": "Name", "duration": "Duration", "queue_delay": "Queue delay"}
GROUP_LABELS = {"queue": "Queue", "stream": "Stream"}


def pftrace_writer_available() -> bool:
    try:
        return importlib.util.find_spec("hipscope.export.pftrace_writer") is not None
    except ModuleNotFoundError:
        return False


class MainWindow(QMainWindow):
    """Signals: ``loads_settled`` when no tab is loading any more."""

    loads_settled = Signal()
    export_finished = Signal(str)        # path written, or "" on failure

    def __init__(self, settings: Settings | None = None, loader: Loader | None = None,
                 persist: bool = True, parent=None):
        super().__init__(parent)
        self.setWindowTitle("hipscope")
        self.setObjectName("hipscope_main_window")
        self.setAcceptDrops(True)
        self.settings = settings or Settings()
        self.persist = persist
        self.loader = loader or default_loader
        self.runner = TaskRunner(self)
        self.last_error = ""
        self._build_central()
        self._build_docks()
        self._build_toolbar()
        self._build_status()
        self._build_menus()
        self._build_run_ui()
        self.resize(1500, 950)
        if persist:
            geo, state = self.settings.geometry(), self.settings.window_state()
            if geo is not None:
                self.restoreGeometry(geo)
            if state is not None:
                self.restoreState(state)
        self._on_tabs_current_changed(-1)

    # ---- construction ------------------------------------------------------------------
    def _build_central(self) -> None:
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        self.tabs.setTabsClosable(True)
        self.tabs.setMovable(True)
        self.tabs.tabCloseRequested.connect(lambda i: self.close_tab(self.tabs.widget(i)))
        self.tabs.currentChanged.connect(self._on_tabs_current_changed)
        self.empty_label = QLabel(EMPTY_TEXT, self)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        f = self.empty_label.font()
        f.setPointSizeF(f.pointSizeF() * 1.4)
        self.empty_label.setFont(f)
        self.empty_label.setEnabled(False)
        self._central_stack = QStackedWidget(self)
        self._central_stack.addWidget(self.empty_label)
        self._central_stack.addWidget(self.tabs)
        self.find_bar = self._build_find_bar()
        central = QWidget(self)
        lay = QVBoxLayout(central)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self._central_stack, 1)
        lay.addWidget(self.find_bar)
        self.setCentralWidget(central)

    def _build_find_bar(self) -> QWidget:
        bar = QWidget(self)
        h = QHBoxLayout(bar)
        h.setContentsMargins(6, 3, 6, 3)
        h.addWidget(QLabel("Find:", bar))
        self.find_edit = QLineEdit(bar)
        self.find_edit.setPlaceholderText("kernel or event name")
        self.find_edit.setClearButtonEnabled(True)
        self.find_regex = QCheckBox("Regex", bar)
        prev_b, next_b, close_b = QToolButton(bar), QToolButton(bar), QToolButton(bar)
        prev_b.setText("◀")
        prev_b.setToolTip("Previous match (Shift+F3)")
        next_b.setText("▶")
        next_b.setToolTip("Next match (F3)")
        close_b.setText("✕")
        close_b.setToolTip("Close the find bar (Esc)")
        prev_b.clicked.connect(self.find_prev)
        next_b.clicked.connect(self.find_next)
        close_b.clicked.connect(lambda: self.find_bar.hide())
        self.find_edit.textChanged.connect(self._apply_find)
        self.find_edit.returnPressed.connect(self.find_next)
        self.find_regex.toggled.connect(self._apply_find)
        for w in (self.find_edit, self.find_regex, prev_b, next_b, close_b):
            h.addWidget(w)
        h.setStretch(1, 1)
        esc = QAction(bar)
        esc.setShortcut(QKeySequence(Qt.Key.Key_Escape))
        esc.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        esc.triggered.connect(bar.hide)
        bar.addAction(esc)
        bar.hide()
        return bar

    def _build_docks(self) -> None:
        self.docks: dict[str, QDockWidget] = {}
        self._dock_stacks: dict[str, QStackedWidget] = {}
        bottom = Qt.DockWidgetArea.BottomDockWidgetArea
        spec = (("details", "Details", Qt.DockWidgetArea.RightDockWidgetArea),
                ("summary", "Kernel summary", bottom),
                ("kernels", "All kernels", bottom),
                ("queue_delay", "Queue delay", bottom),
                ("counters", "Counters", bottom),
                ("tuner", "Tuner", bottom))
        for key, title, area in spec:
            dock = QDockWidget(title, self)
            dock.setObjectName(f"dock_{key}")
            stack = QStackedWidget(dock)
            empty = QLabel("No trace open.", stack)
            empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
            empty.setEnabled(False)
            stack.addWidget(empty)
            dock.setWidget(stack)
            self.addDockWidget(area, dock)
            self.docks[key], self._dock_stacks[key] = dock, stack
        for key in ("kernels", "queue_delay", "counters", "tuner"):
            self.tabifyDockWidget(self.docks["summary"], self.docks[key])
        self.docks["summary"].raise_()
        self.resizeDocks([self.docks["details"]], [380], Qt.Orientation.Horizontal)
        self.resizeDocks([self.docks["summary"]], [300], Qt.Orientation.Vertical)

    def _build_toolbar(self) -> None:
        tb = QToolBar("View", self)
        tb.setObjectName("toolbar_view")
        tb.setMovable(False)
        tb.setIconSize(QSize(16, 16))
        self.addToolBar(tb)
        self.fit_action = QAction("Fit", self)
        self.fit_action.setShortcut(QKeySequence("F"))
        self.fit_action.setToolTip("Show the whole trace (F)")
        self.fit_action.triggered.connect(self.fit)
        tb.addAction(self.fit_action)
        tb.addSeparator()
        tb.addWidget(QLabel(" Colour by ", tb))
        self.color_combo = QComboBox(tb)
        for m in COLOR_MODES:
            self.color_combo.addItem(COLOR_LABELS.get(m, m), m)
        self.color_combo.activated.connect(self._on_color_combo_activated)
        tb.addWidget(self.color_combo)
        tb.addWidget(QLabel("  Group by ", tb))
        self.group_combo = QComboBox(tb)
        for g in GROUPINGS:
            self.group_combo.addItem(GROUP_LABELS.get(g, g), g)
        self.group_combo.activated.connect(self._on_group_combo_activated)
        tb.addWidget(self.group_combo)
        self.view_toolbar = tb

    def _build_status(self) -> None:
        sb = self.statusBar()
        self.format_label = QLabel(sb)
        self.kernels_label = QLabel(sb)
        self.range_label = QLabel(sb)
        sb.addPermanentWidget(self.range_label)
        sb.addPermanentWidget(self.kernels_label)
        sb.addPermanentWidget(self.format_label)

    def _build_menus(self) -> None:
        mb = self.menuBar()
        m = mb.addMenu("&File")
        self.open_action = self._action(m, "&Open…", self.open_dialog, QKeySequence.StandardKey.Open)
        self._action(m, "Open &Folder…", self.open_folder_dialog, "Ctrl+Shift+O")
        self.compare_action = self._action(m, "Co&mpare…", self.compare_dialog, "Ctrl+Shift+C")
        self.compare_action.setToolTip("Open two or more runs side by side (the first is A)")
        self._action(m, "Compare Fo&lders…", self.compare_folders_dialog)
        self.recent_menu = m.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self.reload_action = self._action(m, "&Reload", self.reload_current, "F5")
        self.close_tab_action = self._action(m, "&Close Tab", self.close_current_tab,
                                             QKeySequence.StandardKey.Close)
        m.addSeparator()
        ex = m.addMenu("&Export")
        ex.setToolTipsVisible(True)
        self.export_menu = ex
        self.export_png_action = self._action(ex, "Timeline as &PNG…",
                                              lambda: self.export_timeline("png"))
        self.export_svg_action = self._action(ex, "Timeline as &SVG…",
                                              lambda: self.export_timeline("svg"))
        self.export_pftrace_action = self._action(ex, "Trace as P&erfetto (.pftrace)…",
                                                  self.export_pftrace)
        ex.addSeparator()
        self.export_summary_action = self._action(ex, "Kernel &summary as CSV…",
                                                  lambda: self.export_table_csv("summary"))
        self.export_kernels_action = self._action(ex, "All &kernels as CSV…",
                                                  lambda: self.export_table_csv("kernels"))
        ex.aboutToShow.connect(self._update_actions)
        m.addSeparator()
        self._action(m, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        v = mb.addMenu("&View")
        v.addAction(self.fit_action)
        self.find_action = self._action(v, "&Find…", self.show_find_bar, QKeySequence.StandardKey.Find)
        self.find_next_action = self._action(v, "Find &Next", self.find_next, "F3")
        self.find_prev_action = self._action(v, "Find &Previous", self.find_prev, "Shift+F3")
        v.addSeparator()
        for dock in self.docks.values():
            v.addAction(dock.toggleViewAction())
        h = mb.addMenu("&Help")
        self._action(h, "&About hipscope", self._about)

    def _action(self, menu, text, slot, shortcut=None) -> QAction:
        a = QAction(text, self)
        if shortcut is not None:
            a.setShortcut(QKeySequence(shortcut) if isinstance(shortcut, str) else shortcut)
        a.triggered.connect(lambda _checked=False: slot())
        menu.addAction(a)
        self.addAction(a)       # shortcuts work while the menu bar is hidden (offscreen)
        return a

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

    def compare_paths(self, paths, preloaded: dict | None = None) -> CompareTab:
        """Open runs as one comparison tab (``paths[0]`` is A); ``preloaded``: index ->
        Trace already held by another tab (not read again)."""
        paths = [Path(p) for p in paths]
        if len(paths) < 2:
            raise ValueError("a comparison needs two or more traces")
        tab = CompareTab(paths, preloaded, self.tabs)
        tab.state_changed.connect(lambda s, t=tab: self._on_tab_state_changed(t, s))
        tab.close_requested.connect(lambda t=tab: self.close_tab(t))
        i = self.tabs.addTab(tab, tab.title)
        self.tabs.setTabToolTip(i, "Comparison\n" + "\n".join(str(p) for p in paths))
        self.tabs.setCurrentIndex(i)
        self._central_stack.setCurrentWidget(self.tabs)
        tab.start_load(self.runner, self.loader)
        return tab

    def _add_tab(self, paths: list[Path]) -> TraceTab:
        tab = TraceTab(paths, self.tabs)
        for key, view in tab.panels.items():
            self._dock_stacks[key].addWidget(view)
        tab.state_changed.connect(lambda s, t=tab: self._on_tab_state_changed(t, s))
        tab.close_requested.connect(lambda t=tab: self.close_tab(t))
        tab.range_text_changed.connect(lambda s, t=tab: self._on_tab_range_text_changed(t, s))
        tuner = tab.panels["tuner"]
        tuner.compare_requested.connect(lambda paths: self.compare_paths(paths))
        tuner.apply_requested.connect(lambda spec: self.new_run(spec))
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
        tab.dispose()
        for view in tab.panels.values():
            view.setParent(None)
            view.deleteLater()
        self.tabs.removeTab(self.tabs.indexOf(tab))
        tab.deleteLater()
        if self.tabs.count() == 0:
            self._central_stack.setCurrentWidget(self.empty_label)
        self._check_settled()

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
        comparing = isinstance(self.tabs.currentWidget(), CompareTab)
        self._show_docks(not comparing)
        tab = self.current_tab()
        state = tab.state if tab is not None else "none"
        empty_text = {"none": "No trace open.", "loading": "Loading…",
                      "failed": "The trace could not be opened."}.get(state, "")
        if comparing:
            empty_text = "A comparison tab shows its tables inside the tab."
        for key, stack in self._dock_stacks.items():
            if state == "loaded":
                stack.setCurrentWidget(tab.panels[key])
            else:
                stack.widget(0).setText(empty_text)
                stack.setCurrentIndex(0)
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
            self.find_edit.blockSignals(True)
            self.find_regex.blockSignals(True)
            self.find_edit.setText(vs.find_text)
            self.find_regex.setChecked(vs.find_regex)
            self.find_edit.blockSignals(False)
            self.find_regex.blockSignals(False)
        self._update_actions()

    def _show_docks(self, show: bool) -> None:
        """A comparison tab has its panels inside: the docks step aside while it is
        current and come back as they were."""
        hidden = getattr(self, "_docks_hidden", None)
        if not show and hidden is None:
            self._docks_hidden = [d for d in self.docks.values() if d.isVisible()]
            for d in self._docks_hidden:
                d.hide()
        elif show and hidden is not None:
            self._docks_hidden = None
            for d in hidden:
                d.show()

    def _on_tab_range_text_changed(self, tab: TraceTab, text: str) -> None:
        if tab is self.current_tab():
            self.range_label.setText(text)

    def _sync_toolbar(self, tab: TraceTab) -> None:
        if tab is not self.current_tab():
            return
        vs = tab.document.view_state
        self.color_combo.setCurrentIndex(max(0, self.color_combo.findData(vs.color_mode)))
        self.group_combo.setCurrentIndex(max(0, self.group_combo.findData(vs.grouping)))

    def _update_actions(self) -> None:
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
        for a in (self.export_summary_action, self.export_kernels_action, self.fit_action,
                  self.reload_action):
            a.setEnabled(loaded or (a is self.reload_action and tab is not None))
        self.close_tab_action.setEnabled(tab is not None)
        for w in (self.color_combo, self.group_combo):
            w.setEnabled(loaded)

    # ---- view actions ------------------------------------------------------------------
    def _on_color_combo_activated(self, _i: int) -> None:
        tab = self.current_tab()
        if tab is not None:
            tab.document.view_state.set_color_mode(self.color_combo.currentData())

    def _on_group_combo_activated(self, _i: int) -> None:
        tab = self.current_tab()
        if tab is not None:
            tab.document.view_state.set_grouping(self.group_combo.currentData())

    def fit(self) -> None:
        tab = self.current_tab()
        if tab is not None and hasattr(tab.timeline, "fit"):
            tab.timeline.fit()

    def show_find_bar(self) -> None:
        self.find_bar.show()
        self.find_edit.setFocus()
        self.find_edit.selectAll()

    def _apply_find(self) -> None:
        tab = self.current_tab()
        if tab is not None:
            tab.document.view_state.set_find(self.find_edit.text(), self.find_regex.isChecked())

    def find_next(self) -> None:
        self._apply_find()
        tab = self.current_tab()
        if tab is not None and hasattr(tab.timeline, "find_next"):
            tab.timeline.find_next()

    def find_prev(self) -> None:
        self._apply_find()
        tab = self.current_tab()
        if tab is not None and hasattr(tab.timeline, "find_prev"):
            tab.timeline.find_prev()

    # ---- files -------------------------------------------------------------------------
    def open_dialog(self) -> None:
        from ..parsers import file_filters

        paths, _ = QFileDialog.getOpenFileNames(self, "Open trace", self.settings.last_dir(),
                                                ";;".join(file_filters()))
        if paths:
            self.settings.set_last_dir(Path(paths[0]).parent)
            self.open_paths([Path(p) for p in paths])

    def open_folder_dialog(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Open trace folder",
                                                self.settings.last_dir())
        if path:
            self.settings.set_last_dir(Path(path).parent)
            self.open_paths([Path(path)])

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        recent = self.settings.recent_files()
        for p in recent:
            a = self.recent_menu.addAction(str(p))
            a.setEnabled(p.exists())
            a.triggered.connect(lambda _c=False, p=p: self.open_paths([p]))
        if not recent:
            self.recent_menu.addAction("(none)").setEnabled(False)
        self.recent_menu.addSeparator()
        self.recent_menu.addAction("Clear list", self.settings.clear_recent)

    def compare_dialog(self) -> None:
        from ..parsers import file_filters

        paths, _ = QFileDialog.getOpenFileNames(
            self, "Compare traces: pick two or more (the first is A)",
            self.settings.last_dir(), ";;".join(file_filters()))
        if len(paths) == 1:
            more, _ = QFileDialog.getOpenFileNames(
                self, f"Compare {Path(paths[0]).name} with…", str(Path(paths[0]).parent),
                ";;".join(file_filters()))
            paths += more
        if len(paths) >= 2:
            self.settings.set_last_dir(Path(paths[0]).parent)
            self.compare_paths([Path(p) for p in paths])

    def compare_folders_dialog(self) -> None:
        a = QFileDialog.getExistingDirectory(self, "Compare: run A (folder)",
                                             self.settings.last_dir())
        b = a and QFileDialog.getExistingDirectory(self, f"Compare {Path(a).name} with (folder)",
                                                   str(Path(a).parent))
        if a and b:
            self.settings.set_last_dir(Path(a).parent)
            self.compare_paths([Path(a), Path(b)])

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

    # ---- runs (Run menu, Runs dock) -----------------------------------------------------
    def _build_run_ui(self) -> None:
        from ..qt.runs import RunManager
        from ..views.runs_panel import RunsDock

        self.run_manager = RunManager(self)
        self.run_manager.trace_ready.connect(self.open_run_trace)
        self.runs_dock = RunsDock(self.run_manager, self)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.runs_dock)
        self.tabifyDockWidget(self.docks["summary"], self.runs_dock)
        self.docks["summary"].raise_()
        self.runs_dock.open_requested.connect(self.open_run_trace)
        self.runs_dock.rerun_requested.connect(self.new_run)
        self.runs_dock.compare_requested.connect(self.compare_runs)
        self.runs_dock.runs_panel.compare_multi = hasattr(self, "open_comparison")
        mb = self.menuBar()
        m = QMenu("&Run", self)
        mb.insertMenu(mb.actions()[-1], m)          # before Help
        self.new_run_action = self._action(m, "&New Run…", self.new_run, "Ctrl+R")
        self.runs_panel_action = self._action(m, "Runs &Panel", self.show_runs_panel)

    def new_run(self, spec=None) -> None:
        """The Run dialog (pre-filled from ``spec``, else the last run); starts the run."""
        from PySide6.QtWidgets import QDialog

        from ..views.launch_dialog import LaunchDialog

        dlg = LaunchDialog(self.settings, spec, self)
        if dlg.exec() == QDialog.DialogCode.Accepted:
            self.start_run(dlg.result_spec)

    def start_run(self, spec):
        try:
            return self.run_manager.start(spec)
        except (ValueError, OSError) as exc:
            log.info("run not started: %s", exc)
            self.statusBar().showMessage(f"The run could not start: {exc}", 15000)
            return None

    def show_runs_panel(self) -> None:
        self.runs_dock.show()
        self.runs_dock.raise_()
        self.runs_dock.tabs.setCurrentIndex(0)
        self.runs_dock.runs_panel.refresh()

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

    def compare_runs(self, paths_a, paths_b):
        """Compare two runs (each one trace of one or more files)."""
        if hasattr(self, "open_comparison"):
            return self.open_comparison(paths_a, paths_b)
        if len(paths_a) == 1 and len(paths_b) == 1:
            return self.compare_paths([paths_a[0], paths_b[0]])
        return [self.open_run_trace(paths_a), self.open_run_trace(paths_b)]

    def ask_close_runs(self, active) -> str | None:
        from ..views.runs_panel import ask_close_runs

        return ask_close_runs(self, active)

    def _stop_runs(self) -> bool:
        """On close: local runs are cancelled; remote ones may be left running."""
        active = self.run_manager.active()
        choice = self.ask_close_runs(active) if active else "cancel"
        if choice is None:
            return False
        self.run_manager.shutdown(detach_remote=choice == "detach")
        self.runs_dock.shutdown()
        return True

    # ---- export --------------------------------------------------------------------------
    def _ask_save(self, title: str, suggested: str, filt: str) -> Path | None:
        start = str(Path(self.settings.last_dir() or ".") / suggested)
        path, _ = QFileDialog.getSaveFileName(self, title, start, filt)
        return Path(path) if path else None

    def export_timeline(self, kind: str, path: Path | None = None) -> bool:
        tab = self.current_tab()
        if tab is None or not tab.has_timeline:
            return False
        stem = Path(tab.document.title).name.split(".")[0] or "timeline"
        path = path or self._ask_save(f"Export timeline as {kind.upper()}", f"{stem}.{kind}",
                                      f"{kind.upper()} image (*.{kind})")
        if path is None:
            return False
        try:
            getattr(tab.timeline, f"export_{kind}")(str(path))
        except Exception as exc:  # noqa: BLE001 - shown to people, traceback logged
            log.exception("timeline export failed")
            self._report_export(str(path), f"Could not write {path}: {exc}")
            return False
        self._report_export(str(path), "")
        return True

    def export_pftrace(self, path: Path | None = None) -> TaskHandle | None:
        tab = self.current_tab()
        if tab is None or tab.document.trace is None or not pftrace_writer_available():
            return None
        path = path or self._ask_save("Export as Perfetto trace",
                                      f"{Path(tab.document.title).name.split('.')[0]}.pftrace",
                                      "Perfetto trace (*.pftrace)")
        if path is None:
            return None
        trace = tab.document.trace

        def work(progress, cancelled):
            from ..export.pftrace_writer import write_pftrace

            write_pftrace(trace, path)
            return str(path)

        return self._run_export(work, str(path))

    def export_table_csv(self, which: str, path: Path | None = None) -> TaskHandle | None:
        """Write the summary or the (filtered, sorted) kernels table as CSV in a worker."""
        tab = self.current_tab()
        if tab is None or tab.document.trace is None:
            return None
        view = tab.summary_view if which == "summary" else tab.kernels_view
        path = path or self._ask_save("Export table as CSV",
                                      f"{which}.csv", "CSV (*.csv)")
        if path is None:
            return None
        table = view.model.to_arrow()        # a snapshot: the model may change meanwhile

        def work(progress, cancelled):
            import pyarrow.csv as pacsv

            pacsv.write_csv(table, str(path), pacsv.WriteOptions(quoting_style="needed"))
            return str(path)

        return self._run_export(work, str(path))

    def _run_export(self, work, path: str) -> TaskHandle:
        self.statusBar().showMessage(f"Writing {path}…")
        h = self.runner.submit(f"export:{path}", work)
        h.succeeded.connect(lambda p: self._report_export(p, ""))
        h.failed.connect(lambda msg: self._report_export(path, msg))
        return h

    def _report_export(self, path: str, error: str) -> None:
        if error:
            self.statusBar().showMessage(error, 15000)
            if self.isVisible() and self.persist:
                QMessageBox.warning(self, "Export failed", error)
            self.export_finished.emit("")
        else:
            self.statusBar().showMessage(f"Wrote {path}", 8000)
            self.export_finished.emit(path)

    # ---- lifecycle -----------------------------------------------------------------------
    def _about(self) -> None:
        from .. import __version__

        QMessageBox.about(self, "About hipscope",
                          f"hipscope {__version__}\nGPU trace viewer for ROCm and CUDA.")

    def closeEvent(self, event) -> None:  # noqa: N802
        if not self._stop_runs():
            event.ignore()
            return
        self._show_docks(True)                  # save the layout the user chose
        if self.persist:
            self.settings.save_window(self.saveGeometry(), self.saveState())
        for tab in self.tab_list():
            tab.dispose()
        self.runner.shutdown()
        super().closeEvent(event)


def _title(tab) -> str:
    return tab.title if isinstance(tab, CompareTab) else tab.document.title


def _local_paths(mime) -> list[Path]:
    if not mime.hasUrls():
        return []
    return [Path(u.toLocalFile()) for u in mime.urls() if u.isLocalFile()]
