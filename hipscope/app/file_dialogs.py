"""The window's file dialogs: open, open a folder, recent files, compare."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog


def open_dialog(w) -> None:
    from ..parsers import file_filters

    paths, _ = QFileDialog.getOpenFileNames(w, "Open trace", w.settings.last_dir(),
                                            ";;".join(file_filters()))
    if paths:
        w.settings.set_last_dir(Path(paths[0]).parent)
        w.open_paths([Path(p) for p in paths])


def open_folder_dialog(w) -> None:
    from .ranks_ui import offer_ranks

    path = QFileDialog.getExistingDirectory(w, "Open trace folder",
                                            w.settings.last_dir())
    if path:
        w.settings.set_last_dir(Path(path).parent)
        w.open_paths(offer_ranks(w, [Path(path)]))


def open_ranks_dialog(w) -> None:
    """File > Open Ranks…: a folder, files or a glob of one job's rank traces."""
    from ..views.ranks.open_dialog import OpenRanksDialog
    from .ranks_ui import open_ranks

    dialog = OpenRanksDialog(w.settings.last_dir(), w)
    if dialog.exec() == OpenRanksDialog.DialogCode.Accepted and dialog.paths():
        w.settings.set_last_dir(Path(dialog.paths()[0]).parent)
        open_ranks(w, dialog.paths(), dialog.options())


def fill_recent_menu(w) -> None:
    w.recent_menu.clear()
    recent = w.settings.recent_files()
    for p in recent:
        a = w.recent_menu.addAction(str(p))
        a.setEnabled(p.exists())
        a.triggered.connect(lambda _c=False, p=p: w.open_paths([p]))
    if not recent:
        w.recent_menu.addAction("(none)").setEnabled(False)
    w.recent_menu.addSeparator()
    w.recent_menu.addAction("Clear list", w.settings.clear_recent)


def compare_dialog(w) -> None:
    from ..parsers import file_filters

    paths, _ = QFileDialog.getOpenFileNames(
        w, "Compare traces: pick two or more (the first is A)",
        w.settings.last_dir(), ";;".join(file_filters()))
    if len(paths) == 1:
        more, _ = QFileDialog.getOpenFileNames(
            w, f"Compare {Path(paths[0]).name} with…", str(Path(paths[0]).parent),
            ";;".join(file_filters()))
        paths += more
    if len(paths) >= 2:
        w.settings.set_last_dir(Path(paths[0]).parent)
        w.compare_paths([Path(p) for p in paths])


def compare_folders_dialog(w) -> None:
    a = QFileDialog.getExistingDirectory(w, "Compare: run A (folder)",
                                         w.settings.last_dir())
    b = a and QFileDialog.getExistingDirectory(w, f"Compare {Path(a).name} with (folder)",
                                               str(Path(a).parent))
    if a and b:
        w.settings.set_last_dir(Path(a).parent)
        w.compare_paths([Path(a), Path(b)])
