"""The window's panel docks: one per registered PanelSpec, each a stack of the tabs'
panels (and an empty page) showing the current tab's."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QLabel, QMainWindow, QStackedWidget, QWidget

from ..qt.panels import AREAS, PanelSpec

EMPTY_TEXTS = {"none": "No trace open.", "loading": "Loading…",
               "failed": "The trace could not be opened.",
               "comparing": "A comparison tab shows its tables inside the tab."}


class PanelDocks:
    """``docks`` and ``stacks`` by panel key, built, tabified and sized per spec."""

    def __init__(self, window: QMainWindow, specs: list[PanelSpec]):
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
        for spec in specs:
            if spec.tabify_with in self.docks:
                window.tabifyDockWidget(self.docks[spec.tabify_with], self.docks[spec.key])
        for spec in self._group_heads():
            self.docks[spec.key].raise_()
            side = spec.area in ("left", "right")
            window.resizeDocks([self.docks[spec.key]], [380 if side else 300],
                               Qt.Orientation.Horizontal if side else Qt.Orientation.Vertical)

    def _group_heads(self) -> list[PanelSpec]:
        return [s for s in self.specs if s.tabify_with not in self.docks]

    def first_bottom(self) -> QDockWidget | None:
        """The dock that heads the bottom tab group (the Runs dock joins it)."""
        return next((self.docks[s.key] for s in self._group_heads() if s.area == "bottom"),
                    None)

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
        """A comparison tab has its panels inside: the docks step aside while it is
        current and come back as they were."""
        if not show and self._hidden is None:
            self._hidden = [d for d in self.docks.values() if d.isVisible()]
            for d in self._hidden:
                d.hide()
        elif show and self._hidden is not None:
            hidden, self._hidden = self._hidden, None
            for d in hidden:
                d.show()
