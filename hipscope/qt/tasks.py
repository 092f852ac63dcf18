"""Workers: run core functions off the GUI thread with progress, cancel, latest-wins.

Core code takes plain callables (``progress(fraction)``, ``cancelled() -> bool``);
:class:`TaskRunner` runs ``fn(progress, cancelled)`` on its own QThreadPool and sends
the outcome back by queued signal. Submitting under a key that is still running
cancels the stale task and ignores its result. :meth:`TaskRunner.shutdown` (called
when the window closes) cancels everything and waits for the workers.
:meth:`TaskRunner.hold` keeps tasks below a priority queued until :meth:`TaskRunner.release`
(the docks wait for the timeline's first frame: they must not compete with it).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from ..parsers.base import Cancelled, TraceFormatError

log = logging.getLogger(__name__)

TaskFn = Callable[[Callable[[float], None], Callable[[], bool]], Any]


def describe_error(exc: BaseException) -> str:
    """One sentence for people: a reader's own message, else the error's gist."""
    if isinstance(exc, TraceFormatError):
        return str(exc)
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        return f"{where}{exc.strerror or exc}."
    if isinstance(exc, MemoryError):
        return "Not enough memory to finish the task."
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"Unexpected error ({type(exc).__name__}): {text}"


class TaskHandle(QObject):
    """The GUI side of one task. Signals arrive on the GUI thread (queued)."""

    progressed = Signal(float)
    succeeded = Signal(object)
    failed = Signal(str)        # one sentence
    cancelled = Signal()
    finished = Signal()         # after any of the three outcomes

    def __init__(self, key: str, parent: QObject | None = None):
        super().__init__(parent)
        self.key = key
        self._cancel = threading.Event()
        self.done = False
        self.outcome: str | None = None     # "succeeded" | "failed" | "cancelled"

    def cancel(self) -> None:
        self._cancel.set()

    def is_cancelled(self) -> bool:
        return self._cancel.is_set()


class _Relay(QObject):
    """Lives on the GUI thread; the worker emits these, Qt queues them across."""

    progress = Signal(object, float)
    result = Signal(object, str, object)


class _Runnable(QRunnable):
    def __init__(self, fn: TaskFn, handle: TaskHandle, relay: _Relay):
        super().__init__()
        self.setAutoDelete(True)
        self._fn, self._handle, self._relay = fn, handle, relay
        self._last = -1.0

    def _progress(self, fraction: float) -> None:
        f = float(fraction)
        if f >= 1.0 or f - self._last >= 0.005 or f < self._last:
            self._last = f
            self._relay.progress.emit(self._handle, f)

    def run(self) -> None:
        h = self._handle
        try:
            if h.is_cancelled():
                raise Cancelled()
            value = self._fn(self._progress, h.is_cancelled)
            if h.is_cancelled():
                raise Cancelled()
            outcome, payload = "succeeded", value
        except Cancelled:
            outcome, payload = "cancelled", None
        except TraceFormatError as exc:
            log.info("task %s: %s", h.key, exc)      # shown to people by the caller
            outcome, payload = "failed", describe_error(exc)
        except Exception as exc:  # noqa: BLE001 - anything else is logged with its traceback
            log.exception("task %s failed", h.key)
            outcome, payload = "failed", describe_error(exc)
        # the pool frees the C++ runnable, but its Python wrapper can outlive it: drop
        # the task now (its closure holds a trace)
        self._fn = _spent
        self._relay.result.emit(h, outcome, payload)


def _spent(progress: Callable[[float], None], cancelled: Callable[[], bool]) -> Any:
    raise RuntimeError("this task already ran")


class TaskRunner(QObject):
    """Runs tasks on a private pool; one live task per key (a new one cancels the old)."""

    def __init__(self, parent: QObject | None = None, max_threads: int = 4):
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(max_threads)
        self._relay = _Relay(self)
        self._relay.progress.connect(self._on_relay_progress)
        self._relay.result.connect(self._on_relay_result)
        self._live: dict[str, TaskHandle] = {}
        self._running: set[TaskHandle] = set()
        self._ids = itertools.count()
        self._closed = False
        self._hold_below: int | None = None        # see hold()
        self._held: list[tuple[_Runnable, int]] = []
        self.submitted = 0          # tasks started so far (tests count where work ran)

    def submit(self, key: str, fn: TaskFn, priority: int = 0) -> TaskHandle:
        """Run ``fn(progress, cancelled)`` in a worker; cancels a stale task of ``key``.
        A higher ``priority`` starts before queued tasks of lower ones.

        After :meth:`shutdown` (the widget is closing) nothing runs: the handle comes
        back already cancelled and emits nothing, so a signal that arrives during
        teardown cannot start work or raise inside Qt's event loop."""
        if self._closed:
            return self.not_started(key)
        old = self._live.get(key)
        if old is not None:
            old.cancel()
        handle = TaskHandle(key, self)
        self.submitted += 1
        self._live[key] = handle
        self._running.add(handle)
        job = _Runnable(fn, handle, self._relay)
        if self._hold_below is not None and priority < self._hold_below:
            self._held.append((job, priority))
        else:
            self._pool.start(job, priority)
        return handle

    def hold(self, below: int) -> None:
        """Keep tasks of a priority under ``below`` queued (not started) until
        :meth:`release`: the timeline's first frame gets the cores before the docks."""
        self._hold_below = below

    def release(self) -> None:
        """Start the held tasks (in their priority order) and stop holding."""
        self._hold_below = None
        held, self._held = self._held, []
        for job, priority in held:
            self._pool.start(job, priority)

    def holding(self) -> bool:
        return self._hold_below is not None

    @property
    def closed(self) -> bool:
        """Shut down: nothing submitted now runs."""
        return self._closed

    def not_started(self, key: str) -> TaskHandle:
        """A handle for work refused at shutdown: already cancelled, emits nothing."""
        log.debug("task %r not started: shut down", key)
        handle = TaskHandle(key, self)
        handle.cancel()
        handle.done, handle.outcome = True, "cancelled"
        return handle

    def scope(self, name: str, priority: int = 0) -> TaskScope:
        """A panel's share of this runner (see :class:`TaskScope`)."""
        return TaskScope(self, name, priority)

    def active_keys(self) -> list[str]:
        return [h.key for h in self._running]

    def cancel_prefix(self, prefix: str) -> None:
        """Cancel every running task whose key starts with ``prefix`` (one scope's)."""
        for h in list(self._running):
            if h.key.startswith(prefix):
                h.cancel()

    def cancel(self, key: str) -> None:
        h = self._live.get(key)
        if h is not None:
            h.cancel()

    def active_count(self) -> int:
        """Tasks whose worker has not reported back yet."""
        return len(self._running)

    def wait(self, msecs: int = -1) -> bool:
        """Wait for every task, held ones too (waiting for the work starts it)."""
        self.release()
        return self._pool.waitForDone(msecs)

    def shutdown(self, msecs: int = 10_000) -> bool:
        """Cancel every task and wait for the workers (True when all ended); held
        tasks start only to report that they were cancelled."""
        self._closed = True
        for h in list(self._running):
            h.cancel()
        self.release()
        ok = self._pool.waitForDone(msecs)
        if not ok:
            log.warning("%d worker(s) did not stop within %d ms", self.active_count(), msecs)
        return ok

    def _on_relay_progress(self, handle: TaskHandle, fraction: float) -> None:
        if not handle.is_cancelled():
            handle.progressed.emit(fraction)

    def _on_relay_result(self, handle: TaskHandle, outcome: str, payload: object) -> None:
        self._running.discard(handle)
        if self._live.get(handle.key) is handle:
            del self._live[handle.key]
        if handle.is_cancelled() and outcome == "succeeded":
            outcome, payload = "cancelled", None      # a stale result is dropped
        handle.done, handle.outcome = True, outcome
        if outcome == "succeeded":
            handle.succeeded.emit(payload)
        elif outcome == "failed":
            handle.failed.emit(payload)
        else:
            handle.cancelled.emit()
        handle.finished.emit()
        # its slots often hold it (lambdas with h=h): a cycle through C++ that gc cannot
        # see, keeping their owners and traces alive. Deleting the C++ object drops the
        # slots; the Python object (done, outcome, cancel()) stays usable.
        handle.setParent(None)
        handle.deleteLater()


class TaskScope:
    """One panel's tasks on its document's runner: the document owns the one job runner
    of a trace (one pool for all its panels); a scope prefixes the panel's keys (two
    panels' "stats" never cancel each other) and :meth:`shutdown` cancels only the
    panel's own tasks, leaving the shared pool to the document. Same interface as
    :class:`TaskRunner` for its users."""

    def __init__(self, runner: TaskRunner, name: str, priority: int = 0):
        self.runner, self.name, self.priority = runner, name, priority
        self._closed = False

    def _key(self, key: str) -> str:
        return f"{self.name}/{key}"

    def submit(self, key: str, fn: TaskFn, priority: int | None = None) -> TaskHandle:
        if self._closed:
            return self.runner.not_started(self._key(key))
        return self.runner.submit(self._key(key), fn,
                                  self.priority if priority is None else priority)

    def cancel(self, key: str) -> None:
        self.runner.cancel(self._key(key))

    def active_count(self) -> int:
        prefix = self._key("")
        return sum(1 for k in self.runner.active_keys() if k.startswith(prefix))

    def wait(self, msecs: int = -1) -> bool:
        return self.runner.wait(msecs)

    def shutdown(self, msecs: int = 10_000) -> bool:
        """Cancel this scope's tasks and refuse new ones (the document's runner stays)."""
        self._closed = True
        self.runner.cancel_prefix(self._key(""))
        return True
