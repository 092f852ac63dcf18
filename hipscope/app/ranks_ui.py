"""The shell's side of the Ranks tab: opening one (File > Open Ranks…, ``hipscope PATH
--ranks``, or a dropped / opened folder of rank files, after a one-line choice) and
opening a rank's timeline at a time (the tab's double-clicks, which arrive as
``Commands.open_at_requested``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QMessageBox

from ..parsers.kineto.ranks import rank_files
from .trace_tab import TraceTab

if TYPE_CHECKING:       # the rank engine and its charts load when a Ranks tab opens
    from ..qt.ranks import Analyse
    from ..views.ranks import RanksTab


def open_ranks(w, paths: Sequence[str | Path], options: dict[str, Any] | None = None,
               analyse: Analyse | None = None) -> RanksTab:
    """A Ranks tab for a job's rank traces (files, folders or globs), analysed in the
    window's job runner; ``options`` go to the engine (``workers``, ``scheduler``)."""
    from ..views.ranks import RanksTab  # its charts (pyqtgraph): not at start-up

    tab = RanksTab(paths, w.commands, options, analyse, w.tabs)
    w.add_tab(tab, "Ranks\n" + "\n".join(tab.job_paths))
    tab.start_load(w.runner)
    return tab


MERGED, RANKS = "One merged trace", "Ranks"


def ask_open_as(w, folder: Path, n: int) -> str | None:
    """'merged', 'ranks' or None (cancelled): how to open a folder of ``n`` rank files."""
    box = QMessageBox(QMessageBox.Icon.Question, "Open rank traces",
                      f"{folder.name} holds {n} rank traces: open them as one merged "
                      "trace, or as ranks (the Ranks tab)?", QMessageBox.StandardButton.Cancel, w)
    merged = box.addButton(MERGED, QMessageBox.ButtonRole.AcceptRole)
    ranks = box.addButton(RANKS, QMessageBox.ButtonRole.AcceptRole)
    box.setDefaultButton(ranks)
    box.exec()
    got = box.clickedButton()
    return "merged" if got is merged else "ranks" if got is ranks else None


def offer_ranks(w, paths: Sequence[Path]) -> list[Path]:
    """Ask, for each folder of ``paths`` that holds two or more rank files, whether to
    open it as ranks (then a Ranks tab opens) or as one merged trace; returns the
    paths still to open as traces (not the folders opened as ranks or cancelled)."""
    out = []
    for p in map(Path, paths):
        n = len(rank_files(p)) if p.is_dir() else 0
        how = ask_open_as(w, p, n) if n >= 2 else "merged"
        if how == "ranks":
            open_ranks(w, [str(p)])
        elif how == "merged":
            out.append(p)
    return out


def open_at(w, paths: Sequence[Path], window: tuple[int, int]) -> TraceTab:
    """Open a trace through the window's normal path (an open tab of it comes to front)
    and show ``window`` [t0, t1) ns once it is loaded."""
    tab = w.open_run_trace(list(paths))
    t0, t1 = int(window[0]), int(window[1])
    if tab.state == "loaded":
        tab.document.view_state.set_window(t0, t1)
        return tab

    def on_state(state: str) -> None:
        if state == "loaded":
            tab.document.view_state.set_window(t0, t1)
        if state != "loading":
            tab.state_changed.disconnect(on_state)

    tab.state_changed.connect(on_state)
    return tab
