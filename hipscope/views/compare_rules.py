"""The comparison's kernel-name normalisation rules, edited as text (a dialog)."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QVBoxLayout

from ..analysis.diff import NameNormalizer, RulesError


class RulesDialog(QDialog):
    """The kernel-name normalisation rules as text; checked before it closes."""

    def __init__(self, text: str, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Kernel-name normalisation rules")
        v = QVBoxLayout(self)
        help_ = QLabel("One regular expression a line: <tt>PATTERN</tt> (matches are deleted) "
                       "or <tt>PATTERN =&gt; REPLACEMENT</tt>. <tt>@defaults</tt>: hashes, "
                       "clone/.kd and Triton suffixes; <tt>@templates</tt>: also match "
                       "kernels that differ only in template arguments.", self)
        help_.setWordWrap(True)
        self.edit = QPlainTextEdit(text, self)
        self.error = QLabel("", self)
        self.error.setStyleSheet("color: #e05040;")
        self.error.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self._on_accepted)
        buttons.rejected.connect(self.reject)
        for w in (help_, self.edit, self.error, buttons):
            v.addWidget(w)
        self.resize(640, 360)

    def _on_accepted(self) -> None:
        try:
            NameNormalizer.parse(self.edit.toPlainText())
        except RulesError as exc:
            self.error.setText(str(exc))
            return
        self.accept()
