"""The window's panel docks: one per registered PanelSpec, each a stack of the tabs'
panels (and an empty page) showing the current tab's.

Default layout per tab kind, so that the timeline gets most of the screen: a trace
tab has the tables' tab group along the bottom (about a third of the height) with
Details beside it on the right of that strip (never a full-height column); a
comparison tab shows its tables inside the tab, so every dock (the Runs dock too)
steps aside while it is current.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QDockWidget, QLabel, QMainWindow, QStackedWidget, QWidget

from ..qt.panels import AREAS, PanelSpec

EMPTY_TEXTS = {"none": "No trace open.", "loading": "Loading…",
               "failed": "The trace could not be opened.",
               "comparing": "A comparison tab shows its tables inside the tab."}


BOTTOM_SHARE = 0.33     # of the window height: the bottom strip (tables, Details)
DETAILS_SHARE = 0.30    # of the window width: Details, beside the tables
SIDE_W = 340            # px: a plugin's left or right dock


class PanelDocks(QObject):
    """``docks`` and ``stacks`` by panel key, built, tabified and sized per spec."""

    def __init__(self, window: QMainWindow, specs: list[PanelSpec]):
        super().__init__(window)
        self.window, self.specs = window, specs
        self.docks: dict[str, QDockWidget] = {}
        self.stacks: dict[str, QStackedWidget] = {}
        self.empty_labels: dict[str, QLabel] = {}
        self._hidden: list[QDockWidget] | None = None
        for spec in specs:
            dock = QDockWidget(spec.title, window)
            dock.setObjectName(f"dock_{spec.key}")
            stack = QStackedWidget(dock)
            empty = QLabel(EMPTY_TEXTS["none"], stack)
            empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
            empty.setEnabled(False)
            stack.addWidget(empty)
            dock.setWidget(stack)
            window.addDockWidget(AREAS[spec.area], dock)
            self.docks[spec.key], self.stacks[spec.key] = dock, stack
            self.empty_labels[spec.key] = empty
        bottoms = self._bottom_heads()
        for dock in bottoms[1:]:   # further bottom groups beside the first (before tabifying:
            window.splitDockWidget(bottoms[0], dock, Qt.Orientation.Horizontal)  # Qt tabs them)
        for spec in specs:
            if spec.tabify_with in self.docks:
                window.tabifyDockWidget(self.docks[spec.tabify_with], self.docks[spec.key])
        for spec in self._group_heads():
            self.docks[spec.key].raise_()
        # sizes follow the window's size when it is first shown (unless a saved layout
        # was restored, see ``defaults_pending``)
        self.defaults_pending = True
        window.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.Type.Show and obj is self.window and self.defaults_pending:
            self.defaults_pending = False
            self.apply_default_sizes()
        return False

    def apply_default_sizes(self, width: int | None = None, height: int | None = None) -> None:
        """Dock sizes for a window of ``width`` x ``height`` (default: its own): the
        bottom strip takes ``BOTTOM_SHARE`` of the height, Details ``DETAILS_SHARE``
        of the strip's width, side docks ``SIDE_W``."""
        w = width or max(self.window.width(), 1280)
        h = height or max(self.window.height(), 800)
        heads = self._group_heads()
        bottoms = self._bottom_heads()
        sides = [self.docks[s.key] for s in heads if s.area in ("left", "right")]
        if bottoms:
            self.window.resizeDocks(bottoms, [int(h * BOTTOM_SHARE)] * len(bottoms),
                                    Qt.Orientation.Vertical)
        if len(bottoms) > 1:
            rest = int(w * DETAILS_SHARE) // (len(bottoms) - 1)
            self.window.resizeDocks(bottoms, [w - rest * (len(bottoms) - 1)]
                                    + [rest] * (len(bottoms) - 1), Qt.Orientation.Horizontal)
        if sides:
            self.window.resizeDocks(sides, [SIDE_W] * len(sides), Qt.Orientation.Horizontal)

    def _group_heads(self) -> list[PanelSpec]:
        return [s for s in self.specs if s.tabify_with not in self.docks]

    def _bottom_heads(self) -> list[QDockWidget]:
        """Heads of the bottom groups, the largest group first (the tables; Details,
        alone, goes beside it)."""
        heads = [s for s in self._group_heads() if s.area == "bottom"]
        size = {s.key: sum(t.tabify_with == s.key for t in self.specs) for s in heads}
        heads.sort(key=lambda s: -size[s.key])
        return [self.docks[s.key] for s in heads]

    def first_bottom(self) -> QDockWidget | None:
        """The dock that heads the bottom tab group (the Runs dock joins it)."""
        heads = self._bottom_heads()
        return heads[0] if heads else None

    def add_panels(self, panels: dict[str, QWidget]) -> None:
        for key, view in panels.items():
            self.stacks[key].addWidget(view)

    def show_tab(self, panels: dict[str, QWidget] | None, state: str) -> None:
        """The tab's panels when it is loaded, else the empty page saying why."""
        for key, stack in self.stacks.items():
            if panels is not None and state == "loaded":
                stack.setCurrentWidget(panels[key])
            else:
                self.empty_labels[key].setText(EMPTY_TEXTS.get(state, ""))
                stack.setCurrentIndex(0)

    def set_shown(self, show: bool) -> None:
        """A comparison tab has its panels inside: every dock of the window (the Runs
        dock too) steps aside while it is current and comes back as it was."""
        if not show and self._hidden is None:
            self._hidden = [d for d in self.window.findChildren(QDockWidget)
                            if d.parent() is self.window and d.isVisible()]
            for d in self._hidden:
                d.hide()
        elif show and self._hidden is not None:
            hidden, self._hidden = self._hidden, None
            for d in hidden:
                d.show()
