"""Run a program on another machine over SSH, detached, so a dropped link loses nothing.

The program starts in its own session and process group (``setsid``) with its output
going to files in a remote run folder and its exit status written to a file when it
ends; the SSH session only starts it. The launcher then copies new bytes of the remote
logs into the local ones (the local log's size *is* the resume offset), reconnects
when the link drops, and collects the profiler's folder by SFTP at the end. Cancel
sends SIGTERM (then SIGKILL) to the remote process group.

Remote layout: ``<remote_dir>/<run id>/{stdout.log, stderr.log, pgid, exit_status,
prof/}``, created 0700 with logs 0600. Scripts reach the target's ``sh`` on stdin
(:meth:`.ssh.SSHHost.run_script`), never through the login shell's parser.
"""

from __future__ import annotations

import logging
import shlex
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..model.progress import Cancelled
from .base import Launcher, LaunchError, RunState
from .detect import collect_provenance
from .downloads import ArtifactRefused
from .profilers import Wrapped, get_profiler
from .ssh import HostKeyCallback, LinkLost, SSHAuthError, SSHError, SSHHost
from .telemetry import TelemetryRunMixin

log = logging.getLogger(__name__)

q = shlex.quote


class RemoteTail:
    """Copies what was appended to remote log files into local ones; emits lines.

    The offset of each stream is the size of its local log, so after a reconnect (or a
    restart of the tail) streaming resumes at the exact byte: nothing lost, nothing twice.
    """

    def __init__(self, host, pairs: list[tuple[str, str, Path]],
                 emit: Callable[[str, str], None]):
        self.host, self.pairs, self.emit = host, pairs, emit
        self._partial: dict[str, bytes] = {s: b"" for s, _, _ in pairs}

    def offset(self, stream: str) -> int:
        for s, _, local in self.pairs:
            if s == stream:
                return local.stat().st_size if local.exists() else 0
        raise KeyError(stream)

    def poll(self) -> bool:
        """Copy new bytes; True when something arrived."""
        got = False
        for stream, remote, local in self.pairs:
            while True:
                data = self.host.read_from(remote, self.offset(stream))
                if not data:
                    break
                got = True
                with open(local, "ab") as fh:
                    fh.write(data)
                buf = self._partial[stream] + data
                *lines, self._partial[stream] = buf.split(b"\n")
                for ln in lines:
                    self.emit(stream, ln.decode("utf-8", errors="replace").rstrip("\r"))
        return got

    def flush(self) -> None:
        for stream, rest in self._partial.items():
            if rest:
                self.emit(stream, rest.decode("utf-8", errors="replace").rstrip("\r"))
            self._partial[stream] = b""


def env_lines(changes: dict[str, str | None]) -> tuple[list[str], list[str]]:
    """The environment changes as two parts: ``outer`` lines for the script sent on
    stdin, which carry the values in ``HIPSCOPE_ENV_<i>`` variables, and ``inner``
    commands for the program's shell, which refer to them by name. So no value (a
    token, a key) is ever in an argv on the target, where ``ps`` would show it, and
    only the program sees the changes (the watcher keeps the login environment)."""
    outer, inner = [], []
    for i, (k, v) in enumerate(changes.items()):
        if v is None:
            inner.append(f"unset -v {k}")
        else:
            outer.append(f"HIPSCOPE_ENV_{i}={q(v)}; export HIPSCOPE_ENV_{i}")
            inner.append(f'{k}="$HIPSCOPE_ENV_{i}"; export {k}; unset HIPSCOPE_ENV_{i}')
    return outer, inner


def detached_script(rd: str, argv: list[str], env: dict[str, str | None],
                    cwd: str | None) -> str:
    """The ``sh`` script that starts ``argv`` detached; every word is shlex-quoted.

    It runs under umask 077, so the run folder's logs and status files are private
    (0600); the program gets the login umask back. ``setsid -f`` puts the watcher
    shell in a new session (an SSH hang-up cannot reach it); the watcher runs the
    program under ``setsid -w`` so the program leads its own process group (``pgid``,
    for Cancel) and writes ``exit_status`` atomically at the end.
    """
    outer, inner_env = env_lines(env)
    inner = "; ".join([f"echo $$ > {q(rd + '/pgid')}", 'umask "$HIPSCOPE_UMASK"',
                       *inner_env, "unset HIPSCOPE_UMASK", f"exec {shlex.join(argv)}"])
    cd = ""
    if cwd:
        cd = (f"cd {q(cwd)} 2>> {q(rd + '/stderr.log')} || "
              f"{{ echo 126 > {q(rd + '/exit_status')}; exit 126; }}; ")
    watcher = (f"{cd}setsid -w sh -c {q(inner)} > {q(rd + '/stdout.log')} "
               f"2> {q(rd + '/stderr.log')} < /dev/null; "
               f"echo $? > {q(rd + '/exit_status.tmp')}; "
               f"mv {q(rd + '/exit_status.tmp')} {q(rd + '/exit_status')}")
    return "\n".join([
        "HIPSCOPE_UMASK=$(umask); export HIPSCOPE_UMASK", "umask 077", *outer,
        f": > {q(rd + '/stdout.log')}; : > {q(rd + '/stderr.log')}",
        f"setsid -f sh -c {q(watcher)} > /dev/null 2>&1 < /dev/null"])


# The mixins are Launchers to mypy (they use its attributes) and plain classes at run time.
if TYPE_CHECKING:
    _LauncherBase = Launcher
else:
    _LauncherBase = object


class RemoteRunMixin(_LauncherBase):
    """Reconnect-aware helpers shared by the SSH and Slurm launchers.

    A subclass implements ``_start`` (set up, start the program, follow it to its end);
    a dropped link before the program started fails the run (nothing to resume).
    """

    poll_interval = 0.25
    reconnect_timeout = 120.0

    host: SSHHost
    _wakeup: threading.Event

    def __init__(self, spec, folder=None, observers=None,
                 host_key_callback: HostKeyCallback | None = None):
        super().__init__(spec, folder=folder, observers=observers)
        self.host_key_callback = host_key_callback
        self.host = None  # type: ignore[assignment]
        self._wakeup = threading.Event()
        self.remote_dir: str | None = None

    def _wake(self) -> None:
        self._wakeup.set()

    def _execute(self) -> int:
        try:
            return self._start()
        except SSHError as exc:   # a drop before the program started: nothing to resume
            raise LaunchError(str(exc)) from None

    def _start(self) -> int:
        raise NotImplementedError

    def _connect(self, target, callback: HostKeyCallback | None) -> None:
        try:
            self.host = SSHHost.connect(target, callback)
        except SSHError as exc:
            raise LaunchError(str(exc)) from None

    def _reconnect(self, why: LinkLost) -> None:
        """Re-open the link, retrying with back-off until ``reconnect_timeout``."""
        self.message(f"connection to {self.host.name} lost ({why}); reconnecting")
        deadline = time.monotonic() + self.reconnect_timeout
        delay = 0.2
        while True:
            try:
                self.host.reconnect()
                self.message(f"reconnected to {self.host.name}; resuming")
                return
            except SSHAuthError as exc:
                raise LaunchError(str(exc)) from None
            except SSHError as exc:
                if time.monotonic() + delay > deadline:
                    raise LaunchError(
                        f"lost the connection to {self.host.name} and could not reconnect "
                        f"within {self.reconnect_timeout:g}s ({exc}); the program may still "
                        f"be running on the target") from None
            self._wakeup.wait(delay)
            self._wakeup.clear()
            delay = min(delay * 2, 5.0)

    def _retrying(self, fn):
        """Call ``fn()``; on a dropped link reconnect and call it again."""
        while True:
            try:
                return fn()
            except LinkLost as exc:
                self._reconnect(exc)

    def _upload_files(self, wrapped: Wrapped, prof_dir: str) -> None:
        for name, data in wrapped.files.items():
            self.host.write_bytes(f"{prof_dir}/{name}", data,
                                  0o755 if name.endswith((".py", ".sh")) else 0o644)

    def _remote_tail(self, rd: str) -> RemoteTail:
        """A tail of ``rd``'s stdout and stderr logs into the run folder's logs."""
        return RemoteTail(self.host, [(stream, f"{rd}/{stream}.log",
                                       self.folder.log_path(stream))
                                      for stream in ("stdout", "stderr")], self.output)

    def _collect(self) -> None:
        """Download ``<remote_dir>/prof`` into the run folder (reconnecting if need be)."""
        if self.remote_dir is None or self.host is None:
            return
        if self.state != RunState.COLLECTING and not getattr(self.host, "alive", True):
            return   # after a failure on a dead link: do not wait for a reconnect again
        rd = self.remote_dir

        limits = self.spec.target.artifact_limits()

        def fetch() -> list[Path]:
            return self.host.download_tree(f"{rd}/prof", self.folder.prof_dir, limits)
        try:
            self.artifacts = self._retrying(fetch)
        except ArtifactRefused as exc:
            raise LaunchError(str(exc)) from None
        self.trace_inputs = get_profiler(self.spec.profiler.name).trace_inputs(
            self.folder.prof_dir, self.spec.profiler.options)


class SSHLauncher(RemoteRunMixin, TelemetryRunMixin, Launcher):
    host: SSHHost
    kill_grace_s = 3.0
    confirm_timeout = 30.0

    # ------------------------------------------------------------------ steps
    def _start(self) -> int:
        spec = self.spec
        self.message(f"connecting to {spec.target.host}")
        self._connect(spec.target, self.host_key_callback)
        self.check_cancel()
        rd = self.host.abspath(f"{spec.target.remote_dir.rstrip('/')}/{self.folder.run_id}")
        self.remote_dir = rd
        self.folder.update_status(remote_host=self.host.name, remote_dir=rd)
        wrapped = self._wrap_command(f"{rd}/prof")
        self.host.makedirs(f"{rd}/prof")
        self._upload_files(wrapped, f"{rd}/prof")
        self.folder.write_json("provenance.json",
                               collect_provenance(self.host, {**spec.env, **wrapped.env}))
        self.folder.update_status(argv=wrapped.argv)
        self.check_cancel()
        cwd = spec.cwd
        if cwd and cwd.startswith("~"):
            cwd = self.host.abspath(cwd) if cwd != "~" else self.host.home()
        script = detached_script(rd, wrapped.argv, {**spec.env, **wrapped.env}, cwd)
        res = self.host.run_script(script, timeout=30)
        if not res.ok:
            raise LaunchError(f"could not start the program on {self.host.name}: "
                              f"{res.stderr.strip() or f'exit {res.returncode}'}")
        self.set_state(RunState.RUNNING)
        self._start_telemetry()
        return self._follow(rd)

    def _follow(self, rd: str) -> int:
        tail = self._remote_tail(rd)
        term_at: float | None = None
        kill_at: float | None = None
        while True:
            now = time.monotonic()
            if self.cancelled and term_at is None:
                if self._retrying(lambda: self._signal_remote(rd, "TERM")):
                    term_at = now   # else: not started yet; try again next round
            elif term_at is not None and kill_at is None and now - term_at > self.kill_grace_s:
                self._retrying(lambda: self._signal_remote(rd, "KILL"))
                kill_at = now
            status = self._retrying(lambda: self._poll_once(tail, rd))
            if status is not None:
                break
            if kill_at is not None and now - kill_at > self.confirm_timeout:
                self.message(f"the program on {self.host.name} did not confirm its end "
                             f"{self.confirm_timeout:g}s after SIGKILL")
                break
            self._wakeup.wait(self.poll_interval)
            self._wakeup.clear()
        tail.flush()
        self.exit_status = status
        if self.cancelled:
            raise Cancelled()
        return status

    def _poll_once(self, tail: RemoteTail, rd: str) -> int | None:
        tail.poll()
        text = self.host.read_text(f"{rd}/exit_status")
        if text is None or not text.strip():
            return None
        tail.poll()   # the exit status is written after the program's last byte
        try:
            return int(text.strip())
        except ValueError:
            raise LaunchError(f"unreadable exit status {text.strip()!r} in {rd}") from None

    def _signal_remote(self, rd: str, sig: str) -> bool:
        """Signal the remote process group; False when its pgid is not written yet."""
        text = self.host.read_text(f"{rd}/pgid")
        if not text or not text.strip().isdigit():
            return False
        pgid = int(text.strip())
        if pgid > 1:
            res = self.host.run(["kill", "-s", sig, "--", f"-{pgid}"], timeout=15)
            if not res.ok and "No such process" not in res.stderr:
                self.message(f"kill -s {sig} on {self.host.name} failed: "
                             f"{res.stderr.strip()}")
        return True

    def _collect(self) -> None:
        self._stop_telemetry()
        super()._collect()

    def _cleanup(self) -> None:
        self._stop_telemetry()
        if self.host is not None:
            self.host.close()
