"""The window's find bar: text, regex, previous/next, the match count ("3 of 26",
"searching…") and a results list; closed by Esc. It follows the current tab's
timeline and its document's query (:meth:`FindBar.follow`)."""

from __future__ import annotations

from PySide6.QtCore import QAbstractListModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..model.units import fmt_duration, fmt_time

MAX_LISTED = 1_000_000       # rows of the results list (the count shows them all)


class MatchListModel(QAbstractListModel):
    """The matches of a timeline's find, in time order, made row by row on demand."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.finder = None
        self.total = 0

    def reset(self, finder, total: int) -> None:
        self.beginResetModel()
        self.finder, self.total = finder, min(int(total), MAX_LISTED)
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 (Qt name)
        return 0 if parent.isValid() else self.total

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if self.finder is None or role not in (Qt.ItemDataRole.DisplayRole,
                                               Qt.ItemDataRole.ToolTipRole):
            return None
        m = self.finder.match(index.row())
        if m is None:
            return None
        if role == Qt.ItemDataRole.ToolTipRole:
            return m.name
        model = self.finder.view.model
        at = fmt_time(m.start - model.t_min, model.t_max - model.t_min)
        return f"{at}   {fmt_duration(m.end - m.start):>9}   {m.name}"


class FindBar(QWidget):
    """Signals: ``changed`` (text or regex edited), ``next_requested``,
    ``prev_requested``; the window applies them to the current tab."""

    changed = Signal()
    next_requested = Signal()
    prev_requested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._timeline = None
        self._listed: tuple = ()
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        h = QHBoxLayout()
        h.setContentsMargins(6, 3, 6, 3)
        outer.addLayout(h)
        h.addWidget(QLabel("Find:", self))
        self.edit = QLineEdit(self)
        self.edit.setPlaceholderText("kernel or event name")
        self.edit.setClearButtonEnabled(True)
        self.regex = QCheckBox("Regex", self)
        self.count = QLabel(self)
        self.count.setObjectName("find_count")
        self.count.setMinimumWidth(110)
        self.count.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        prev_b, next_b, close_b = QToolButton(self), QToolButton(self), QToolButton(self)
        self.list_button = QToolButton(self)
        self.list_button.setCheckable(True)
        for b, text, tip in ((prev_b, "◀", "Previous match (Shift+F3)"),
                             (next_b, "▶", "Next match (F3)"),
                             (self.list_button, "☰", "List the matches"),
                             (close_b, "✕", "Close the find bar (Esc)")):
            b.setText(text)
            b.setToolTip(tip)
        prev_b.clicked.connect(lambda: self.prev_requested.emit())
        next_b.clicked.connect(lambda: self.next_requested.emit())
        close_b.clicked.connect(lambda: self.hide())
        self.list_button.toggled.connect(lambda on: self.results.setVisible(on))
        self.edit.textChanged.connect(lambda _t: self.changed.emit())
        self.edit.returnPressed.connect(lambda: self.next_requested.emit())
        self.regex.toggled.connect(lambda _on: self.changed.emit())
        for w in (self.edit, self.regex, self.count, prev_b, next_b, self.list_button,
                  close_b):
            h.addWidget(w)
        h.setStretch(1, 1)
        self._build_results(outer)
        esc = QAction(self)
        esc.setShortcut(QKeySequence(Qt.Key.Key_Escape))
        esc.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        esc.triggered.connect(self.hide)
        self.addAction(esc)
        self.hide()

    def _build_results(self, outer: QVBoxLayout) -> None:
        self.results_model = MatchListModel(self)
        self.results = QListView(self)
        self.results.setObjectName("find_results")
        self.results.setModel(self.results_model)
        self.results.setUniformItemSizes(True)
        self.results.setMaximumHeight(180)
        self.results.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.results.activated.connect(self._on_results_activated)
        self.results.clicked.connect(self._on_results_activated)
        self.results.hide()
        outer.addWidget(self.results)

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

    # ---- the current timeline's matches ---------------------------------------------
    def follow(self, timeline) -> None:
        """Show the find status of ``timeline`` (a TimelineView, or None)."""
        if timeline is self._timeline:
            return
        if self._timeline is not None:
            try:
                self._timeline.find_status.disconnect(self.show_status)
                self._timeline.document.find_changed.disconnect(self._on_find_changed)
            except (RuntimeError, TypeError):    # already deleted with its tab
                pass
        self._timeline = timeline
        if timeline is None:
            self.show_status(None)
            return
        timeline.find_status.connect(self.show_status)
        # a query set elsewhere (a click in the kernel summary) shows in the bar
        timeline.document.find_changed.connect(self._on_find_changed)
        self.show_status(timeline.finder.status())

    def _on_find_changed(self, value) -> None:
        text, regex = value
        if (text, regex) != (self.edit.text(), self.regex.isChecked()):
            self.show_query(text, regex)

    def show_status(self, status) -> None:
        """The count label and the results list of one FindStatus (None: blank)."""
        self.count.setText("" if status is None else status.label())
        finder = None if self._timeline is None else self._timeline.finder
        total = 0 if status is None or status.searching else status.total
        key = (id(finder), id(finder.view.found) if finder is not None else 0, total)
        if key != self._listed:
            self._listed = key
            self.results_model.reset(finder, total)
        if status is not None and status.current is not None and status.current < total:
            self.results.setCurrentIndex(self.results_model.index(status.current))

    def _on_results_activated(self, index) -> None:
        if self._timeline is not None and index.isValid():
            self._timeline.finder.go_to(index.row())
