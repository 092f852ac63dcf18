"""The window's page while no tab is open: how to open a trace, the recent files
(those still on disk) and the bundled sample, one click each."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QPushButton, QVBoxLayout, QWidget

MAX_SHOWN = 8


def sample_path() -> Path:
    """The bundled sample trace (``hipscope --demo`` opens it too)."""
    from importlib.resources import files

    return Path(str(files("hipscope.resources") / "samples" / "mi300x_bert_small_kineto.json.gz"))


class EmptyPage(QWidget):
    """``open_requested(paths)`` when a recent file or the sample is clicked;
    ``open_dialog_requested`` for the Open… button. Call :meth:`refresh` when shown."""

    open_requested = Signal(list)
    open_dialog_requested = Signal()

    def __init__(self, text: str, recent: Callable[[], list[Path]],
                 sample: Path | None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("empty_page")
        self._recent, self.sample = recent, sample
        self.label = QLabel(text, self)
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        f = self.label.font()
        f.setPointSizeF(f.pointSizeF() * 1.4)
        self.label.setFont(f)
        self.label.setEnabled(False)
        self.open_button = self._button("Open…", self.open_dialog_requested.emit)
        self.sample_button = self._button(
            "Open the bundled sample (MI300X BERT, PyTorch profiler)",
            lambda: self.open_requested.emit([self.sample]))
        self.sample_button.setVisible(sample is not None and sample.exists())
        self.recent_title = QLabel("<b>Recent</b>", self)
        self.recent_title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.recent_buttons: list[QPushButton] = []
        self._lay = QVBoxLayout(self)
        self._lay.addStretch(2)
        for w in (self.label, self.open_button, self.sample_button, self.recent_title):
            self._lay.addWidget(w, 0, Qt.AlignmentFlag.AlignHCenter)
        self._recent_at = self._lay.count()
        self._lay.addStretch(3)
        self.refresh()

    def _button(self, text: str, slot) -> QPushButton:
        b = QPushButton(text, self)
        b.setFlat(True)
        b.setCursor(Qt.CursorShape.PointingHandCursor)
        b.clicked.connect(lambda _c=False: slot())
        return b

    def refresh(self) -> None:
        """List the recent files that still exist (newest first)."""
        for b in self.recent_buttons:
            self._lay.removeWidget(b)
            b.deleteLater()
        paths = [p for p in self._recent() if p.exists()][:MAX_SHOWN]
        self.recent_buttons = []
        for i, p in enumerate(paths):
            b = self._button(p.name, lambda p=p: self.open_requested.emit([p]))
            b.setToolTip(str(p))
            self._lay.insertWidget(self._recent_at + i, b, 0, Qt.AlignmentFlag.AlignHCenter)
            self.recent_buttons.append(b)
        self.recent_title.setVisible(bool(paths))
