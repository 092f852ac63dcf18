"""SSH connections (paramiko): ssh_config, keys and agent, known_hosts checks,
keepalives, ProxyJump, and :class:`SSHHost`, the :class:`~.hosts.Host` over SSH.

The config is read as OpenSSH reads it: the user's file (or the one given, then alone,
as ``ssh -F``), then ``/etc/ssh/ssh_config``, with their ``Include`` files; the first
obtained value wins. Host keys
follow its policy: every ``UserKnownHostsFile`` and ``GlobalKnownHostsFile`` is read
(:mod:`.knownhosts`, line by line), keys are filed under ``HostKeyAlias`` when set,
``@revoked`` keys are refused, a changed key is refused with the command that removes
the old one, and an unknown host is refused (``StrictHostKeyChecking yes``), added
(``accept-new``, ``no``) or put to ``host_key_callback(host, key_type, fingerprint) ->
bool`` (``ask``, the default: the GUI asks; the CLI prompts on a terminal). Accepted
keys are appended, hashed under ``HashKnownHosts yes``. No password is asked for or
stored: keys from IdentityFile (or the default files) and the ssh-agent are used.
Commands reach the target's ``sh`` on stdin (:meth:`SSHHost.run_script`).
"""

from __future__ import annotations

import base64
import getpass
import hashlib
import logging
import os
import select
import shlex
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import paramiko

from . import knownhosts
from .downloads import ArtifactLimits, Download
from .hosts import CommandResult
from .sshconfig import GLOBAL_KNOWN_HOSTS, STRICT_VALUES, SSHConfigError, file_list, ssh_options

log = logging.getLogger(__name__)

HostKeyCallback = Callable[[str, str, str], bool]


class SSHError(Exception):
    """Connecting failed; ``str()`` is one sentence (or two) for people."""


class HostKeyUnknown(SSHError):
    pass


class HostKeyChanged(SSHError):
    pass


class HostKeyRevoked(SSHError):
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
    known_hosts_files: list[str] = field(default_factory=lambda: [
        os.path.expanduser("~/.ssh/known_hosts")])
    global_known_hosts: list[str] = field(default_factory=GLOBAL_KNOWN_HOSTS.split)
    strict: str = "ask"                  # StrictHostKeyChecking: ask|yes|accept-new|no
    host_key_alias: str | None = None
    hash_known_hosts: bool = False
    keepalive_s: float = 15.0
    keepalive_count: int = 3
    connect_timeout: float = 15.0

    @property
    def known_hosts(self) -> str:
        """The file accepted keys are written to (the first UserKnownHostsFile)."""
        return self.known_hosts_files[0]

    @property
    def key_name(self) -> str:
        """The name the host's keys are filed under: HostKeyAlias, else [host]:port."""
        return self.host_key_alias or _host_label(self.hostname, self.port)

    @property
    def op_timeout(self) -> float:
        """An operation that waits longer than this means a dead link."""
        return self.keepalive_s * self.keepalive_count


def resolve(alias: str, user: str | None = None, port: int | None = None,
            config_path: str | None = None, known_hosts: str | None = None) -> SSHParams:
    """Host parameters from the ssh config (Host, HostName, User, Port, IdentityFile,
    ProxyJump, UserKnownHostsFile, GlobalKnownHostsFile, StrictHostKeyChecking,
    HostKeyAlias, HashKnownHosts, ServerAliveInterval/CountMax, ConnectTimeout)."""
    try:
        d = ssh_options(alias, config_path)
    except SSHConfigError as exc:
        raise SSHConnectError(str(exc)) from None
    p = SSHParams(alias=alias, hostname=d.get("hostname", alias))
    p.port = int(port or d.get("port", 22))
    p.user = user or d.get("user") or getpass.getuser()
    p.identity_files = [os.path.expanduser(f) for f in d.get("identityfile", [])]
    jump = d.get("proxyjump")
    if jump and jump.lower() != "none":
        p.proxy_jump = [j.strip() for j in jump.split(",") if j.strip()]
    p.known_hosts_files = [os.path.expanduser(known_hosts)] if known_hosts else \
        file_list(d.get("userknownhostsfile"), "~/.ssh/known_hosts") or ["/dev/null"]
    p.global_known_hosts = file_list(d.get("globalknownhostsfile"), GLOBAL_KNOWN_HOSTS)
    strict = str(d.get("stricthostkeychecking", "ask")).lower()
    if strict not in STRICT_VALUES:
        raise SSHConnectError(f"StrictHostKeyChecking {strict!r} for {alias} is not one of "
                              f"yes, accept-new, no, ask")
    p.strict = STRICT_VALUES[strict]
    p.host_key_alias = d.get("hostkeyalias") or None
    p.hash_known_hosts = str(d.get("hashknownhosts", "no")).lower() in ("yes", "true")
    if d.get("serveraliveinterval"):
        p.keepalive_s = max(1.0, float(d["serveraliveinterval"]))
    if d.get("serveralivecountmax"):
        p.keepalive_count = max(1, int(d["serveralivecountmax"]))
    if d.get("connecttimeout"):
        p.connect_timeout = float(d["connecttimeout"])
    return p


class _KnownHostsPolicy(paramiko.MissingHostKeyPolicy):
    """Every host key decision, as OpenSSH makes it (paramiko is given no known keys,
    so it always asks here): revoked keys refused; known keys accepted; a different key
    refused as changed (``StrictHostKeyChecking no``: connects with a warning); unknown
    keys refused (``yes``), saved (``accept-new``, ``no``) or put to the callback."""

    def __init__(self, p: SSHParams, callback: HostKeyCallback | None):
        self.p, self.callback = p, callback
        self.kh = knownhosts.lookup(p.known_hosts_files + p.global_known_hosts, p.key_name)

    def preferred_types(self) -> list[str]:
        """Key algorithms to offer first: those already known for the host."""
        out: list[str] = []
        for k in self.kh.known:
            names = ["rsa-sha2-512", "rsa-sha2-256"] if k.get_name() == "ssh-rsa" \
                else [k.get_name()]
            out += [n for n in names if n not in out]
        return out

    def missing_host_key(self, client, hostname, key):
        p, name, fp = self.p, self.p.key_name, fingerprint(key)
        if self.kh.is_revoked(key):
            raise HostKeyRevoked(
                f"the host key of {name} ({key.get_name()} {fp}) is marked @revoked in "
                f"known_hosts; hipscope refuses to connect to a host offering a revoked key")
        if self.kh.matches(key):
            return
        if self.kh.known:
            old = next((k for k in self.kh.known if k.get_name() == key.get_name()),
                       self.kh.known[0])
            msg = _changed_message(name, self.kh.origin(old) or p.known_hosts, old, key)
            if p.strict != "no":
                raise HostKeyChanged(msg)
            log.warning("StrictHostKeyChecking no: connecting anyway. %s", msg)
            return
        if p.strict == "yes":
            raise HostKeyUnknown(
                f"the host key of {name} ({key.get_name()} {fp}) is not in "
                f"{', '.join(p.known_hosts_files)} and StrictHostKeyChecking is yes: refused. "
                f"Connect once with ssh or ssh-keyscan to add it")
        if p.strict == "ask" and not (self.callback and
                                      self.callback(name, key.get_name(), fp)):
            raise HostKeyUnknown(
                f"the host key of {name} ({key.get_name()} {fp}) is not in "
                f"{p.known_hosts} and was not accepted")
        knownhosts.append_key(p.known_hosts, name, key, p.hash_known_hosts)
        self.kh.known.append(key)
        self.kh.files.append(p.known_hosts)
        log.info("added %s (%s) to %s", name, fp, p.known_hosts)


def _changed_message(label: str, known_hosts: str, old: paramiko.PKey,
                     new: paramiko.PKey) -> str:
    return (f"the host key of {label} has CHANGED: {known_hosts} has "
            f"{old.get_name()} {fingerprint(old)}, the server offered "
            f"{new.get_name()} {fingerprint(new)}. Someone may be intercepting the "
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
            hp = resolve(hname, user or None, int(hport) if hport else None, config_path)
            hp.proxy_jump, hp.known_hosts_files = [], list(p.known_hosts_files)
            hsock = via.get_transport().open_channel(
                "direct-tcpip", (hp.hostname, hp.port), ("127.0.0.1", 0)) if via else None
            via = _connect(hp, host_key_callback, hsock)
            jumps.append(via)
        assert via is not None  # proxy_jump holds one hop at least
        sock = via.get_transport().open_channel("direct-tcpip", (p.hostname, p.port),
                                                ("127.0.0.1", 0))
    return _connect(p, host_key_callback, sock), jumps


def _connect(p: SSHParams, cb: HostKeyCallback | None, sock) -> paramiko.SSHClient:
    client = paramiko.SSHClient()
    policy = _KnownHostsPolicy(p, cb)
    client.set_missing_host_key_policy(policy)
    first = policy.preferred_types()

    def transport(*a, **kw) -> paramiko.Transport:
        t = paramiko.Transport(*a, **kw)
        opts = t.get_security_options()
        known = [k for k in first if k in opts.key_types]
        opts.key_types = known + [k for k in opts.key_types if k not in known]
        return t
    keys = [k for k in p.identity_files if os.path.isfile(k)]
    where = f"{p.user}@{_host_label(p.hostname, p.port)}"
    try:
        client.connect(p.hostname, p.port, username=p.user, key_filename=keys or None,
                       allow_agent=True, look_for_keys=not keys, timeout=p.connect_timeout,
                       banner_timeout=p.connect_timeout, auth_timeout=p.connect_timeout,
                       sock=sock, transport_factory=transport)
    except SSHError:
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
                    except Exception:  # noqa: BLE001 - closing a dead link may raise; it is gone
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
        """Run ``script`` with ``sh -s``, the script on stdin.

        The login shell (bash, dash, fish, tcsh, ...) only parses the two words
        ``sh -s``, so nothing depends on its quoting rules, and nothing in the script
        (env values included) shows in ``ps`` on the target. The script is one brace
        group read whole before it runs, with stdin from /dev/null, so no command in it
        can swallow the rest of the script.
        """
        text = f"{{\n{script}\n}} < /dev/null\n".encode("utf-8", "surrogateescape")
        try:
            chan = self._transport().open_session(timeout=self.params.op_timeout)
            chan.settimeout(self.params.op_timeout)
            chan.exec_command("sh -s")
            chan.sendall(text)
            chan.shutdown_write()
            chan.settimeout(None)
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
        """``mkdir -p`` under umask 077: run folders are private to the user (0700)."""
        res = self.run_script(f"umask 077 && mkdir -p -- {shlex.quote(path)}")
        if not res.ok:
            raise OSError(f"mkdir -p {path} on {self.name}: {res.stderr.strip()}")

    def download_tree(self, remote: str, local: Path,
                      limits: ArtifactLimits | None = None) -> list[Path]:
        """Copy every regular file under ``remote`` to ``local`` (same layout).

        The server's names are not trusted (scp's CVE-2019-6111): a name that is empty,
        ``.``, ``..`` or holds ``/`` or NUL, or whose local path would leave ``local``,
        stops the download with :class:`~.downloads.ArtifactRefused`; so do files over the size,
        count and depth limits. Links and other non-regular files are skipped.
        """
        return self._sftp_call(lambda s: Download(s, Path(local),
                                                   limits or ArtifactLimits()).run(remote))


def _read_or_none(s: paramiko.SFTPClient, path: str) -> bytes | None:
    try:
        with s.open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None
