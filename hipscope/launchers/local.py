"""Run a program on this machine: a child process in its own process group.

The program's output goes byte for byte to the run folder's logs and, split by
:class:`~hipscope.launchers.base.LineSplitter`, to the observers; the pipes are read in
bounded chunks, so a line without end costs no more memory than a short one. When a log
cannot be written (a full disk) the pipes are still drained, the program is ended and the
run fails with the reason. Cancel sends SIGTERM to the whole process group (children and
grandchildren), then SIGKILL after a grace period.

If the hipscope process itself is killed (SIGKILL cannot be caught), the program's
process group lives on (it has its own session, out of reach of a terminal hang-up);
``hipscope runs`` then says the run's hipscope process is gone and whether the program
is still running (status.json records both processes' pid and start time).
"""

from __future__ import annotations

import errno
import logging
import os
import select
import signal
import subprocess
import threading
from typing import IO

from ..model.progress import Cancelled
from .base import Launcher, LaunchError, LineSplitter, RunState
from .detect import collect_provenance
from .hosts import LocalHost
from .profilers import get_profiler
from .rundir import process_identity
from .telemetry import TelemetryRunMixin

log = logging.getLogger(__name__)

#: seconds between SIGTERM and SIGKILL on cancel, and for output pipes to drain after
#: the program exits (a daemonised grandchild may hold them open)
KILL_GRACE_S = 3.0
#: bytes read from a pipe at a time
CHUNK = 64 * 1024
#: an unfinished line (a progress bar) is shown after the program paused this long
PARTIAL_LINE_S = 0.1


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte (a raw write may take only part of them)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def apply_env(base: dict[str, str], *changes: dict[str, str | None]) -> dict[str, str]:
    env = dict(base)
    for ch in changes:
        for k, v in ch.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
    return env


class LocalLauncher(TelemetryRunMixin, Launcher):
    kill_grace_s = KILL_GRACE_S

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.proc: subprocess.Popen | None = None
        self._wakeup = threading.Event()
        self._readers: list[threading.Thread] = []
        self._log_failure: str | None = None
        self.host = LocalHost()

    # ------------------------------------------------------------------ steps
    def _execute(self) -> int:
        spec, folder = self.spec, self.folder
        wrapped = self._wrap_command(str(folder.prof_dir))
        for name, data in wrapped.files.items():
            (folder.prof_dir / name).write_bytes(data)
        prov = collect_provenance(self.host, {**spec.env, **wrapped.env})
        folder.write_json("provenance.json", prov)
        folder.update_status(argv=wrapped.argv)
        self.check_cancel()
        env = apply_env(dict(os.environ), spec.env, wrapped.env)
        cwd = os.path.expanduser(spec.cwd) if spec.cwd else None
        try:
            self.proc = subprocess.Popen(
                wrapped.argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except FileNotFoundError as exc:
            what = exc.filename if exc.filename else wrapped.argv[0]
            raise LaunchError(f"cannot start {what!r}: no such program or directory") from None
        except PermissionError as exc:
            raise LaunchError(f"cannot start {wrapped.argv[0]!r}: {exc.strerror}") from None
        folder.update_status(pid=self.proc.pid, program=process_identity(self.proc.pid))
        for stream, pipe in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr)):
            t = threading.Thread(target=self._pump, args=(stream, pipe), daemon=True,
                                 name=f"{stream}-{folder.run_id}")
            t.start()
            self._readers.append(t)
        threading.Thread(target=self._reap, daemon=True, name=f"wait-{folder.run_id}").start()
        self.set_state(RunState.RUNNING)
        self._start_telemetry()
        self._wakeup.wait()
        if self.cancelled and self.proc.poll() is None:
            self._kill_group()
            raise Cancelled()
        ended = bool(self._log_failure) and self.proc.poll() is None
        if ended:
            self._kill_group()
        status = self.proc.wait()
        self._drain()
        if self._log_failure:
            raise LaunchError(self._log_failure + ("; the program was ended" if ended else ""))
        self.check_cancel()
        return status

    def _collect(self) -> None:
        self._stop_telemetry()
        prof_dir = self.folder.prof_dir
        self.artifacts = sorted(p for p in prof_dir.rglob("*") if p.is_file())
        self.trace_inputs = get_profiler(self.spec.profiler.name).trace_inputs(
            prof_dir, self.spec.profiler.options)

    # ------------------------------------------------------------------ helpers
    def _pump(self, stream: str, pipe: IO[bytes]) -> None:
        """Copy one pipe to its log and the observers until the program closes it."""
        fd, split = pipe.fileno(), LineSplitter()
        log_fd: int | None = os.open(self.folder.log_path(stream),
                                     os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            while data := os.read(fd, CHUNK):
                if log_fd is not None:
                    log_fd = self._write_log(stream, log_fd, data)
                self._output_pieces(stream, split.feed(data))
                if split.pending and not select.select([fd], [], [], PARTIAL_LINE_S)[0]:
                    self._output_pieces(stream, split.flush())
            self._output_pieces(stream, split.close())
        finally:
            pipe.close()
            if log_fd is not None:
                os.close(log_fd)

    def _write_log(self, stream: str, log_fd: int, data: bytes) -> int | None:
        """Append to the log; on failure stop writing (the pipe is still drained),
        note why and wake the run to end the program. None once writing failed."""
        try:
            _write_all(log_fd, data)
            return log_fd
        except OSError as exc:
            os.close(log_fd)
            name = self.folder.log_path(stream).name
            what = "disk full" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else \
                "cannot write the log"
            if self._log_failure is None:
                self._log_failure = (f"{what}: could not write {name} in {self.folder.path} "
                                     f"({exc.strerror})")
                self.message(f"{what}: {name} cannot be written ({exc.strerror}); "
                             "ending the program")
                self._wakeup.set()
            return None

    def _output_pieces(self, stream: str, pieces: list[tuple[str, str]]) -> None:
        for text, end in pieces:
            self.output(stream, text, end)

    def _reap(self) -> None:
        assert self.proc is not None
        self.proc.wait()
        self._wakeup.set()

    def _wake(self) -> None:
        self._wakeup.set()

    def _signal_group(self, sig: int) -> bool:
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def _kill_group(self) -> None:
        """SIGTERM the program's process group; SIGKILL what is left after the grace."""
        assert self.proc is not None
        self._signal_group(signal.SIGTERM)
        try:
            self.proc.wait(self.kill_grace_s)
        except subprocess.TimeoutExpired:
            pass
        # the leader may be gone while its children live on: KILL the group regardless
        self._signal_group(signal.SIGKILL)
        self.proc.wait()
        self.exit_status = self.proc.returncode
        self.folder.update_status(exit_status=self.exit_status)
        self._drain()

    def _drain(self) -> None:
        for t in self._readers:
            t.join(self.kill_grace_s)
        if any(t.is_alive() for t in self._readers):
            # leftover members of the group hold the pipes open: end them
            self.message("processes left behind by the program were ended")
            self._signal_group(signal.SIGKILL)
            for t in self._readers:
                t.join(self.kill_grace_s)

    def _cleanup(self) -> None:
        self._stop_telemetry()
        if self.proc is not None and self.proc.poll() is None:
            self._kill_group()
