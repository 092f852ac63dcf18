"""`Commands`: the one app-level object panels send their intents to.

A panel never reaches for the window: it asks ``commands`` to open a trace, compare
runs, start a run or export a table; the shell (``app.main_window``) connects these
signals to what carries them out. Document-level intents (reveal a range, select an
event) go to the Document's ViewState, which every view follows.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal


class Commands(QObject):
    """Intents of panels, as signals the shell carries out."""

    open_requested = Signal(list)              # paths of one trace (one per rank)
    open_at_requested = Signal(list, object)   # paths of one trace, (t0, t1) ns to show
    compare_requested = Signal(list)           # paths, the first is A
    compare_runs_requested = Signal(list, list)  # the files of run A, of run B
    run_requested = Signal(object)             # a RunSpec to prefill the Run dialog, or None
    export_table_requested = Signal(object, str)  # a table panel, its file stem
    show_panel_requested = Signal(str)         # the key of a panel to show and raise

    def open_trace(self, paths: list[Path]) -> None:
        self.open_requested.emit([Path(p) for p in paths])

    def open_trace_at(self, paths: list[Path], window: tuple[int, int]) -> None:
        """Open a trace (or bring its tab to front) showing ``window`` [t0, t1) ns."""
        self.open_at_requested.emit([Path(p) for p in paths], (int(window[0]), int(window[1])))

    def compare(self, paths: list[Path]) -> None:
        self.compare_requested.emit([Path(p) for p in paths])

    def compare_runs(self, paths_a: list[Path], paths_b: list[Path]) -> None:
        self.compare_runs_requested.emit([Path(p) for p in paths_a],
                                         [Path(p) for p in paths_b])

    def new_run(self, spec: object = None) -> None:
        self.run_requested.emit(spec)

    def show_panel(self, key: str) -> None:
        self.show_panel_requested.emit(key)

    def export_table(self, panel: QObject, stem: str) -> None:
        self.export_table_requested.emit(panel, stem)
