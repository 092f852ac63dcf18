"""SSH connections (paramiko): ``~/.ssh/config``, keys and agent, known_hosts checks,
keepalives, ProxyJump, and :class:`SSHHost`, the :class:`~.hosts.Host` over SSH.

Host keys are always verified against known_hosts. An unknown host is put to the
``host_key_callback(host, key_type, fingerprint) -> bool`` (the GUI asks the user; the
CLI prompts on a terminal); accepted keys are appended to known_hosts, as OpenSSH does.
A key that differs from the known one is refused, with the command that removes the
old key when the change is expected. No password is asked for or stored: keys from
IdentityFile (or the default files) and the ssh-agent are used.
"""

from __future__ import annotations

import base64
import getpass
import hashlib
import logging
import os
import select
import shlex
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import paramiko

from .hosts import CommandResult

log = logging.getLogger(__name__)

HostKeyCallback = Callable[[str, str, str], bool]


class SSHError(Exception):
    """Connecting failed; ``str()`` is one sentence (or two) for people."""


class HostKeyUnknown(SSHError):
    pass


class HostKeyChanged(SSHError):
    pass


class SSHAuthError(SSHError):
    pass


class SSHConnectError(SSHError):
    pass


class LinkLost(SSHError):
    """The connection dropped (or stopped answering) during an operation."""


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's ``SHA256:...`` fingerprint (base64, no padding)."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def _host_label(hostname: str, port: int) -> str:
    return hostname if port == 22 else f"[{hostname}]:{port}"


@dataclass
class SSHParams:
    alias: str
    hostname: str
    port: int = 22
    user: str = field(default_factory=getpass.getuser)
    identity_files: list[str] = field(default_factory=list)
    proxy_jump: list[str] = field(default_factory=list)
    known_hosts: str = "~/.ssh/known_hosts"
    keepalive_s: float = 15.0
    keepalive_count: int = 3
    connect_timeout: float = 15.0

    @property
    def op_timeout(self) -> float:
        """An operation that waits longer than this means a dead link."""
        return self.keepalive_s * self.keepalive_count


def resolve(alias: str, user: str | None = None, port: int | None = None,
            config_path: str | None = None, known_hosts: str | None = None) -> SSHParams:
    """Host parameters from the ssh config (Host, HostName, User, Port, IdentityFile,
    ProxyJump, UserKnownHostsFile, ServerAliveInterval/CountMax, ConnectTimeout)."""
    cfg_file = Path(os.path.expanduser(config_path or "~/.ssh/config"))
    cfg = paramiko.SSHConfig.from_path(str(cfg_file)) if cfg_file.is_file() \
        else paramiko.SSHConfig()
    d = cfg.lookup(alias)
    p = SSHParams(alias=alias, hostname=d.get("hostname", alias))
    p.port = int(port or d.get("port", 22))
    p.user = user or d.get("user") or getpass.getuser()
    p.identity_files = [os.path.expanduser(f) for f in d.get("identityfile", [])]
    jump = d.get("proxyjump")
    if jump and jump.lower() != "none":
        p.proxy_jump = [j.strip() for j in jump.split(",") if j.strip()]
    ukh = d.get("userknownhostsfile")
    p.known_hosts = os.path.expanduser(known_hosts or (ukh.split()[0] if ukh else
                                                       "~/.ssh/known_hosts"))
    if d.get("serveraliveinterval"):
        p.keepalive_s = max(1.0, float(d["serveraliveinterval"]))
    if d.get("serveralivecountmax"):
        p.keepalive_count = max(1, int(d["serveralivecountmax"]))
    if d.get("connecttimeout"):
        p.connect_timeout = float(d["connecttimeout"])
    return p


class _AskPolicy(paramiko.MissingHostKeyPolicy):
    """Unknown host key: ask the callback; save to known_hosts when accepted."""

    def __init__(self, callback: HostKeyCallback | None, known_hosts: str):
        self.callback, self.known_hosts = callback, known_hosts

    def missing_host_key(self, client, hostname, key):
        fp = fingerprint(key)
        ok = bool(self.callback and self.callback(hostname, key.get_name(), fp))
        if not ok:
            raise HostKeyUnknown(
                f"the host key of {hostname} ({key.get_name()} {fp}) is not in "
                f"{self.known_hosts} and was not accepted")
        client.get_host_keys().add(hostname, key.get_name(), key)
        path = Path(self.known_hosts)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(path, "a") as fh:
            fh.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        log.info("added %s (%s) to %s", hostname, fp, path)


def _changed_message(hostname: str, port: int, known_hosts: str, exc) -> str:
    label = _host_label(hostname, port)
    return (f"the host key of {label} has CHANGED: {known_hosts} has "
            f"{exc.expected_key.get_name()} {fingerprint(exc.expected_key)}, the server offered "
            f"{exc.key.get_name()} {fingerprint(exc.key)}. Someone may be intercepting the "
            f"connection (man in the middle), or the host was reinstalled; hipscope refuses to "
            f"connect. If the change is expected, remove the old key with: "
            f"ssh-keygen -f {shlex.quote(known_hosts)} -R {shlex.quote(label)}")


def open_client(p: SSHParams, host_key_callback: HostKeyCallback | None,
                config_path: str | None = None, _chain: list | None = None
                ) -> tuple[paramiko.SSHClient, list[paramiko.SSHClient]]:
    """A connected client (through the ProxyJump chain) and the jump clients to close."""
    jumps: list[paramiko.SSHClient] = [] if _chain is None else _chain
    sock = None
    if p.proxy_jump:
        via = None
        for hop in p.proxy_jump:
            user, _, hostport = hop.rpartition("@")
            hname, _, hport = hostport.partition(":")
            hp = resolve(hname, user or None, int(hport) if hport else None, config_path,
                         known_hosts=p.known_hosts)
            hp.proxy_jump = []
            hsock = via.get_transport().open_channel(
                "direct-tcpip", (hp.hostname, hp.port), ("127.0.0.1", 0)) if via else None
            via = _connect(hp, host_key_callback, hsock)
            jumps.append(via)
        sock = via.get_transport().open_channel("direct-tcpip", (p.hostname, p.port),
                                                ("127.0.0.1", 0))
    return _connect(p, host_key_callback, sock), jumps


def _connect(p: SSHParams, cb: HostKeyCallback | None, sock) -> paramiko.SSHClient:
    client = paramiko.SSHClient()
    if os.path.isfile(p.known_hosts):
        client.load_host_keys(p.known_hosts)
    if os.path.isfile("/etc/ssh/ssh_known_hosts"):
        client.load_system_host_keys("/etc/ssh/ssh_known_hosts")
    client.set_missing_host_key_policy(_AskPolicy(cb, p.known_hosts))
    keys = [k for k in p.identity_files if os.path.isfile(k)]
    where = f"{p.user}@{_host_label(p.hostname, p.port)}"
    try:
        client.connect(p.hostname, p.port, username=p.user, key_filename=keys or None,
                       allow_agent=True, look_for_keys=not keys, timeout=p.connect_timeout,
                       banner_timeout=p.connect_timeout, auth_timeout=p.connect_timeout,
                       sock=sock)
    except paramiko.BadHostKeyException as exc:
        client.close()
        raise HostKeyChanged(_changed_message(p.hostname, p.port, p.known_hosts, exc)) from None
    except HostKeyUnknown:
        client.close()
        raise
    except paramiko.AuthenticationException as exc:
        client.close()
        tried = ", ".join(keys) if keys else "the default key files"
        agent = " and the ssh-agent's keys" if os.environ.get("SSH_AUTH_SOCK") else ""
        raise SSHAuthError(f"authentication to {where} failed: the server refused {tried}"
                           f"{agent} ({exc}). Check IdentityFile/User in the ssh config, or "
                           f"load the right key into ssh-agent") from None
    except (paramiko.SSHException, OSError, EOFError) as exc:
        client.close()
        raise SSHConnectError(f"cannot connect to {where}: {exc}") from None
    tr = client.get_transport()
    tr.set_keepalive(max(1, int(p.keepalive_s)))
    return client


def is_link_error(exc: BaseException) -> bool:
    if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError,
                        NotADirectoryError, FileExistsError)):
        return False
    return isinstance(exc, (EOFError, paramiko.SSHException, OSError, TimeoutError))


class SSHHost:
    """A :class:`~.hosts.Host` over one SSH connection; :meth:`reconnect` replaces it."""

    def __init__(self, params: SSHParams, host_key_callback: HostKeyCallback | None,
                 config_path: str | None = None):
        self.params, self.callback, self.config_path = params, host_key_callback, config_path
        self.name = params.alias
        self._client: paramiko.SSHClient | None = None
        self._jumps: list[paramiko.SSHClient] = []
        self._sftp: paramiko.SFTPClient | None = None
        self._lock = threading.RLock()
        self._home: str | None = None

    @classmethod
    def connect(cls, target, host_key_callback: HostKeyCallback | None = None) -> SSHHost:
        p = resolve(target.host, target.user, target.port, target.ssh_config,
                    target.known_hosts)
        h = cls(p, host_key_callback, target.ssh_config)
        h.reconnect()
        return h

    # ------------------------------------------------------------------ connection
    def reconnect(self) -> None:
        with self._lock:
            self.close()
            self._client, self._jumps = open_client(self.params, self.callback,
                                                    self.config_path)

    def close(self) -> None:
        with self._lock:
            for c in [self._sftp, self._client, *reversed(self._jumps)]:
                if c is not None:
                    try:
                        c.close()
                    except Exception:  # closing a dead link may raise; it is gone anyway
                        pass
            self._sftp, self._client, self._jumps = None, None, []

    @property
    def alive(self) -> bool:
        tr = self._client.get_transport() if self._client else None
        return bool(tr and tr.is_active())

    def _transport(self) -> paramiko.Transport:
        tr = self._client.get_transport() if self._client else None
        if tr is None or not tr.is_active():
            raise LinkLost(f"the connection to {self.name} is down")
        return tr

    def sftp(self) -> paramiko.SFTPClient:
        with self._lock:
            if self._sftp is None:
                try:
                    self._sftp = paramiko.SFTPClient.from_transport(self._transport())
                except (paramiko.SSHException, OSError, EOFError) as exc:
                    raise LinkLost(f"SFTP to {self.name} failed: {exc}") from None
                self._sftp.get_channel().settimeout(self.params.op_timeout)
            return self._sftp

    def _sftp_call(self, fn):
        try:
            with self._lock:
                return fn(self.sftp())
        except LinkLost:
            raise
        except Exception as exc:
            if is_link_error(exc):
                with self._lock:
                    self._sftp = None
                raise LinkLost(f"the connection to {self.name} dropped: {exc!r}") from None
            raise

    # ------------------------------------------------------------------ commands
    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        return self.run_script(shlex.join(argv), timeout)

    def run_script(self, script: str, timeout: float = 30.0) -> CommandResult:
        """Run ``sh -c SCRIPT`` (so the login shell only sees one quoted word)."""
        try:
            chan = self._transport().open_session(timeout=self.params.op_timeout)
            chan.exec_command("sh -c " + shlex.quote(script))
        except LinkLost:
            raise
        except Exception as exc:
            if is_link_error(exc):
                raise LinkLost(f"the connection to {self.name} dropped: {exc!r}") from None
            raise
        try:
            return self._gather(chan, timeout)
        finally:
            chan.close()

    def _gather(self, chan: paramiko.Channel, timeout: float) -> CommandResult:
        out, err = bytearray(), bytearray()
        deadline = time.monotonic() + timeout
        while True:
            while chan.recv_ready():
                out += chan.recv(65536)
            while chan.recv_stderr_ready():
                err += chan.recv_stderr(65536)
            if chan.exit_status_ready() and not chan.recv_ready() \
                    and not chan.recv_stderr_ready():
                break
            if chan.closed or not self.alive:
                raise LinkLost(f"the connection to {self.name} dropped during a command")
            left = deadline - time.monotonic()
            if left <= 0:
                return CommandResult(124, out.decode(errors="replace"),
                                     f"timed out after {timeout:g}s")
            select.select([chan], [], [], min(left, 0.5))
        return CommandResult(chan.recv_exit_status(), out.decode(errors="replace"),
                             err.decode(errors="replace"))

    # ------------------------------------------------------------------ files
    def home(self) -> str:
        if self._home is None:
            self._home = self._sftp_call(lambda s: s.normalize("."))
        return self._home

    def abspath(self, path: str) -> str:
        if path.startswith("~/"):
            path = path[2:]
        return path if path.startswith("/") else f"{self.home().rstrip('/')}/{path}"

    def read_from(self, path: str, offset: int, limit: int = 1 << 20) -> bytes:
        def op(s):
            try:
                with s.open(path, "rb") as fh:
                    fh.seek(offset)
                    return fh.read(limit)
            except FileNotFoundError:
                return b""
        return self._sftp_call(op)

    def exists(self, path: str) -> bool:
        def op(s):
            try:
                s.stat(path)
                return True
            except FileNotFoundError:
                return False
        return self._sftp_call(op)

    def read_text(self, path: str) -> str | None:
        data = self._sftp_call(lambda s: _read_or_none(s, path))
        return None if data is None else data.decode(errors="replace")

    def write_bytes(self, path: str, data: bytes, mode: int = 0o644) -> None:
        def op(s):
            with s.open(path, "wb") as fh:
                fh.write(data)
            s.chmod(path, mode)
        self._sftp_call(op)

    def makedirs(self, path: str) -> None:
        res = self.run(["mkdir", "-p", path])
        if not res.ok:
            raise OSError(f"mkdir -p {path} on {self.name}: {res.stderr.strip()}")

    def download_tree(self, remote: str, local: Path) -> list[Path]:
        """Copy every regular file under ``remote`` to ``local`` (same layout)."""
        got: list[Path] = []

        def walk(s, rdir: str, ldir: Path) -> None:
            try:
                entries = s.listdir_attr(rdir)
            except FileNotFoundError:
                return
            ldir.mkdir(parents=True, exist_ok=True)
            for e in entries:
                rp, lp = f"{rdir}/{e.filename}", ldir / e.filename
                if stat.S_ISDIR(e.st_mode or 0):
                    walk(s, rp, lp)
                elif stat.S_ISREG(e.st_mode or 0):
                    s.get(rp, str(lp))
                    got.append(lp)
        self._sftp_call(lambda s: walk(s, remote, Path(local)))
        return sorted(got)


def _read_or_none(s: paramiko.SFTPClient, path: str) -> bytes | None:
    try:
        with s.open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None
