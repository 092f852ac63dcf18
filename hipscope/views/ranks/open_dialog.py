"""File > Open Ranks…: a job's rank traces (a folder, files or a glob) and where to
analyse them (worker processes on this machine, in this process, or a Dask scheduler)."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

ENGINES = (("local", "Worker processes on this machine"), ("serial", "In this process"),
           ("scheduler", "A running Dask scheduler"))


class OpenRanksDialog(QDialog):
    """``paths()`` and ``options()`` (keywords for the engine) once accepted."""

    def __init__(self, start_dir: str = "", parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Open ranks — hipscope")
        self.start_dir = start_dir
        self.path_edit = QLineEdit(self)
        self.path_edit.setPlaceholderText(
            "a folder of rank traces, or a glob: /runs/job42/rank*.json.gz")
        folder, files = QPushButton("Folder…", self), QPushButton("Files…", self)
        folder.clicked.connect(self._pick_folder)
        files.clicked.connect(self._pick_files)
        row = QHBoxLayout()
        for w in (self.path_edit, folder, files):
            row.addWidget(w)
        self.engine = QComboBox(self)
        for key, text in ENGINES:
            self.engine.addItem(text, key)
        self.workers = QSpinBox(self)
        self.workers.setRange(0, 1024)
        self.workers.setSpecialValueText("one per CPU core")
        self.scheduler = QLineEdit(self)
        self.scheduler.setPlaceholderText("tcp://host:8786")
        self.engine.currentIndexChanged.connect(self._sync)
        form = QFormLayout(self)
        form.addRow("Rank traces", row)
        form.addRow("Analyse with", self.engine)
        form.addRow("Workers", self.workers)
        form.addRow("Scheduler", self.scheduler)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open
                                   | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.open_button = buttons.button(QDialogButtonBox.StandardButton.Open)
        self.path_edit.textChanged.connect(self._sync)
        self.scheduler.textChanged.connect(self._sync)
        self.resize(720, self.sizeHint().height())
        self._sync()

    def paths(self) -> list[str]:
        """What was typed or picked; several files are separated by ';'."""
        return [p.strip() for p in self.path_edit.text().split(";") if p.strip()]

    def options(self) -> dict[str, Any]:
        key = self.engine.currentData()
        if key == "serial":
            return {"workers": 0}
        if key == "scheduler":
            return {"scheduler": self.scheduler.text().strip()}
        return {"workers": self.workers.value() or None}

    def _sync(self, *_args) -> None:
        key = self.engine.currentData()
        self.workers.setEnabled(key == "local")
        self.scheduler.setEnabled(key == "scheduler")
        self.open_button.setEnabled(bool(self.paths()) and (
            key != "scheduler" or bool(self.scheduler.text().strip())))

    def _pick_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "A folder of rank traces", self.start_dir)
        if path:
            self.path_edit.setText(path)

    def _pick_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Rank traces", self.start_dir)
        if paths:
            self.path_edit.setText("; ".join(paths))
