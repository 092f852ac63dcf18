"""The window's action ids (one constants class) and the helper that makes an action."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QWidget


class ActionId:
    """Ids of the main window's actions (``MainWindow.action_by_id``); a panel's own
    actions use the ids of its PanelSpec."""

    OPEN = "file.open"
    OPEN_FOLDER = "file.open_folder"
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
    NEW_RUN = "run.new"
    RUNS_PANEL = "run.panel"
    ABOUT = "help.about"


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
