"""Progress and cancellation, one convention for the whole program (Qt-free).

Long work takes ``progress(fraction)`` and ``cancelled() -> bool`` callables and, when
``cancelled()`` turns true, raises :class:`Cancelled` at its next check. Readers,
analyses, exporters, the tuner and the launchers all use this one type, so a caller
(the GUI's task runner, the CLI's Ctrl+C) catches one thing.
"""

from __future__ import annotations

from collections.abc import Callable

ProgressFn = Callable[[float], None]
CancelledFn = Callable[[], bool]


class Cancelled(Exception):
    """The work was cancelled by the user."""


def no_progress(_fraction: float) -> None:
    return None


def never_cancelled() -> bool:
    return False


def check_cancel(cancelled: CancelledFn | None) -> None:
    """Raise :class:`Cancelled` when ``cancelled`` (may be None) says so."""
    if cancelled is not None and cancelled():
        raise Cancelled()
