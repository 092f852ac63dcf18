"""What to run and where: :class:`RunSpec` and :class:`Target` (plain, JSON-able data).

A spec is written to every run folder as ``spec.json`` (mode 0600) so a run can be
repeated or compared later. It holds no secret: SSH uses keys and the agent, and the
value of every ``env`` change whose name looks secret (:data:`SECRET_NAME`: TOKEN, KEY,
SECRET, PASS, PASSWORD, CREDENTIAL, AUTH, ...) is saved as ``"<redacted>"``, the name
kept. A spec read back with a redacted value does not run: :meth:`RunSpec.unrunnable`
says which secrets must be given again (``--env NAME=VALUE``, or in the launch
dialog). hipscope does not fill them in from the current environment on its own: a
re-run must not quietly use a different token than the user types.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .downloads import ArtifactLimits

TARGET_KINDS = ("local", "ssh", "slurm")
REDACTED = "<redacted>"
#: Names whose values are never written down nor put on a command line (any case):
#: TOKEN, SECRET, PASS (PASSWORD, PASSWD, ...), CREDENTIAL, AUTH, COOKIE, PRIVATE or
#: SIGNATURE anywhere in the name, KEY or KEYS as a ``_``-separated part (``HF_API_KEY``,
#: not ``MONKEY``), or APIKEY/ACCESSKEY run together. Erring on the side of secret
#: only costs re-typing the value on a re-run.
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASS|CREDENTIAL|AUTH|COOKIE|PRIVATE|SIGNATURE|"
                         r"(^|_)KEYS?(_|$)|APIKEY|ACCESSKEY", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's value must be kept off disk and argv."""
    return bool(SECRET_NAME.search(name))


def redact_env(env: dict[str, str | None]) -> dict[str, str | None]:
    """``env`` with the values of secret-looking names replaced by ``"<redacted>"``."""
    return {k: (REDACTED if v is not None and is_secret_name(k) else v)
            for k, v in env.items()}


@dataclass
class SlurmOptions:
    """Options of an ``sbatch`` submission (None: Slurm's default)."""

    nodes: int | None = None
    ntasks: int | None = None
    ntasks_per_node: int | None = None
    gpus_per_task: int | None = None
    partition: str | None = None
    account: str | None = None
    time: str | None = None             # e.g. "00:30:00"
    extra_sbatch: list[str] = field(default_factory=list)   # e.g. ["--exclusive"]
    srun_args: list[str] = field(default_factory=list)      # e.g. ["--label"]


@dataclass
class Target:
    """Where a run executes.

    ``kind`` is ``local``, ``ssh`` (``host`` is an alias or name, resolved through
    ``~/.ssh/config``) or ``slurm`` (``host`` is the login node; ``None`` submits with
    the local ``sbatch``). ``ssh_config`` / ``known_hosts`` override the user's files
    (tests use their own); ``remote_dir`` is where run folders live on the target
    (relative paths are relative to the remote home; it must be on a file system the
    compute nodes share for Slurm).
    """

    kind: str = "local"
    host: str | None = None
    user: str | None = None
    port: int | None = None
    ssh_config: str | None = None
    known_hosts: str | None = None
    remote_dir: str = ".hipscope/runs"
    slurm: SlurmOptions = field(default_factory=SlurmOptions)
    max_file_bytes: int = 16 << 30      # caps on the artifacts downloaded from a target
    max_total_bytes: int = 64 << 30
    max_files: int = 100_000

    def __post_init__(self) -> None:
        if self.kind not in TARGET_KINDS:
            raise ValueError(f"target kind must be one of {TARGET_KINDS}, not {self.kind!r}")
        if self.kind == "ssh" and not self.host:
            raise ValueError("an SSH target needs a host")

    @property
    def remote(self) -> bool:
        return self.host is not None and self.kind in ("ssh", "slurm")

    def artifact_limits(self) -> ArtifactLimits:
        """The :class:`~.downloads.ArtifactLimits` of downloads from this target."""
        from .downloads import ArtifactLimits

        return ArtifactLimits(self.max_file_bytes, self.max_total_bytes, self.max_files)

    def label(self) -> str:
        if self.kind == "local":
            return "local"
        where = self.host or "local"
        return where if self.kind == "ssh" else f"slurm:{where}"


def parse_target(text: str) -> Target:
    """``local`` | ``HOST`` | ``[USER@]HOST[:PORT]`` | ``slurm`` | ``slurm:HOST``."""
    text = text.strip()
    if text in ("", "local", "localhost-local"):
        return Target("local")
    kind = "ssh"
    if text == "slurm":
        return Target("slurm")
    if text.startswith("slurm:"):
        kind, text = "slurm", text[len("slurm:"):]
    m = re.fullmatch(r"(?:(?P<user>[^@\s]+)@)?(?P<host>[^:@\s]+)(?::(?P<port>\d+))?", text)
    if not m:
        raise ValueError(f"not a target: {text!r} (expected local, HOST, USER@HOST:PORT "
                         "or slurm:HOST)")
    port = int(m["port"]) if m["port"] else None
    return Target(kind, host=m["host"], user=m["user"], port=port)


@dataclass
class ProfilerSpec:
    """A profiler plug-in by name plus its options (see :mod:`.profilers`)."""

    name: str = "none"
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunSpec:
    """One program run: command, where, under which profiler, with which telemetry.

    ``env`` holds changes: a value of ``None`` unsets the variable. ``telemetry_interval``
    is in seconds (``None``: no telemetry).
    """

    command: list[str]
    cwd: str | None = None
    env: dict[str, str | None] = field(default_factory=dict)
    profiler: ProfilerSpec = field(default_factory=ProfilerSpec)
    target: Target = field(default_factory=Target)
    telemetry_interval: float | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if not self.command or not all(isinstance(a, str) for a in self.command):
            raise ValueError("a run needs a command: a non-empty list of strings")
        for k in self.env:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
                raise ValueError(f"not an environment variable name: {k!r}")
        if self.telemetry_interval is not None and self.telemetry_interval <= 0:
            raise ValueError("the telemetry interval must be positive")

    def to_json(self) -> dict[str, Any]:
        """JSON-able form, secret env values redacted (see the module docstring)."""
        d = asdict(self)
        d["env"] = redact_env(self.env)
        return d

    def unrunnable(self) -> str | None:
        """Why this spec cannot run as it is (redacted secrets), else None."""
        missing = [k for k, v in self.env.items() if v == REDACTED]
        if not missing:
            return None
        names = ", ".join(missing)
        return (f"the value of {names} was not saved with the run because it looks secret; "
                f"give it again (hipscope run --env {missing[0]}=VALUE, or in the launch "
                f"dialog)")

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunSpec:
        d = dict(d)
        tgt = dict(d.pop("target", {}) or {})
        tgt["slurm"] = SlurmOptions(**(tgt.get("slurm") or {}))
        prof = ProfilerSpec(**(d.pop("profiler", {}) or {}))
        return cls(target=Target(**tgt), profiler=prof, **d)


def parse_env_changes(items: list[str]) -> dict[str, str | None]:
    """``K=V`` sets, ``K=`` sets empty, ``-K`` unsets (command-line form)."""
    out: dict[str, str | None] = {}
    for it in items:
        if it.startswith("-") and "=" not in it:
            out[it[1:]] = None
            continue
        k, sep, v = it.partition("=")
        if not sep:
            raise ValueError(f"--env expects K=V (or -K to unset), not {it!r}")
        out[k] = v
    return out
