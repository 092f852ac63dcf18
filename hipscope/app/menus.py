"""The window's toolbar and menus (File, Export, View with Theme, Help); the View menu
and the panels' actions come from the panel registry."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtGui import QActionGroup, QKeySequence
from PySide6.QtWidgets import QComboBox, QLabel, QMenu, QToolBar

from ..model.view_state import COLOR_MODES, GROUPINGS
from ..qt.panels import MENU_EXPORT
from . import file_dialogs as fd
from .actions import ActionId, install_navigation, make_action

COLOR_LABELS = {"name": "Name", "duration": "Duration", "queue_delay": "Queue delay",
                "class": "Kernel class"}
GROUP_LABELS = {"queue": "Queue", "stream": "Stream"}


def build_toolbar(w) -> None:
    tb = QToolBar("View", w)
    tb.setObjectName("toolbar_view")
    tb.setMovable(False)
    tb.setIconSize(QSize(16, 16))
    w.addToolBar(tb)
    w.fit_action = make_action(w, None, "Fit", w.fit, "Home")
    w.fit_action.setToolTip("Show the whole trace (Home)")
    w.action_by_id[ActionId.FIT] = w.fit_action
    tb.addAction(w.fit_action)
    tb.addSeparator()
    tb.addWidget(QLabel(" Colour by ", tb))
    w.color_combo = QComboBox(tb)
    for m in COLOR_MODES:
        w.color_combo.addItem(COLOR_LABELS.get(m, m), m)
    w.color_combo.activated.connect(w.on_color_combo_activated)
    tb.addWidget(w.color_combo)
    tb.addWidget(QLabel("  Group by ", tb))
    w.group_combo = QComboBox(tb)
    for g in GROUPINGS:
        w.group_combo.addItem(GROUP_LABELS.get(g, g), g)
    w.group_combo.activated.connect(w.on_group_combo_activated)
    tb.addWidget(w.group_combo)
    w.view_toolbar = tb


def build_menus(w) -> None:
    mb = w.menuBar()
    build_file_menu(w, mb.addMenu("&File"))
    v = mb.addMenu("&View")
    v.addAction(w.fit_action)
    w.find_action = action(w, ActionId.FIND, v, "&Find…", w.show_find_bar,
                           QKeySequence.StandardKey.Find)
    action(w, ActionId.FIND_NEXT, v, "Find &Next", w.find_next, "F3")
    action(w, ActionId.FIND_PREV, v, "Find &Previous", w.find_prev, "Shift+F3")
    v.addSeparator()
    build_theme_menu(w, v.addMenu("&Theme"))
    v.addSeparator()
    for spec in w.panel_specs:
        v.addAction(w.docks[spec.key].toggleViewAction())
    h = mb.addMenu("&Help")
    install_navigation(w, v, h)
    action(w, ActionId.ABOUT, h, "&About hipscope", w.about)


THEME_LABELS = {"system": "&System", "light": "&Light", "dark": "&Dark"}


def build_theme_menu(w, m: QMenu) -> None:
    """System / Light / Dark, one checked (``w.theme_actions``)."""
    group = QActionGroup(m)
    for name, text in THEME_LABELS.items():
        a = action(w, f"view.theme.{name}", m, text, lambda name=name: w.set_theme(name))
        a.setCheckable(True)
        a.setChecked(name == w.theme_choice)
        group.addAction(a)
        w.theme_actions[name] = a


def build_file_menu(w, m: QMenu) -> None:
    A = ActionId  # noqa: N806
    action(w, A.OPEN, m, "&Open…", lambda: fd.open_dialog(w), QKeySequence.StandardKey.Open)
    action(w, A.OPEN_FOLDER, m, "Open &Folder…", lambda: fd.open_folder_dialog(w),
           "Ctrl+Shift+O")
    action(w, A.OPEN_RANKS, m, "Open Ran&ks…", lambda: fd.open_ranks_dialog(w)).setToolTip(
        "A job's rank traces (a folder or glob): every rank analysed, one overview")
    action(w, A.COMPARE, m, "Co&mpare…", lambda: fd.compare_dialog(w),
           "Ctrl+Shift+C").setToolTip("Open two or more runs side by side (the first is A)")
    action(w, A.COMPARE_FOLDERS, m, "Compare Fo&lders…", lambda: fd.compare_folders_dialog(w))
    w.recent_menu = m.addMenu("Open &Recent")
    w.recent_menu.aboutToShow.connect(lambda: fd.fill_recent_menu(w))
    w.reopen_action = action(w, "file.reopen_session", m, "Reopen &Tabs at Start",
                             lambda: w.settings.set_reopen_session(w.reopen_action.isChecked()))
    w.reopen_action.setCheckable(True)
    w.reopen_action.setChecked(w.settings.reopen_session())
    w.reload_action = action(w, A.RELOAD, m, "&Reload", w.reload_current, "F5")
    w.close_tab_action = action(w, A.CLOSE_TAB, m, "&Close Tab", w.close_current_tab,
                                QKeySequence.StandardKey.Close)
    m.addSeparator()
    build_export_menu(w, m.addMenu("&Export"))
    m.addSeparator()
    action(w, A.QUIT, m, "&Quit", w.close, QKeySequence.StandardKey.Quit)


def build_export_menu(w, ex: QMenu) -> None:
    """The timeline and trace exports, then the panels' own export actions."""
    ex.setToolTipsVisible(True)
    w.export_menu = ex
    w.export_png_action = action(w, ActionId.EXPORT_PNG, ex, "Timeline as &PNG…",
                                 lambda: w.export_timeline("png"))
    w.export_svg_action = action(w, ActionId.EXPORT_SVG, ex, "Timeline as &SVG…",
                                 lambda: w.export_timeline("svg"))
    w.export_pftrace_action = action(w, ActionId.EXPORT_PFTRACE, ex,
                                     "Trace as P&erfetto (.pftrace)…", w.export_pftrace)
    ex.addSeparator()
    w.panel_actions = []
    for spec in w.panel_specs:
        for pa in spec.actions:
            if pa.menu == MENU_EXPORT:
                w.panel_actions.append(action(
                    w, pa.id, ex, pa.text,
                    lambda spec=spec, pa=pa: w.run_panel_action(spec.key, pa)))
    ex.aboutToShow.connect(w.update_actions)


def action(w, action_id: str, menu, text, slot, shortcut=None):
    """A window action, kept in ``w.action_by_id`` under its id."""
    a = make_action(w, menu, text, slot, shortcut)
    w.action_by_id[action_id] = a
    return a
