"""The page a tab shows while its job runs: one line of text, a progress bar and Cancel,
centred. Shared by trace tabs (``app/loading_tab.py``) and the Ranks tab."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)


class ProgressPage(NamedTuple):
    page: QWidget
    label: QLabel
    bar: QProgressBar           # 0..1000
    cancel: QPushButton


def build_progress_page(parent: QWidget, text: str, on_cancel: Callable[[], None]
                        ) -> ProgressPage:
    """The page and its parts; Cancel's click calls ``on_cancel``."""
    page = QWidget(parent)
    v = QVBoxLayout(page)
    v.addStretch(1)
    label = QLabel(text, page)
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    bar = QProgressBar(page)
    bar.setRange(0, 1000)
    bar.setTextVisible(True)
    bar.setFormat("%p%")
    bar.setFixedWidth(360)
    cancel = QPushButton("Cancel", page)
    cancel.clicked.connect(on_cancel)
    v.addWidget(label)
    row = QHBoxLayout()
    row.addStretch(1)
    row.addWidget(bar)
    row.addWidget(cancel)
    row.addStretch(1)
    v.addLayout(row)
    v.addStretch(2)
    return ProgressPage(page, label, bar, cancel)
