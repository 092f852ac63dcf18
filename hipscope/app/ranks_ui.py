"""The shell's side of the Ranks tab: opening one (File > Open Ranks…, ``hipscope PATH
--ranks``) and opening a rank's timeline at a time (the tab's double-clicks, which
arrive as ``Commands.open_at_requested``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..qt.ranks import Analyse
from ..views.ranks import RanksTab
from .trace_tab import TraceTab


def open_ranks(w, paths: Sequence[str | Path], options: dict[str, Any] | None = None,
               analyse: Analyse | None = None) -> RanksTab:
    """A Ranks tab for a job's rank traces (files, folders or globs), analysed in the
    window's job runner; ``options`` go to the engine (``workers``, ``scheduler``)."""
    tab = RanksTab(paths, w.commands, options, analyse, w.tabs)
    w.add_tab(tab, "Ranks\n" + "\n".join(tab.job_paths))
    tab.start_load(w.runner)
    return tab


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
