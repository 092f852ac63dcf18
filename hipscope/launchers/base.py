"""The launcher state machine, its events and the one interface of every launcher.

::

    queued -> starting -> running -> collecting -> finished
       \\          \\          \\           \\------> failed | cancelled
        `----------`----------`------------------> failed | cancelled

Observers are plain callables taking a :class:`RunEvent`; they are called on the
launcher's worker threads (the run's thread, the output readers, the telemetry poller:
possibly concurrently), so the GUI wraps them in queued Qt signals. A launcher runs its
steps on one worker thread; :meth:`Launcher.cancel` only sets a flag and wakes it.
"""

from __future__ import annotations

import codecs
import enum
import logging
import os
import re
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model.observable import Observable
from ..model.progress import Cancelled
from .profilers import ProfilerError, Wrapped, get_profiler
from .rundir import RunFolder, process_identity
from .spec import RunSpec

log = logging.getLogger(__name__)


class RunState(str, enum.Enum):
    QUEUED = "queued"
    STARTING = "starting"
    RUNNING = "running"
    COLLECTING = "collecting"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def final(self) -> bool:
        return self in (RunState.FINISHED, RunState.FAILED, RunState.CANCELLED)


_ENDINGS = {RunState.FAILED, RunState.CANCELLED}
TRANSITIONS: dict[RunState, set[RunState]] = {
    RunState.QUEUED: {RunState.STARTING} | _ENDINGS,
    RunState.STARTING: {RunState.RUNNING} | _ENDINGS,
    RunState.RUNNING: {RunState.COLLECTING} | _ENDINGS,
    RunState.COLLECTING: {RunState.FINISHED} | _ENDINGS,
    RunState.FINISHED: set(),
    RunState.FAILED: set(),
    RunState.CANCELLED: set(),
}


class InvalidTransition(RuntimeError):
    pass


class LaunchError(Exception):
    """A run could not go on; ``str()`` is the reason shown to people."""


@dataclass(frozen=True)
class RunEvent:
    """One thing that happened to a run.

    ``kind``: ``state`` (``state``, ``reason``), ``output`` (``stream``, ``line``,
    ``end``: ``"\\n"`` a whole line, ``"\\r"`` a progress line that the next text
    replaces, ``""`` a fragment that the next event of that stream continues),
    ``progress`` (``fraction`` or None, ``text``), ``telemetry`` (``samples``),
    ``message`` (``text``: reconnects, warnings).
    """

    kind: str
    run_id: str
    time: float = field(default_factory=time.time)
    state: RunState | None = None
    reason: str | None = None
    stream: str | None = None
    line: str | None = None
    end: str = "\n"
    fraction: float | None = None
    text: str | None = None
    samples: tuple = ()


Observer = Callable[[RunEvent], None]


@dataclass
class RunResult:
    state: RunState
    exit_status: int | None
    reason: str | None
    folder: Path
    artifacts: list[Path]
    trace_inputs: list[Path]


class Launcher(Observable):
    """Base of the local, SSH and Slurm launchers.

    Subclasses implement :meth:`_execute` (start, stream, wait; return the exit status)
    and :meth:`_collect` (bring the artifacts into the run folder); both call
    :meth:`check_cancel` at their waiting points and raise :class:`LaunchError` with a
    reason for people. Observers get the :class:`RunEvent` alone (it names its kind).
    """

    _isolate_listeners = True            # an observer's bug must not kill the run
    _listeners_take_value_only = True

    def __init__(self, spec: RunSpec, folder: RunFolder | None = None,
                 observers: list[Observer] | None = None):
        self.spec = spec
        self.folder = folder or RunFolder.create(spec)
        self.state = RunState.QUEUED
        self.exit_status: int | None = None
        self.reason: str | None = None
        self.artifacts: list[Path] = []
        self.trace_inputs: list[Path] = []
        for fn in observers or ():
            self.subscribe(fn)
        self._cancel = threading.Event()
        self._cancel_reason: str | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._timings: dict[str, float] = {"queued": time.time()}
        self.folder.update_status(state=self.state.value, timings=self._timings,
                                  target=spec.target.label(), command=spec.command,
                                  profiler=spec.profiler.name, exit_status=None, reason=None,
                                  owner=process_identity(os.getpid()))

    # ------------------------------------------------------------------ observers
    def emit(self, kind: str, **kw: Any) -> None:
        ev = RunEvent(kind, self.folder.run_id, **kw)
        if kind in ("state", "message", "progress"):
            self.folder.append_event({"kind": kind, "time": ev.time,
                                      "state": ev.state.value if ev.state else None,
                                      "reason": ev.reason, "text": ev.text,
                                      "fraction": ev.fraction})
        self._emit(kind, ev)

    def output(self, stream: str, line: str, end: str = "\n") -> None:
        self.emit("output", stream=stream, line=line, end=end)

    def message(self, text: str) -> None:
        self.emit("message", text=text)

    # ------------------------------------------------------------------ state machine
    def set_state(self, new: RunState, reason: str | None = None) -> None:
        if new not in TRANSITIONS[self.state]:
            raise InvalidTransition(f"{self.state.value} -> {new.value}")
        self.state = new
        self._timings[new.value] = time.time()
        if new == RunState.RUNNING:
            self._timings["started"] = self._timings[new.value]
        if new.final:
            self._timings["ended"] = self._timings[new.value]
            self._timings.setdefault("started", self._timings[new.value])
            self.reason = reason
        try:
            self.folder.update_status(state=new.value, reason=reason, timings=self._timings,
                                      exit_status=self.exit_status,
                                      artifacts=[str(p.relative_to(self.folder.path))
                                                 for p in self.artifacts
                                                 if p.is_relative_to(self.folder.path)],
                                      trace_inputs=[str(p) for p in self.trace_inputs])
        except OSError as exc:   # e.g. a full disk: the observers must still hear of it
            log.warning("run %s: cannot write status.json: %s", self.folder.run_id, exc)
        self.emit("state", state=new, reason=reason)

    # ------------------------------------------------------------------ control
    def start(self) -> None:
        """Run in a worker thread; returns at once."""
        if self._thread is not None:
            raise RuntimeError("a launcher runs once")
        self._thread = threading.Thread(target=self.run, name=f"run-{self.folder.run_id}",
                                        daemon=True)
        self._thread.start()

    def run(self) -> RunResult:
        """Run to the end on the calling thread."""
        try:
            self.check_cancel()
            self.set_state(RunState.STARTING)
            if (why := self.spec.unrunnable()) is not None:
                raise LaunchError(why)
            status = self._execute()
            self.exit_status = status
            self.folder.update_status(exit_status=status)
            self.set_state(RunState.COLLECTING)
            self._collect_safely()
            self.check_cancel()
            if status == 0:
                self.set_state(RunState.FINISHED)
            else:
                self.set_state(RunState.FAILED, describe_exit(status))
        except Cancelled:
            self._collect_after_end()
            self.set_state(RunState.CANCELLED, self._cancel_reason or "cancelled by the user")
        except LaunchError as exc:
            self._collect_after_end()
            self.set_state(RunState.FAILED, str(exc))
        except Exception as exc:  # a bug: keep the run folder consistent, log it
            log.error("run %s crashed:\n%s", self.folder.run_id, traceback.format_exc())
            self._collect_after_end()
            self.set_state(RunState.FAILED, f"internal error: {exc!r}")
        finally:
            self._cleanup()
            self._done.set()
        return self.result()

    def cancel(self, reason: str | None = None) -> None:
        """Ask the run to stop (kills the program's process group); returns at once.
        ``reason`` replaces "cancelled by the user" (e.g. hipscope got SIGTERM)."""
        if reason and not self._cancel.is_set():
            self._cancel_reason = reason
        self._cancel.set()
        self._wake()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def check_cancel(self) -> None:
        if self._cancel.is_set():
            raise Cancelled()

    def wait(self, timeout: float | None = None) -> RunResult | None:
        """Wait for the end; None when ``timeout`` passed first."""
        if not self._done.wait(timeout):
            return None
        return self.result()

    def result(self) -> RunResult:
        return RunResult(self.state, self.exit_status, self.reason, self.folder.path,
                         list(self.artifacts), list(self.trace_inputs))

    # ------------------------------------------------------------------ for subclasses
    def _wrap_command(self, out_dir: str, **kw: Any) -> Wrapped:
        """The spec's command wrapped by its profiler, writing into ``out_dir``."""
        prof = get_profiler(self.spec.profiler.name)
        try:
            return prof.wrap(self.spec.command, out_dir, self.spec.profiler.options, **kw)
        except ProfilerError as exc:
            raise LaunchError(str(exc)) from None

    def _execute(self) -> int:
        raise NotImplementedError

    def _collect(self) -> None:
        raise NotImplementedError

    def _wake(self) -> None:
        """Interrupt a wait in _execute (subclasses with their own waits override)."""

    def _cleanup(self) -> None:
        """Release processes, connections, threads (always called once at the end)."""

    def _collect_safely(self) -> None:
        try:
            self._collect()
        except (LaunchError, Cancelled):
            raise
        except OSError as exc:
            raise LaunchError(f"collecting the artifacts failed: {exc}") from exc

    def _collect_after_end(self) -> None:
        """Failed and cancelled runs keep what they produced: collect, best effort."""
        if self.state in (RunState.QUEUED,) or self.state.final:
            return
        try:
            self._collect()
        except Exception as exc:  # best effort: the reason of the end matters more
            log.warning("collecting after %s failed: %s", self.state.value, exc)
            self.message(f"could not collect all artifacts: {exc}")


def describe_exit(status: int | None) -> str:
    if status is None:
        return "the exit status is unknown"
    if status < 0:
        import signal

        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        return f"the program was killed by {name}"
    if status > 128:
        import signal

        try:
            return f"the program exited with status {status} " \
                   f"(killed by {signal.Signals(status - 128).name}?)"
        except ValueError:
            pass
    return f"the program exited with status {status}"


#: longest text of one output event: longer lines arrive as several fragments
MAX_FRAGMENT_CHARS = 64 * 1024
_BREAKS = re.compile(r"(\r\n|\r|\n)")


class LineSplitter:
    """Bytes of one output stream -> ``(text, end)`` pieces for :meth:`Launcher.output`.

    ``end`` is ``"\\n"`` (a line), ``"\\r"`` (a progress line, as tqdm writes them) or
    ``""`` (a fragment: a line longer than ``max_chars``, one the program has not
    finished yet, see :meth:`flush`, or its last line when it had no end). Memory
    stays bounded whatever the program writes; UTF-8 split across chunks decodes
    whole; ``"\\r\\n"`` ends a line.
    """

    def __init__(self, max_chars: int = MAX_FRAGMENT_CHARS):
        self.max_chars = max_chars
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._held_cr = False    # the text so far ended in "\r": is a "\n" next?

    @property
    def pending(self) -> bool:
        return bool(self._pending) or self._held_cr

    def feed(self, data: bytes) -> list[tuple[str, str]]:
        return self._split(self._decoder.decode(data))

    def flush(self) -> list[tuple[str, str]]:
        """What is pending, as a fragment (or a progress line): the program paused."""
        if not self.pending:
            return []
        out = [(self._pending, "\r" if self._held_cr else "")]
        self._pending, self._held_cr = "", False
        return out

    def close(self) -> list[tuple[str, str]]:
        """The stream ended: the rest (a last line without end stays a fragment: the
        output is given exactly as it was)."""
        return self._split(self._decoder.decode(b"", final=True)) + self.flush()

    def _split(self, text: str) -> list[tuple[str, str]]:
        if self._held_cr:
            text, self._held_cr = "\r" + text, False
        if text.endswith("\r"):
            text, self._held_cr = text[:-1], True
        out: list[tuple[str, str]] = []
        if "\r" not in text:
            *lines, rest = text.split("\n")
            seps = ["\n"] * len(lines)
        else:
            parts = _BREAKS.split(text)
            lines, seps, rest = parts[0:-1:2], parts[1::2], parts[-1]
        for line, sep in zip(lines, seps):
            self._piece(out, self._pending + line, "\r" if sep == "\r" else "\n")
            self._pending = ""
        self._pending += rest
        while len(self._pending) > self.max_chars:
            out.append((self._pending[:self.max_chars], ""))
            self._pending = self._pending[self.max_chars:]
        return out

    def _piece(self, out: list[tuple[str, str]], line: str, end: str) -> None:
        while len(line) > self.max_chars:
            out.append((line[:self.max_chars], ""))
            line = line[self.max_chars:]
        out.append((line, end))
