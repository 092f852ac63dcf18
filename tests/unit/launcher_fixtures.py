"""Helpers for the launcher tests: waiting on conditions, a real OpenSSH sshd on
127.0.0.1, process-tree utilities, the rocprofv3 replay stand-in on PATH.

The sshd is the real daemon (``/usr/sbin/sshd``, Debian package ``openssh-server``,
installed by ``scripts/install-system-deps.sh``) with its own host key, user key,
authorized_keys, known_hosts and ssh config in a temporary folder.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
SSHD = shutil.which("sshd", path="/usr/sbin:/usr/local/sbin:/sbin:" + os.environ.get("PATH", ""))


def wait_until(pred, timeout: float = 20.0, what: str = "condition", step: float = 0.02):
    """Poll ``pred`` until true; fail the test with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    ev = threading.Event()
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g}s waiting for {what}")
        ev.wait(step)


class Recorder:
    """An observer that keeps every event and lets tests wait on them."""

    def __init__(self):
        self.events = []
        self._cv = threading.Condition()

    def __call__(self, ev) -> None:
        with self._cv:
            self.events.append(ev)
            self._cv.notify_all()

    def lines(self, stream: str = "stdout") -> list[str]:
        with self._cv:
            return [e.line for e in self.events if e.kind == "output" and e.stream == stream]

    def states(self) -> list[str]:
        with self._cv:
            return [e.state.value for e in self.events if e.kind == "state"]

    def messages(self) -> list[str]:
        with self._cv:
            return [e.text for e in self.events if e.kind == "message"]

    def wait_for(self, pred, timeout: float = 30.0, what: str = "an event"):
        deadline = time.monotonic() + timeout
        with self._cv:
            while not pred(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    events = [(e.kind, e.state, e.line, e.text) for e in self.events][-20:]
                    pytest.fail(f"timed out after {timeout:g}s waiting for {what}; "
                                f"events: {events}")
                self._cv.wait(left)


# --------------------------------------------------------------------------- processes

def children_of(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            out.append(int(d.name))
    return out


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        kids = children_of(todo.pop())
        out += kids
        todo += kids
    return out


def alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for a reaper)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def kill_pids(pids) -> None:
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


# --------------------------------------------------------------------------- sshd

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keygen(path: Path, comment: str = "hipscope-test") -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment,
                    "-f", str(path)], check=True, timeout=30)
    return path


def key_fingerprint(pub: Path) -> str:
    out = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(pub)],
                         capture_output=True, text=True, check=True, timeout=30).stdout
    return out.split()[1]


@dataclass
class Sshd:
    dir: Path
    port: int
    proc: subprocess.Popen
    host_key: Path
    user_key: Path
    wrong_key: Path
    other_host_key: Path
    log: Path

    @property
    def label(self) -> str:
        return f"[127.0.0.1]:{self.port}"

    def known_hosts(self, name: str, key: Path | None = None) -> Path:
        """A known_hosts file holding ``key`` (default: the real host key) or nothing."""
        p = self.dir / name
        p.write_text("" if key is False else
                     f"{self.label} {(key or self.host_key).with_suffix('.pub').read_text()}"
                     if key is not False else "")
        return p

    def ssh_config(self, name: str, known_hosts: Path, key: Path | None = None) -> Path:
        p = self.dir / name
        p.write_text(
            f"Host testhost\n  HostName 127.0.0.1\n  Port {self.port}\n  User root\n"
            f"  IdentityFile {key or self.user_key}\n  UserKnownHostsFile {known_hosts}\n"
            f"  ServerAliveInterval 2\n  ServerAliveCountMax 3\n\n"
            f"Host jumped\n  HostName 127.0.0.1\n  Port {self.port}\n  User root\n"
            f"  IdentityFile {key or self.user_key}\n  UserKnownHostsFile {known_hosts}\n"
            f"  ProxyJump testhost\n")
        return p

    def add_user(self, name: str, shell: str) -> str:
        """A throwaway login user (shell ``shell``) with the test key; see del_user."""
        subprocess.run(["useradd", "-m", "-s", shell, "-p", "*", name], check=True,
                       capture_output=True, timeout=30)
        try:
            ssh = Path(os.path.expanduser(f"~{name}")) / ".ssh"
            ssh.mkdir(mode=0o700)
            (ssh / "authorized_keys").write_text(self.user_key.with_suffix(".pub").read_text())
            for p in (ssh, ssh / "authorized_keys"):
                shutil.chown(p, name, name)
        except BaseException:
            self.del_user(name)
            raise
        return name

    @staticmethod
    def del_user(name: str) -> None:
        subprocess.run(["userdel", "-f", "-r", name], capture_output=True, timeout=30)

    def session_pids(self) -> list[int]:
        """Every process the daemon forked for connections (not the listener)."""
        return descendants(self.proc.pid)

    def drop_connections(self) -> list[int]:
        pids = self.session_pids()
        kill_pids(pids)
        return pids


def start_sshd(base: Path, extra_config: list[str] = ()) -> Sshd:
    if SSHD is None:
        pytest.skip("OpenSSH's sshd is not installed (Debian: openssh-server); run "
                    "scripts/install-system-deps.sh")
    if os.geteuid() != 0:
        pytest.skip("the test sshd must run as root (it serves logins as root)")
    base.mkdir(parents=True, exist_ok=True)
    host_key = keygen(base / "host_ed25519", "host")
    other = keygen(base / "other_host_ed25519", "impostor")
    user_key = keygen(base / "user_ed25519")
    wrong = keygen(base / "wrong_ed25519", "not-authorized")
    (base / "authorized_keys").write_text(user_key.with_suffix(".pub").read_text())
    port = free_port()
    sftp = "/usr/lib/openssh/sftp-server"
    cfg = base / "sshd_config"
    cfg.write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {host_key}",
        f"PidFile {base / 'sshd.pid'}", "UsePAM no", "StrictModes no",
        f"AuthorizedKeysFile {base / 'authorized_keys'} .ssh/authorized_keys",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no",
        "PermitRootLogin prohibit-password", "AllowTcpForwarding yes",
        f"Subsystem sftp {sftp if os.path.exists(sftp) else 'internal-sftp'}",
        "MaxStartups 50", "MaxSessions 50", "LogLevel VERBOSE", "PrintMotd no",
        *extra_config, ""]))
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)   # privilege separation dir
    log = base / "sshd.log"
    proc = subprocess.Popen([SSHD, "-D", "-f", str(cfg), "-E", str(log)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)

    def listening() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"sshd exited with {proc.returncode}: "
                        f"{proc.stderr.read().decode(errors='replace')}"
                        f"{log.read_text() if log.exists() else ''}")
        with socket.socket() as s:
            s.settimeout(0.5)
            return s.connect_ex(("127.0.0.1", port)) == 0
    wait_until(listening, 20, "sshd to listen")
    return Sshd(base, port, proc, host_key, user_key, wrong, other, log)


def stop_sshd(d: Sshd) -> None:
    kill_pids(d.session_pids())
    d.proc.terminate()
    try:
        d.proc.wait(10)
    except subprocess.TimeoutExpired:
        d.proc.kill()
        d.proc.wait(10)
    if d.proc.stderr:
        d.proc.stderr.close()


# --------------------------------------------------------------------------- rocprofv3 stand-in

def install_rocprofv3_standin(bindir: Path) -> Path:
    """``bindir/rocprofv3``: runs tests/data/replay_rocprofv3.py (clearly a stand-in)."""
    bindir.mkdir(parents=True, exist_ok=True)
    exe = bindir / "rocprofv3"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {DATA / 'replay_rocprofv3.py'} \"$@\"\n")
    exe.chmod(0o755)
    return exe
