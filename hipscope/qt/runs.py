"""The GUI's runs: :class:`RunSession` (a launcher bound to the GUI thread) and
:class:`RunManager` (the window's runs, started and shut down together).

Launcher events arrive on the launcher's threads (run, output readers, telemetry
poller). Output lines go into a locked buffer that a GUI timer drains in batches (fast
output never becomes one signal per line); every other event crosses by the one
:class:`~hipscope.qt.bridge.ObservableBridge`, queued. A line reaches the GUI clipped
to ``MAX_LINE_CHARS`` (the rest is counted; the run folder's log has it all). Panels
bind to the session's plain state (``state``, ``reason``, ``telemetry``) and signals.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, Qt, QTimer, Signal

from ..launchers.base import RunResult, RunState
from ..launchers.spec import RunSpec
from ..model.units import fmt_duration
from .bridge import ObservableBridge
from .host_keys import HostKeyAsker

log = logging.getLogger(__name__)

FLUSH_MS = 50                 # console batches
MAX_LINE_CHARS = 8192         # of one line shown in the console (the log file has it all)
MAX_POINTS = 3600             # telemetry samples kept per GPU for the charts
METRICS = (("util_pct", "Utilisation", "%", 1.0), ("mem_used_mib", "Memory", "GiB", 1 / 1024),
           ("power_w", "Power", "W", 1.0), ("temp_c", "Temperature", "°C", 1.0),
           ("sclk_mhz", "Clock", "MHz", 1.0))


def _not_output(kind: str, _ev) -> bool:
    return kind != "output"


def fmt_seconds(s: float | None) -> str:
    return "-" if s is None else fmt_duration(s * 1e9)     # the one duration text


class TelemetryBuffer:
    """Telemetry samples per GPU as growing columns (plain data, no Qt)."""

    def __init__(self, t0: float | None = None, max_points: int = MAX_POINTS):
        self.t0, self.max_points = t0, max_points
        self.columns: dict[int, dict[str, list[float]]] = {}
        self.count = 0

    def add(self, samples) -> None:
        for s in samples:
            if self.t0 is None:
                self.t0 = s.time
            col = self.columns.setdefault(s.gpu, {k: [] for k in
                                                  ("t", *(m[0] for m in METRICS))})
            col["t"].append(s.time - self.t0)
            for key, *_ in METRICS:
                v = getattr(s, key)
                col[key].append(np.nan if v is None else float(v))
            if len(col["t"]) > self.max_points:
                for v in col.values():
                    del v[: len(v) - self.max_points]
            self.count += 1

    def gpus(self) -> list[int]:
        return sorted(self.columns)

    def series(self, gpu: int, key: str) -> tuple[np.ndarray, np.ndarray]:
        col = self.columns[gpu]
        return np.asarray(col["t"], float), np.asarray(col[key], float)


class RunSession(QObject):
    """One launcher bound to the GUI thread. Signals arrive on the GUI thread."""

    state_changed = Signal(str, str)     # state, reason ("" when none)
    lines_appended = Signal(list)        # [(stream, line), ...], one batch
    message_added = Signal(str)
    telemetry_added = Signal(int)        # samples added
    finished = Signal(object)            # RunResult

    def __init__(self, spec: RunSpec, host_key_callback=None, parent: QObject | None = None):
        super().__init__(parent)
        from ..launchers import make_launcher

        self.spec = spec
        self.state = RunState.QUEUED.value
        self.reason = ""
        self.result: RunResult | None = None
        self.line_count = 0
        self.created_at = time.time()
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.detached = False
        self.telemetry = TelemetryBuffer()
        self._buf: list[tuple[str, str, str, int]] = []   # stream, text, end, bytes cut
        self._line_chars: dict[str, int] = {}              # of the stream's open line
        self._lock = threading.Lock()
        self._timer = QTimer(self)
        self._timer.setInterval(FLUSH_MS)
        self._timer.timeout.connect(self._flush)
        self.launcher = make_launcher(spec, host_key_callback=host_key_callback)
        self.launcher.subscribe(self._observe)      # output: batched by the timer
        self._bridge = ObservableBridge(self.launcher, self, accept=_not_output)
        self._bridge.changed.connect(self._on_posted, Qt.ConnectionType.QueuedConnection)

    @property
    def run_id(self) -> str:
        return self.launcher.folder.run_id

    @property
    def folder(self) -> Path:
        return self.launcher.folder.path

    @property
    def active(self) -> bool:
        return not RunState(self.state).final and not self.detached

    @property
    def remote(self) -> bool:
        return self.spec.target.remote

    def start(self) -> None:
        self._timer.start()
        self.launcher.start()

    def cancel(self) -> None:
        self.launcher.cancel()

    def detach(self) -> None:
        """Stop following a remote run and leave it running on the target (the window
        is closing); its run folder keeps what arrived so far."""
        self.detached = True
        self._timer.stop()

    def elapsed(self) -> float | None:
        if self.started_at is None:
            return None
        return (self.ended_at or time.time()) - self.started_at

    # ---- launcher threads ------------------------------------------------------------
    def _observe(self, ev) -> None:
        if ev.kind == "output" and not self.detached:   # detached: nothing more to show
            with self._lock:
                self._buf.append(self._clip(ev.stream, ev.line, ev.end))

    def _clip(self, stream: str, text: str, end: str) -> tuple[str, str, str, int]:
        """Keep at most MAX_LINE_CHARS of a line (a 100 MB line must not reach the
        GUI); what is cut is counted in bytes. Called under the lock."""
        n = self._line_chars.get(stream, 0)
        room = max(0, MAX_LINE_CHARS - n)
        cut = len(text[room:].encode("utf-8", errors="replace")) if len(text) > room else 0
        self._line_chars[stream] = n + len(text) if end == "" else 0
        return (stream, text[:room], end, cut)

    # ---- GUI thread ------------------------------------------------------------------
    def _flush(self) -> None:
        with self._lock:
            batch, self._buf = self._buf, []
        if batch:
            self.line_count += sum(1 for item in batch if item[2] == "\n")
            self.lines_appended.emit(batch)

    def _on_posted(self, _kind: str, ev) -> None:
        if self.detached:
            return
        self._flush()                    # output before the event that followed it
        if ev.kind == "state":
            self.state, self.reason = ev.state.value, ev.reason or ""
            if ev.state == RunState.RUNNING:
                self.started_at = ev.time
            if ev.state.final:
                self.ended_at = ev.time
                self.started_at = self.started_at or ev.time
                self._timer.stop()
                self.result = self.launcher.result()
            self.state_changed.emit(self.state, self.reason)
            if ev.state.final:
                self.finished.emit(self.result)
        elif ev.kind == "telemetry":
            self.telemetry.add(ev.samples)
            self.telemetry_added.emit(len(ev.samples))
        elif ev.text:
            self.message_added.emit(ev.text)


class RunManager(QObject):
    """The window's runs. ``trace_ready(list)``: a run finished with trace inputs."""

    session_started = Signal(object)
    session_finished = Signal(object)
    trace_ready = Signal(list)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.asker = HostKeyAsker(parent)
        self.sessions: list[RunSession] = []

    def start(self, spec: RunSpec) -> RunSession:
        s = RunSession(spec, self.asker, self)
        s.finished.connect(lambda res, s=s: self._on_session_finished(s, res))
        self.sessions.append(s)
        s.start()
        self.session_started.emit(s)
        return s

    def active(self) -> list[RunSession]:
        return [s for s in self.sessions if s.active]

    def _on_session_finished(self, s: RunSession, res: RunResult) -> None:
        self.session_finished.emit(s)
        if res.state == RunState.FINISHED and res.trace_inputs:
            self.trace_ready.emit(list(res.trace_inputs))

    def shutdown(self, detach_remote: bool = True, timeout: float = 20.0) -> list[RunSession]:
        """Cancel local runs (and remote ones unless ``detach_remote``), wait for their
        launchers to end; returns the remote runs left running."""
        self.asker.shutdown()
        left, stopping = [], []
        for s in self.active():
            if s.remote and detach_remote:
                s.detach()
                left.append(s)
            else:
                s.cancel()
                stopping.append(s)
        deadline = time.monotonic() + timeout
        for s in stopping:
            if s.launcher.wait(max(0.1, deadline - time.monotonic())) is None:
                log.warning("run %s did not stop within %gs", s.run_id, timeout)
        return left
