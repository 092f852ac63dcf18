"""The window's exports: the timeline as PNG/SVG, the trace as Perfetto, a table panel
as CSV (the files are written in a worker)."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QMessageBox

from ..qt.tasks import TaskHandle

log = logging.getLogger(__name__)


def pftrace_writer_available() -> bool:
    try:
        return importlib.util.find_spec("hipscope.export.pftrace_writer") is not None
    except ModuleNotFoundError:
        return False


class ExportController(QObject):
    """Exports of the window's current tab; ``finished(path)`` ("" on failure)."""

    finished = Signal(str)

    def __init__(self, window):
        super().__init__(window)
        self.window = window

    def ask_save(self, title: str, suggested: str, filt: str) -> Path | None:
        start = str(Path(self.window.settings.last_dir() or ".") / suggested)
        path, _ = QFileDialog.getSaveFileName(self.window, title, start, filt)
        return Path(path) if path else None

    def timeline(self, tab, kind: str, path: Path | None = None) -> bool:
        api = tab.timeline_api if tab is not None else None
        if api is None:
            return False
        stem = Path(tab.document.title).name.split(".")[0] or "timeline"
        path = path or self.ask_save(f"Export timeline as {kind.upper()}", f"{stem}.{kind}",
                                     f"{kind.upper()} image (*.{kind})")
        if path is None:
            return False
        try:
            (api.export_png if kind == "png" else api.export_svg)(str(path))
        except Exception as exc:  # noqa: BLE001 - shown to people, traceback logged
            log.exception("timeline export failed")
            self.report(str(path), f"Could not write {path}: {exc}")
            return False
        self.report(str(path), "")
        return True

    def pftrace(self, tab, path: Path | None = None) -> TaskHandle | None:
        if tab is None or tab.document.trace is None or not pftrace_writer_available():
            return None
        path = path or self.ask_save("Export as Perfetto trace",
                                     f"{Path(tab.document.title).name.split('.')[0]}.pftrace",
                                     "Perfetto trace (*.pftrace)")
        if path is None:
            return None
        trace = tab.document.trace

        def work(progress, cancelled):
            from ..export.pftrace_writer import write_pftrace

            write_pftrace(trace, path)
            return str(path)

        return self._run(work, str(path))

    def table_csv(self, panel, stem: str, path: Path | None = None) -> TaskHandle | None:
        """Write a table panel's (filtered, sorted) model as CSV in a worker."""
        path = path or self.ask_save("Export table as CSV", f"{stem}.csv", "CSV (*.csv)")
        if path is None:
            return None
        table = panel.model.to_arrow()        # a snapshot: the model may change meanwhile

        def work(progress, cancelled):
            import pyarrow.csv as pacsv

            pacsv.write_csv(table, str(path), pacsv.WriteOptions(quoting_style="needed"))
            return str(path)

        return self._run(work, str(path))

    def _run(self, work, path: str) -> TaskHandle:
        self.window.statusBar().showMessage(f"Writing {path}…")
        h = self.window.runner.submit(f"export:{path}", work)
        h.succeeded.connect(lambda p: self.report(p, ""))
        h.failed.connect(lambda msg: self.report(path, msg))
        return h

    def report(self, path: str, error: str) -> None:
        w = self.window
        if error:
            w.statusBar().showMessage(error, 15000)
            if w.isVisible() and w.persist:
                QMessageBox.warning(w, "Export failed", error)
            self.finished.emit("")
        else:
            w.statusBar().showMessage(f"Wrote {path}", 8000)
            self.finished.emit(path)
