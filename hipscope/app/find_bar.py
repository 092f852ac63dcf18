"""The window's find bar: text, regex, previous/next, closed by Esc."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QLineEdit, QToolButton, QWidget


class FindBar(QWidget):
    """Signals: ``changed`` (text or regex edited), ``next_requested``,
    ``prev_requested``; the window applies them to the current tab."""

    changed = Signal()
    next_requested = Signal()
    prev_requested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        h = QHBoxLayout(self)
        h.setContentsMargins(6, 3, 6, 3)
        h.addWidget(QLabel("Find:", self))
        self.edit = QLineEdit(self)
        self.edit.setPlaceholderText("kernel or event name")
        self.edit.setClearButtonEnabled(True)
        self.regex = QCheckBox("Regex", self)
        prev_b, next_b, close_b = QToolButton(self), QToolButton(self), QToolButton(self)
        for b, text, tip in ((prev_b, "◀", "Previous match (Shift+F3)"),
                             (next_b, "▶", "Next match (F3)"),
                             (close_b, "✕", "Close the find bar (Esc)")):
            b.setText(text)
            b.setToolTip(tip)
        prev_b.clicked.connect(lambda: self.prev_requested.emit())
        next_b.clicked.connect(lambda: self.next_requested.emit())
        close_b.clicked.connect(lambda: self.hide())
        self.edit.textChanged.connect(lambda _t: self.changed.emit())
        self.edit.returnPressed.connect(lambda: self.next_requested.emit())
        self.regex.toggled.connect(lambda _on: self.changed.emit())
        for w in (self.edit, self.regex, prev_b, next_b, close_b):
            h.addWidget(w)
        h.setStretch(1, 1)
        esc = QAction(self)
        esc.setShortcut(QKeySequence(Qt.Key.Key_Escape))
        esc.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        esc.triggered.connect(self.hide)
        self.addAction(esc)
        self.hide()

    def open(self) -> None:
        self.show()
        self.edit.setFocus()
        self.edit.selectAll()

    def show_query(self, text: str, regex: bool) -> None:
        """Show a tab's query without reporting it as an edit."""
        for w in (self.edit, self.regex):
            w.blockSignals(True)
        self.edit.setText(text)
        self.regex.setChecked(regex)
        for w in (self.edit, self.regex):
            w.blockSignals(False)
