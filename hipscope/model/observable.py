"""`Observable`: the one observer mechanism of the core's state objects, Qt-free.

ViewState, CompareState, TunerState and the launchers notify their listeners through
it; the GUI turns the notifications into signals with one bridge
(:class:`hipscope.qt.bridge.ObservableBridge`). A notification is ``(what, value)``.
A state object's listeners are called as ``fn(what, value)``; a class whose value
names its own kind (a launcher's ``RunEvent``) sets ``_listeners_take_value_only``
and its listeners get ``fn(value)``. :meth:`Observable.watch` always gets the pair.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, ClassVar

log = logging.getLogger(__name__)

Listener = Callable[[str, Any], None]


class Observable:
    """Listeners of a plain-state object; works in plain classes and dataclasses (the
    list lives outside the dataclass fields: no ``repr``, ``==`` or ``replace`` sees it).

    ``_isolate_listeners``: a listener's exception is logged, the others still run
    (state driven from worker threads must not break on an observer's bug); else it
    propagates to the caller that changed the state.
    """

    _isolate_listeners: ClassVar[bool] = False
    _listeners_take_value_only: ClassVar[bool] = False

    def _listener_entries(self) -> list[tuple[Callable[..., None], bool]]:
        try:
            return self.__dict__["_observable_entries"]
        except KeyError:
            return self.__dict__.setdefault("_observable_entries", [])

    def subscribe(self, fn: Callable[..., None]) -> Callable[[], None]:
        """Add a listener (called in this class's form); returns its remover."""
        return self._add(fn, pair=not self._listeners_take_value_only)

    def watch(self, fn: Listener) -> Callable[[], None]:
        """Add a listener always called as ``fn(what, value)``; returns its remover."""
        return self._add(fn, pair=True)

    def unsubscribe(self, fn: Callable[..., None]) -> None:
        entries = self._listener_entries()
        entries[:] = [e for e in entries if e[0] != fn]

    def _add(self, fn: Callable[..., None], pair: bool) -> Callable[[], None]:
        self._listener_entries().append((fn, pair))
        return lambda: self.unsubscribe(fn)

    def _emit(self, what: str, value: Any) -> None:
        for fn, pair in list(self._listener_entries()):
            if not self._isolate_listeners:
                fn(what, value) if pair else fn(value)
                continue
            try:
                fn(what, value) if pair else fn(value)
            except Exception:  # noqa: BLE001 - an observer's bug must not break the state
                log.exception("%s listener %r failed", type(self).__name__, fn)
