"""The panel registry: a trace tab's dock panels, registered like readers and rules.

A :class:`PanelSpec` says where a panel docks, how to build it from a Document, how
it sends intents to the app's :class:`~hipscope.qt.commands.Commands` and which menu
actions it adds. ``TraceTab`` builds one panel per spec, ``MainWindow`` one dock per
spec and the View menu from the same list. Built-ins live in
``hipscope.views.builtin_panels``; a plugin registers more under the
``hipscope.panels`` entry point group (see :mod:`hipscope.model.plugins`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.metadata import EntryPoint

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from ..model.plugins import load_group
from .commands import Commands
from .document import Document

AREAS = {"bottom": Qt.DockWidgetArea.BottomDockWidgetArea,
         "right": Qt.DockWidgetArea.RightDockWidgetArea,
         "left": Qt.DockWidgetArea.LeftDockWidgetArea,
         "top": Qt.DockWidgetArea.TopDockWidgetArea}
BUILTIN_MODULES = ("hipscope.views.builtin_panels",)
MENU_EXPORT = "export"         # the File > Export menu (a PanelAction's ``menu``)


@dataclass(frozen=True)
class PanelAction:
    """A menu action a panel adds: ``menu`` is a menu id (``MENU_EXPORT``);
    ``run(panel, commands)`` acts on the current tab's panel."""

    id: str
    text: str
    menu: str
    run: Callable[[QWidget, Commands], object]


@dataclass(frozen=True)
class PanelSpec:
    """One dock panel of a trace tab. ``factory(document)`` builds it (a Document
    alone suffices); ``connect(panel, commands)`` wires its intents; ``tabify_with``
    is the key of the dock it shares a tab group with; lower ``order`` comes first."""

    key: str
    title: str
    factory: Callable[[Document], QWidget]
    area: str = "bottom"
    tabify_with: str | None = None
    actions: tuple[PanelAction, ...] = ()
    connect: Callable[[QWidget, Commands], None] | None = None
    order: int = 100

    def __post_init__(self) -> None:
        if self.area not in AREAS:
            raise ValueError(f"panel {self.key!r}: dock area {self.area!r} not in {tuple(AREAS)}")


_REGISTRY: dict[str, PanelSpec] = {}
_LOCK = threading.Lock()
_LOADED: list[str] = []


def register_panel(spec: PanelSpec) -> PanelSpec:
    """Register (or replace) a panel under its key."""
    if not isinstance(spec, PanelSpec):
        raise TypeError(f"register_panel takes a PanelSpec, not {type(spec).__name__}")
    _REGISTRY[spec.key] = spec
    return spec


def load_panels(eps: Iterable[EntryPoint] | None = None) -> list[str]:
    """The built-in panels and the ``hipscope.panels`` entry points (``eps``: these
    instead of the installed ones); an entry point may name a PanelSpec."""
    with _LOCK:
        names = load_group("hipscope.panels", BUILTIN_MODULES, register_panel, eps)
        _LOADED.append("loaded")
        return names


def panel_specs() -> list[PanelSpec]:
    """Every registered panel, in dock order (loads them on first use)."""
    if not _LOADED:
        load_panels()
    return sorted(_REGISTRY.values(), key=lambda s: (s.order, s.key))


def unregister_panel(key: str) -> None:
    """Drop a panel (a test's plugin leaves the registry as it found it)."""
    _REGISTRY.pop(key, None)
