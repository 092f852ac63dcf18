"""The timeline's track controls: the filter box over the label column, the
per-track context menu (hide, pin, move up/down, fold, show hidden tracks) and the
label column's width (drag its right edge).

They change the view's :class:`~.layout.TrackOptions` (or its collapsed keys) and
ask the view to lay its rows out again; the view keeps no other track state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from PySide6.QtCore import QEvent, QObject, QRect, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLineEdit, QMenu

from .layout import LABEL_W_RANGE, ROW_H, Layout, TrackOptions, sticky_rows
from .painting import legend_entries
from .render import AXIS_H, LEGEND_H, SCROLL_W

EDGE_PX = 4               # how near the label column's edge a drag resizes it

if TYPE_CHECKING:
    from .view import TimelineView


class TrackControls(QObject):
    """The filter box, the track menu and the label column's width of one timeline
    (``options`` is their state)."""

    def __init__(self, view: TimelineView):
        super().__init__(view)
        self.view = view
        self.options = TrackOptions()
        self._resizing = False
        self.filter_edit = QLineEdit(view)
        self.filter_edit.setPlaceholderText("Filter tracks…")
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.setToolTip("Show only the tracks whose label (or group) holds this text")
        self.filter_edit.textChanged.connect(self._on_filter_edit_text_changed)
        view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        view.customContextMenuRequested.connect(self._on_view_context_menu_requested)
        view.installEventFilter(self)           # the label column's edge: drag to resize
        self.set_label_w(self.options.label_w)

    # ---- the label column -----------------------------------------------------------
    @property
    def label_w(self) -> int:
        return self.options.label_w

    def set_label_w(self, w: int) -> None:
        """Make the label column ``w`` px wide (kept within ``LABEL_W_RANGE``)."""
        lo, hi = LABEL_W_RANGE
        self.options.label_w = int(min(max(w, lo), hi))
        self.filter_edit.setGeometry(4, 3, self.options.label_w - 8, AXIS_H - 6)
        self.view.update()

    def track_rect(self) -> QRect:
        """The track area: right of the label column, between axis and legend."""
        v, lw = self.view, self.options.label_w
        return QRect(lw, AXIS_H, max(v.width() - lw - SCROLL_W, 1),
                     max(v.height() - AXIS_H - LEGEND_H, 1))

    def eventFilter(self, obj, event) -> bool:
        """Drags on the label column's right edge resize it (before the view's own
        mouse handling); the cursor tells where that works."""
        t = event.type()
        if obj is not self.view or t not in (QEvent.Type.MouseButtonPress,
                                             QEvent.Type.MouseMove,
                                             QEvent.Type.MouseButtonRelease):
            return False
        x = event.position().x()
        near = abs(x - self.options.label_w) <= EDGE_PX
        if t == QEvent.Type.MouseButtonPress and near and \
                event.button() == Qt.MouseButton.LeftButton:
            self._resizing = True
            return True
        if t == QEvent.Type.MouseMove:
            if self._resizing:                  # the tracks keep 200 px at least
                self.set_label_w(int(min(x, self.view.width() - 200)))
                return True
            if near:
                self.view.setCursor(Qt.CursorShape.SplitHCursor)
            else:
                self.view.unsetCursor()
            return False
        if t == QEvent.Type.MouseButtonRelease and self._resizing:
            self._resizing = False
            return True
        return False

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
        self.relayout()

    def label_tooltip(self, x: float, y: float) -> str:
        """The full label of the row under a point of the label column (labels are
        cut to the column's width), with what the row holds; '' elsewhere."""
        v = self.view
        if v.model is not None and y >= v.height() - LEGEND_H:
            return self._legend_tooltip(x)
        if v.model is None or x >= self.options.label_w or y < AXIS_H:
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

    def relayout(self) -> None:
        self.view.relayout()  # noqa: SLF001 (this module is the view's track half)

    def _legend_tooltip(self, x: float) -> str:
        """The full name of the legend entry at x ('' between entries)."""
        v = self.view
        if v.scale.mode != "name":
            return ""
        for x0, x1, _text, name, _key in legend_entries(v.fonts, v.scale, v.width()):
            if x0 <= x <= x1:
                return name
        return ""

    def describe(self) -> dict:
        """What the track area shows now, for the screenshot hook and tests: the rows
        in sight (label, kind, events; folded rows stand for ``events`` quiet
        tracks), what is hidden, folded and filtered out, the filter, the column width."""
        v = self.view
        lay, scroll = cast(Layout, v.layout), cast(int, v.scroll)
        rows = []
        if v.model is not None:
            top, bottom = scroll, scroll + v.track_rect.height()
            for p in range(len(lay.rows)):
                if lay.y[p] + lay.h[p] <= top or lay.y[p] >= bottom:
                    continue
                r = v.model.rows[int(lay.rows[p])]
                n = len(r.events) if r.events is not None else len(r.members)
                rows.append({"label": r.label, "kind": r.kind, "events": n,
                             "pinned": int(lay.rows[p]) in lay.pinned})
        return {"tracks": rows, "hidden": lay.n_hidden, "folded": lay.n_folded,
                "filtered": lay.n_filtered, "filter": self.options.filter,
                "label_w": self.options.label_w}

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
        self.relayout()

    def _pin(self, key: str) -> None:
        pins = self.options.pinned
        if key in pins:
            pins.remove(key)
        else:
            pins.append(key)
        self.relayout()

    def _move(self, row: int, step: int) -> None:
        if self.view.model is not None:
            self.options.move(self.view.model, row, step)
        self.relayout()

    def _show_hidden(self) -> None:
        self.options.hidden.clear()
        self.relayout()

    def _reset_order(self) -> None:
        self.options.order.clear()
        self.options.pinned.clear()
        self.relayout()
