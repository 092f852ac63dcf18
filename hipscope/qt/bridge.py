"""`ObservableBridge`: the one way the core's observable state reaches Qt signals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

from ..model.observable import Observable


class ObservableBridge(QObject):
    """Re-emits an :class:`~hipscope.model.observable.Observable`'s notifications as
    ``changed(what, value)``.

    The bridge lives on the thread that made it (the GUI's): a notification from a
    worker thread reaches its slots queued, one from the GUI thread directly, unless
    the slot is connected with an explicit connection type. ``accept(what, value)``
    (called on the notifying thread) drops the notifications a receiver takes another
    way. :meth:`detach` stops listening (closing widgets call it).
    """

    changed = Signal(str, object)

    def __init__(self, observable: Observable, parent: QObject | None = None,
                 accept: Callable[[str, Any], bool] | None = None):
        super().__init__(parent)
        self.observable = observable
        self._accept = accept
        self._remove: Callable[[], None] | None = observable.watch(self._relay)

    def _relay(self, what: str, value: Any) -> None:
        if self._accept is None or self._accept(what, value):
            self.changed.emit(what, value)

    def detach(self) -> None:
        if self._remove is not None:
            self._remove()
            self._remove = None
