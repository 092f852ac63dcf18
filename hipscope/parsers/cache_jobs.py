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
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator

_ON: contextvars.ContextVar[bool] = contextvars.ContextVar("hipscope_cache_background",
                                                            default=False)
_LOCK = threading.Lock()
_JOBS: dict[str, Job] = {}


class Job:
    """One store of the entry ``key`` on its own thread."""

    def __init__(self, key: str, work: Callable[[], bool]):
        self.key = key
        self.ok = False
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

    def wait(self) -> bool:
        """Whether the entry was stored, once its store (and queued writes) ended."""
        self._thread.join()
        return self.ok

    def _run(self, work: Callable[[], bool]) -> None:
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
    """Run ``work`` (the store of ``key``: True when the entry landed) on a thread."""
    job = Job(key, work)
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
    with _LOCK:
        jobs = list(_JOBS.values())
    for job in jobs:
        job.wait()
    with _LOCK:
        for job in jobs:
            if _JOBS.get(job.key) is job and job.ok:
                del _JOBS[job.key]


@contextlib.contextmanager
def in_background(wait: bool = True) -> Iterator[None]:
    """Stores started in this block run on threads; leaving it waits for them all
    (``wait=False``: it does not; the app goes on to draw the trace while its entry is
    written, and the store's thread, not a daemon, still ends before the process)."""
    token = _ON.set(True)
    try:
        yield
    finally:
        _ON.reset(token)
        if wait:
            flush()
