"""Parsed-trace cache stores that run beside the caller's next work.

``hipscope report`` opens a trace and goes straight on to its analyses; writing the
cache entry (Arrow IPC files and their CRC-32s: a quarter of a second for 2M kernels)
need not hold that up. Inside :func:`in_background`, :func:`.cache.read_through` hands
the store to a thread. Analysis results saved meanwhile (``analysis/persist``) are
queued and written once the entry is in place, or dropped when it could not be stored;
a read of the same key waits for its store; leaving the block waits for every store
(and queued write) started in it, so what a caller finds on disk afterwards is what a
store in line would have left (the app's loader leaves without waiting: the timeline
is prepared while the entry is written). Outside the block stores stay in line.

``held=True`` (the app's trace tabs): the stores started in the block wait until
:func:`release` of their key (the tab drew its first frame: on two cores the rows
of that frame and a store side by side each take half the machine), a read or
:func:`flush` that needs them, or ``HOLD_MAX_S``.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator

_ON: contextvars.ContextVar[bool] = contextvars.ContextVar("hipscope_cache_background",
                                                            default=False)
_HELD: contextvars.ContextVar[bool] = contextvars.ContextVar("hipscope_cache_held",
                                                              default=False)
_LOCK = threading.Lock()
_JOBS: dict[str, Job] = {}

HOLD_MAX_S = 20.0     # a held store begins after this long even when nobody released it


class Job:
    """One store of the entry ``key`` on its own thread."""

    def __init__(self, key: str, work: Callable[[], bool], held: bool = False):
        self.key = key
        self.ok = False
        self._go = threading.Event()        # set: the store may begin
        if not held:
            self._go.set()
        self._done = threading.Event()
        self._later: list[Callable[[], object]] = []
        self._thread = threading.Thread(target=self._run, args=(work,), daemon=False,
                                        name="hipscope-cache-store")

    def begin(self) -> None:
        self._thread.start()

    def defer(self, write: Callable[[], object]) -> None:
        """Run ``write`` (a file for the entry's folder) once the entry is stored;
        never when the store failed."""
        with _LOCK:
            if not self._done.is_set():
                self._later.append(write)
                return
        if self.ok:
            write()

    def failed(self) -> bool:
        return self._done.is_set() and not self.ok

    def release(self) -> None:
        """Let a held store begin now."""
        self._go.set()

    def wait(self) -> bool:
        """Whether the entry was stored, once its store (and queued writes) ended (a
        held store begins at once: someone needs it)."""
        self._go.set()
        self._thread.join()
        return self.ok

    def _run(self, work: Callable[[], bool]) -> None:
        self._go.wait(HOLD_MAX_S)
        ok = False
        try:
            ok = bool(work())
        finally:
            with _LOCK:
                self.ok = ok
                self._done.set()
                later, self._later = self._later, []
            for write in later if ok else ():
                write()


def enabled() -> bool:
    """Whether stores started now go to a thread (inside :func:`in_background`)."""
    return _ON.get()


def start(key: str, work: Callable[[], bool]) -> Job:
    """Run ``work`` (the store of ``key``: True when the entry landed) on a thread;
    held until :func:`release` inside ``in_background(held=True)``."""
    job = Job(key, work, held=_HELD.get())
    with _LOCK:
        _JOBS[key] = job
    job.begin()
    return job


def job_of(key: str) -> Job | None:
    """The running (or failed) background store of ``key``, if any."""
    with _LOCK:
        job = _JOBS.get(key)
    if job is not None and job.ok:
        return None                   # stored: writes go straight to the entry
    return job


def release(key: object) -> None:
    """Let the held store of ``key`` begin (no-op for any other key)."""
    with _LOCK:
        job = _JOBS.get(key) if isinstance(key, str) else None
    if job is not None:
        job.release()


def _jobs() -> list[Job]:
    with _LOCK:
        return list(_JOBS.values())


def release_all() -> None:
    """Let every held store begin (the app is closing)."""
    for job in _jobs():
        job.release()


def forget(key: str) -> None:
    """Drop the record of ``key``'s last background store (a new store is starting)."""
    wait(key)
    with _LOCK:
        _JOBS.pop(key, None)


def wait(key: str) -> None:
    """Wait for a background store of ``key`` (a read of that entry must see it)."""
    job = job_of(key)
    if job is not None:
        job.wait()


def flush() -> None:
    """Wait for every background store and its queued writes."""
    jobs = _jobs()
    for job in jobs:
        job.wait()
    with _LOCK:
        for job in jobs:
            if _JOBS.get(job.key) is job and job.ok:
                del _JOBS[job.key]


@contextlib.contextmanager
def in_background(wait: bool = True, held: bool = False) -> Iterator[None]:
    """Stores started in this block run on threads; leaving it waits for them all
    (``wait=False``: it does not; the app goes on to draw the trace while its entry is
    written, and the store's thread, not a daemon, still ends before the process);
    ``held``: the stores wait for :func:`release` (see the module's docstring)."""
    token, held_token = _ON.set(True), _HELD.set(held)
    try:
        yield
    finally:
        _HELD.reset(held_token)
        _ON.reset(token)
        if wait:
            flush()
