"""The window's action ids (one constants class), the helper that makes an action, the
timeline keys bound for the whole tab, and the keyboard-shortcut sheet (Help, "?")."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QHeaderView,
    QMenu,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

WHEEL_SETTING = "timeline/wheel_zooms"
FLOWS_OFF_SETTING = "timeline/flows_off"


class ActionId:
    """Ids of the main window's actions (``MainWindow.action_by_id``); a panel's own
    actions use the ids of its PanelSpec."""

    OPEN = "file.open"
    OPEN_FOLDER = "file.open_folder"
    OPEN_RANKS = "file.open_ranks"
    COMPARE = "file.compare"
    COMPARE_FOLDERS = "file.compare_folders"
    RELOAD = "file.reload"
    CLOSE_TAB = "file.close_tab"
    QUIT = "file.quit"
    EXPORT_PNG = "export.timeline_png"
    EXPORT_SVG = "export.timeline_svg"
    EXPORT_PFTRACE = "export.pftrace"
    FIT = "view.fit"
    FIND = "view.find"
    FIND_NEXT = "view.find_next"
    FIND_PREV = "view.find_prev"
    WHEEL_ZOOMS = "view.wheel_zooms"
    NEW_RUN = "run.new"
    RUNS_PANEL = "run.panel"
    ABOUT = "help.about"
    SHORTCUTS = "help.shortcuts"


# timeline moves bound for the whole trace tab: (TimelineView.navigate name, text, key)
NAVIGATION = (
    ("zoom_in", "Zoom &In", "W"), ("zoom_out", "Zoom &Out", "S"),
    ("pan_left", "Pan &Left", "A"), ("pan_right", "Pan &Right", "D"),
    ("zoom_selection", "&Zoom to Selection", "F"),
)

# the shortcut sheet: (keys, what they do)
SHORTCUTS = (
    ("W / S", "zoom in / out (at the cursor over the tracks)"),
    ("A / D", "pan left / right"),
    ("F", "zoom to the selected event or the ruler's range (the later one)"),
    ("Home", "fit the whole trace"),
    ("Ctrl+wheel", "zoom at the cursor"),
    ("Wheel", "scroll the tracks (View > Navigate: the wheel zooms instead)"),
    ("Shift+wheel", "pan"),
    ("Drag on the tracks", "pan (both directions)"),
    ("Drag on the time axis", "measure a range: figures and a per-name table"),
    ("Shift+drag on the tracks", "area selection (as Perfetto's): a time range over the "
     "tracks crossed; the Range dock sums only their events, with each track's busy %"),
    ("Click / double click", "select an event / zoom to it"),
    ("Esc", "clear the ruler or the area, then the selection; close the find bar"),
    ("Ctrl+F", "find by name"),
    ("F3 / Shift+F3, Enter", "next / previous match"),
    ("F5", "reload the trace"),
    ("Ctrl+W", "close the tab"),
    ("?", "this sheet"),
)


def make_action(owner: QWidget, menu: QMenu | None, text: str, slot: Callable[[], object],
                shortcut: str | QKeySequence.StandardKey | None = None) -> QAction:
    """An action of ``owner`` (its shortcut works while the menu bar is hidden, e.g.
    offscreen), added to ``menu`` when given."""
    a = QAction(text, owner)
    if shortcut is not None:
        a.setShortcut(QKeySequence(shortcut) if isinstance(shortcut, str) else shortcut)
    a.triggered.connect(lambda _checked=False: slot())
    if menu is not None:
        menu.addAction(a)
    owner.addAction(a)
    return a


def current_timeline(w):
    """The current tab's timeline that has the focus, else its first (None: none)."""
    tab = w.tabs.currentWidget()
    timelines = list(getattr(tab, "timelines", None) or [])
    focus = QApplication.focusWidget()
    for tl in timelines:
        if focus is not None and (focus is tl or tl.isAncestorOf(focus)):
            return tl
    return timelines[0] if timelines else None


def navigate(w, what: str) -> None:
    if (tl := current_timeline(w)) is not None:
        tl.navigate(what)


def _mover(w, what: str) -> Callable[[], None]:
    return lambda: navigate(w, what)


def raise_dock(w, key: str) -> None:
    """Show a panel's dock and bring it to the front of its tab group."""
    dock = w.docks.get(key)
    if dock is not None:
        dock.show()
        dock.raise_()


def install_navigation(w, view_menu: QMenu, help_menu: QMenu) -> None:
    """The timeline keys for the whole tab (View > Navigate), the wheel setting and the
    shortcut sheet (Help, "?")."""
    from ..views.timeline.interaction import TimelineInput

    sub = view_menu.addMenu("&Navigate")
    for what, text, key in NAVIGATION:
        w.action_by_id[f"view.{what}"] = make_action(w, sub, text, _mover(w, what), key)
    sub.addSeparator()
    store = w.settings.store
    wheel = QAction("Mouse &Wheel Zooms (classic)", w)
    wheel.setCheckable(True)
    wheel.setChecked(bool(store.value(WHEEL_SETTING, False, type=bool)))
    TimelineInput.wheel_zooms = wheel.isChecked()

    def set_wheel(on: bool) -> None:
        TimelineInput.wheel_zooms = on
        store.setValue(WHEEL_SETTING, on)

    wheel.toggled.connect(set_wheel)
    sub.addAction(wheel)
    w.action_by_id[ActionId.WHEEL_ZOOMS] = wheel
    install_flows(w, view_menu)
    sheet = make_action(w, help_menu, "&Keyboard Shortcuts", lambda: show_shortcuts(w), "?")
    sheet.setShortcuts([QKeySequence("?"), QKeySequence("F1")])
    w.action_by_id[ActionId.SHORTCUTS] = sheet


def install_flows(w, view_menu: QMenu) -> None:
    """View > Flows: a checkable action per flow kind of the selection's links."""
    from ..views.timeline.flows import FLOW_LABELS, TimelineFlows

    sub = view_menu.addMenu("F&lows")
    store = w.settings.store
    off = set(_as_list(store.value(FLOWS_OFF_SETTING, [])))
    TimelineFlows.kinds = frozenset(FLOW_LABELS) - off

    def toggle(kind: str, on: bool) -> None:
        kinds = set(TimelineFlows.kinds)
        (kinds.add if on else kinds.discard)(kind)
        TimelineFlows.kinds = frozenset(kinds)
        store.setValue(FLOWS_OFF_SETTING, sorted(set(FLOW_LABELS) - kinds))
        for tab in w.tab_list():
            for tl in getattr(tab, "timelines", None) or []:
                tl.flows.refresh()

    for kind, text in FLOW_LABELS.items():
        a = QAction(text, w)
        a.setCheckable(True)
        a.setChecked(kind in TimelineFlows.kinds)
        a.toggled.connect(lambda on, kind=kind: toggle(kind, on))
        sub.addAction(a)
        w.action_by_id[f"view.flows.{kind}"] = a


def _as_list(v) -> list:
    return [v] if isinstance(v, str) else list(v or [])


class ShortcutSheet(QDialog):
    """Every key and mouse gesture of the window, in one table."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts — hipscope")
        self.setObjectName("shortcut_sheet")
        self.table = QTableWidget(len(SHORTCUTS), 2, self)
        self.table.setHorizontalHeaderLabels(["Keys", "Action"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        for i, (keys, what) in enumerate(SHORTCUTS):
            self.table.setItem(i, 0, QTableWidgetItem(keys))
            self.table.setItem(i, 1, QTableWidgetItem(what))
        hdr = self.table.horizontalHeader()
        hdr.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        hdr.setStretchLastSection(True)
        row_h = self.fontMetrics().height() + 8
        self.table.verticalHeader().setDefaultSectionSize(row_h)
        v = QVBoxLayout(self)
        v.addWidget(self.table)
        self.resize(640, hdr.sizeHint().height() + row_h * len(SHORTCUTS) + 30)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)


def show_shortcuts(w) -> ShortcutSheet:
    """Show (and raise) the window's shortcut sheet."""
    sheet = getattr(w, "shortcut_sheet", None)
    if sheet is None:
        sheet = w.shortcut_sheet = ShortcutSheet(w)
    sheet.show()
    sheet.raise_()
    return sheet
