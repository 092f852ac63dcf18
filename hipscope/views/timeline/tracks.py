"""The timeline's track controls: the filter box over the label column and the
per-track context menu (hide, pin, move up/down, fold, show hidden tracks).

They change the view's :class:`~.layout.TrackOptions` (or its collapsed keys) and
ask the view to lay its rows out again; the view keeps no other track state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLineEdit, QMenu

from .layout import ROW_H, Layout, TrackOptions, sticky_rows
from .render import AXIS_H, LABEL_W

if TYPE_CHECKING:
    from .view import TimelineView


class TrackControls:
    """The filter box and the track menu of one timeline (``options`` is its state)."""

    def __init__(self, view: TimelineView):
        self.view = view
        self.options = TrackOptions()
        self.filter_edit = QLineEdit(view)
        self.filter_edit.setPlaceholderText("Filter tracks…")
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.setToolTip("Show only the tracks whose label (or group) holds this text")
        self.filter_edit.textChanged.connect(self._on_filter_edit_text_changed)
        self.filter_edit.setGeometry(4, 3, LABEL_W - 8, AXIS_H - 6)   # over the label column
        view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        view.customContextMenuRequested.connect(self._on_view_context_menu_requested)

    def unfold_quiet(self, group: int) -> bool:
        """Show the quiet tracks of a group (True when they were folded)."""
        model = self.view.model
        if model is None:
            return False
        key = f"{model.rows[group].key}/quiet"
        found = key in self.view.collapsed
        self.view.collapsed.discard(key)
        return found

    def _on_filter_edit_text_changed(self, text: str) -> None:
        self.options.filter = text
        self._relayout()

    def label_tooltip(self, x: float, y: float) -> str:
        """The full label of the row under a point of the label column (labels are
        cut to the column's width), with what the row holds; '' elsewhere."""
        v = self.view
        if v.model is None or x >= LABEL_W or y < AXIS_H:
            return ""
        row = self._row_at(y)
        if row < 0:
            return ""
        r, path = v.model.rows[row], []
        a = row
        while a >= 0:
            path.append(v.model.rows[a].label)
            a = v.model.rows[a].parent
        text = " › ".join(reversed(path))
        if r.events is not None:
            text += f"\n{len(r.events):,} events"
        elif r.kind == "fold":
            text += "\nclick to show or fold them; right-click for the track menu"
        else:
            text += f"\n{len(r.children)} rows"
        return text

    def _relayout(self) -> None:
        self.view._relayout()  # noqa: SLF001 (this module is the view's track half)

    # ---- the menu -------------------------------------------------------------------
    def menu_for(self, row: int) -> QMenu:
        """The context menu of model row ``row`` (-1: outside any row)."""
        v, opts = self.view, self.options
        menu = QMenu(v)
        if v.model is not None and row >= 0:
            r = v.model.rows[row]
            if r.kind in ("group", "fold"):
                folded = r.key in v.collapsed
                self._add(menu, "Unfold" if folded else "Fold", lambda: v.toggle_group(row))
            self._add(menu, f"Hide “{r.label}”", lambda: self._hide(r.key))
            pinned = r.key in opts.pinned
            self._add(menu, "Unpin" if pinned else "Pin to top", lambda: self._pin(r.key))
            if r.kind != "fold":
                self._add(menu, "Move up", lambda: self._move(row, -1))
                self._add(menu, "Move down", lambda: self._move(row, 1))
        if opts.hidden:
            menu.addSeparator()
            self._add(menu, f"Show {len(opts.hidden)} hidden track(s)", self._show_hidden)
        if opts.order or opts.pinned:
            self._add(menu, "Reset track order", self._reset_order)
        return menu

    def _on_view_context_menu_requested(self, pos) -> None:
        v = self.view
        row = self._row_at(pos.y()) if v.model is not None else -1
        self.menu_for(row).exec(v.mapToGlobal(pos))

    def _row_at(self, y: float) -> int:
        """The model row at widget y (-1: none); a sticky group header where one is
        drawn at the top."""
        lay, scroll = cast(Layout, self.view.layout), cast(int, self.view.scroll)
        k = int((y - AXIS_H) // ROW_H["group"])
        sticky = sticky_rows(lay, scroll)
        if 0 <= k < len(sticky):
            return sticky[k]
        return lay.at(y - AXIS_H + scroll)

    def label_row_at(self, y: float) -> int:
        """The model row whose label is at widget y (sticky headers included)."""
        return self._row_at(y) if self.view.model is not None else -1

    @staticmethod
    def _add(menu: QMenu, text: str, slot) -> QAction:
        act = menu.addAction(text)
        act.triggered.connect(slot)
        return act

    def _hide(self, key: str) -> None:
        self.options.hidden.add(key)
        self._relayout()

    def _pin(self, key: str) -> None:
        pins = self.options.pinned
        if key in pins:
            pins.remove(key)
        else:
            pins.append(key)
        self._relayout()

    def _move(self, row: int, step: int) -> None:
        if self.view.model is not None:
            self.options.move(self.view.model, row, step)
        self._relayout()

    def _show_hidden(self) -> None:
        self.options.hidden.clear()
        self._relayout()

    def _reset_order(self) -> None:
        self.options.order.clear()
        self.options.pinned.clear()
        self._relayout()
