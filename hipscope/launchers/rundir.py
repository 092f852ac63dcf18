"""Run folders: every run is one folder in the user's data directory.

Layout (all written as the run goes, so failed and cancelled runs keep everything)::

    <data>/runs/<run id>/
        spec.json          the RunSpec
        status.json        state, reason, exit status, timings, target, command, artifacts
        stdout.log         the program's standard output, byte for byte
        stderr.log         its standard error
        events.jsonl       state changes and messages, one JSON object a line
        provenance.json    host, GPUs, driver, ROCm/HIP/CUDA versions, env knobs
        telemetry.csv      GPU samples (when telemetry was on)
        prof/              the profiler's artifacts

``HIPSCOPE_DATA_DIR`` overrides the data directory (tests use a temporary one).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .spec import RunSpec

log = logging.getLogger(__name__)
STDOUT, STDERR = "stdout.log", "stderr.log"
PROF_DIR = "prof"


def data_dir() -> Path:
    env = os.environ.get("HIPSCOPE_DATA_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("hipscope", appauthor=False))


def runs_dir() -> Path:
    return data_dir() / "runs"


def _slug(words: list[str]) -> str:
    base = os.path.basename(words[0]) if words else "run"
    if base.startswith("python") and len(words) > 1 and words[1].endswith(".py"):
        base = os.path.basename(words[1])[:-3]
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", base)[:24].strip("-.") or "run"


def new_run_id(spec: RunSpec) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{_slug(spec.name.split() if spec.name else spec.command)}-" \
           f"{secrets.token_hex(2)}"


def _write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)   # private to the user
    with open(fd, "w") as fh:
        fh.write(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")
    os.chmod(tmp, 0o600)   # an old .tmp left by a crash keeps its mode otherwise
    os.replace(tmp, path)


def _write_status(path: Path, obj: Any) -> None:
    """Atomically; on a full disk, in place over the old file's blocks (a status that
    says how the run ended beats an atomic one that says ``running`` forever)."""
    try:
        _write_json_atomic(path, obj)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        path.with_name(path.name + ".tmp").unlink(missing_ok=True)
        data = (json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n").encode()
        with open(path, "r+b") as fh:      # no truncation first: keep the blocks
            fh.write(data)
            fh.truncate(len(data))


# ----------------------------------------------------------------- process identity
def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _start_ticks(pid: int) -> int | None:
    """The process's start time (clock ticks since boot; /proc/<pid>/stat field 22),
    None when it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else int(fields[19])


def process_identity(pid: int) -> dict[str, Any] | None:
    """What tells this process from a later one with the same pid (None: no /proc)."""
    start, boot = _start_ticks(pid), _boot_id()
    if start is None or boot is None:
        return None
    return {"pid": pid, "start": start, "boot": boot, "host": os.uname().nodename}


def process_alive(ident: Any) -> bool | None:
    """Is the process of ``ident`` (from :func:`process_identity`) still running?
    None when this machine cannot tell (another host, no /proc, not an identity)."""
    if not isinstance(ident, dict) or ident.get("host") != os.uname().nodename:
        return None
    pid, start, boot = ident.get("pid"), ident.get("start"), _boot_id()
    if not isinstance(pid, int) or not isinstance(start, int) or boot is None:
        return None
    if ident.get("boot") != boot:
        return False                       # rebooted since
    return _start_ticks(pid) == start      # gone, or the pid belongs to another now


class RunFolder:
    """One run's folder; thread-safe writers for status and events."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()

    @classmethod
    def create(cls, spec: RunSpec, base: Path | None = None) -> RunFolder:
        base = Path(base) if base else runs_dir()
        base.mkdir(parents=True, exist_ok=True)
        for _ in range(20):
            p = base / new_run_id(spec)
            try:
                p.mkdir()
                break
            except FileExistsError:
                continue
        else:  # pragma: no cover - 20 collisions of 16 random bits in one second
            raise RuntimeError(f"could not create a run folder under {base}")
        rf = cls(p)
        (p / PROF_DIR).mkdir()
        (p / STDOUT).touch()
        (p / STDERR).touch()
        _write_json_atomic(p / "spec.json", spec.to_json())
        return rf

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def prof_dir(self) -> Path:
        return self.path / PROF_DIR

    def log_path(self, stream: str) -> Path:
        return self.path / (STDOUT if stream == "stdout" else STDERR)

    def spec(self) -> RunSpec:
        return RunSpec.from_json(json.loads((self.path / "spec.json").read_text()))

    def status(self) -> dict[str, Any]:
        """The status as written; {} when it is missing or damaged."""
        try:
            st = json.loads((self.path / "status.json").read_text())
        except (OSError, ValueError):
            return {}
        return st if isinstance(st, dict) else {}

    def update_status(self, **fields: Any) -> dict[str, Any]:
        with self._lock:
            st = self.status()
            st.update(fields)
            _write_status(self.path / "status.json", st)
            return st

    def append_event(self, obj: dict[str, Any]) -> None:
        """Best effort: a full disk must not end the run (status.json still tells)."""
        line = json.dumps(obj, sort_keys=True, default=str)
        try:
            with self._lock, open(self.path / "events.jsonl", "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        except OSError as exc:
            log.warning("%s: cannot append to events.jsonl: %s", self.path, exc)

    def write_json(self, name: str, obj: Any) -> None:
        _write_json_atomic(self.path / name, obj)


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    path: Path
    state: str
    target: str
    command: list[str]
    created: float | None
    duration_s: float | None
    exit_status: int | None
    reason: str | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.run_id, "path": str(self.path), "state": self.state,
                "target": self.target, "command": self.command, "created": self.created,
                "duration_s": self.duration_s, "exit_status": self.exit_status,
                "reason": self.reason}


LIVE_STATES = ("queued", "starting", "running", "collecting")
KNOWN_STATES = (*LIVE_STATES, "finished", "failed", "cancelled")
_NUMBER = (int, float)


class Damaged(ValueError):
    """A run folder's file cannot be read; ``str()`` says which and why."""


def _read_json(path: Path) -> Any:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise Damaged(f"{path.name} is missing") from None
    except OSError as exc:
        raise Damaged(f"{path.name} cannot be read ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Damaged(f"{path.name} is not UTF-8 text (byte {exc.start})") from None
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise Damaged(f"{path.name} is not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise Damaged(f"{path.name} holds {_kind(obj)}, not a JSON object")
    return obj


def _kind(v: Any) -> str:
    return {type(None): "null", bool: "a boolean", int: "a number", float: "a number",
            str: "a string", list: "a list", dict: "an object"}.get(type(v), type(v).__name__)


def _check(name: str, obj: dict, key: str, ok: Callable[[Any], bool], want: str) -> None:
    if key in obj and not ok(obj[key]):
        raise Damaged(f"{name}: {key!r} is {_kind(obj[key])}, not {want}")


def read_status(path: Path) -> dict[str, Any]:
    """A run folder's status.json, checked field by field; raises :class:`Damaged`."""
    st = _read_json(path / "status.json")
    _check("status.json", st, "state", lambda v: v in KNOWN_STATES, "a run state")
    _check("status.json", st, "timings", lambda v: isinstance(v, dict) and all(
        isinstance(x, _NUMBER) and not isinstance(x, bool) for x in v.values()),
        "an object of times")
    _check("status.json", st, "exit_status",
           lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)),
           "a number or null")
    _check("status.json", st, "reason", lambda v: v is None or isinstance(v, str),
           "a string or null")
    for key in ("artifacts", "trace_inputs"):
        _check("status.json", st, key, lambda v: isinstance(v, list) and all(
            isinstance(x, str) for x in v), "a list of paths")
    for key in ("target", "profiler"):
        _check("status.json", st, key, lambda v: isinstance(v, str), "a string")
    return st


def read_spec_summary(path: Path) -> tuple[list[str], str]:
    """(command, target label) from a run folder's spec.json; raises :class:`Damaged`."""
    spec = _read_json(path / "spec.json")
    _check("spec.json", spec, "command", lambda v: isinstance(v, list) and all(
        isinstance(x, str) for x in v), "a list of words")
    _check("spec.json", spec, "target", lambda v: isinstance(v, dict), "an object")
    tgt = spec.get("target") or {}
    kind, host = tgt.get("kind", "local"), tgt.get("host")
    if kind == "local":
        label = "local"
    elif kind == "ssh":
        label = str(host or "local")
    else:
        label = f"slurm:{host or 'local'}"
    return list(spec.get("command", [])), label


def _gone_reason(st: dict[str, Any]) -> str | None:
    """Why a run that says it is live is not (its hipscope process died), or None."""
    if st.get("state") not in LIVE_STATES or process_alive(st.get("owner")) is not False:
        return None
    owner = st["owner"]
    why = f"the hipscope process that ran it is gone (pid {owner.get('pid')})"
    if process_alive(st.get("program")):
        why += f"; its program (pid {st['program']['pid']}) is still running"
    return why


def summarise(p: Path) -> RunSummary:
    """One run folder as a summary; a damaged or orphaned one says so in ``reason``
    with state ``unknown`` (never an exception: one bad folder must not hide the rest)."""
    problems: list[str] = []
    command: list[str] = []
    label, st = "?", {}
    try:
        command, label = read_spec_summary(p)
    except Damaged as exc:
        problems.append(str(exc))
    try:
        st = read_status(p)
    except Damaged as exc:
        problems.append(str(exc))
    t = st.get("timings") or {}
    start, end = t.get("started"), t.get("ended")
    dur = (end - start) if (start is not None and end is not None) else None
    state, reason = st.get("state", "unknown"), st.get("reason")
    if label == "?" and isinstance(st.get("target"), str):
        label = st["target"]
    gone = _gone_reason(st)
    if problems:
        state, reason = "unknown", "damaged: " + "; ".join(problems)
    elif gone:
        state, reason = "unknown", gone
    return RunSummary(p.name, p, state, label, command, t.get("queued"), dur,
                      st.get("exit_status"), reason)


def list_runs(base: Path | None = None) -> list[RunSummary]:
    """Every run folder (one with a spec.json or a status.json), oldest first (by queue
    time); damaged folders are listed with state ``unknown`` and the damage as reason."""
    base = Path(base) if base else runs_dir()
    if not base.is_dir():
        return []
    out = [summarise(p) for p in sorted(base.iterdir())
           if (p / "spec.json").is_file() or (p / "status.json").is_file()]
    out.sort(key=lambda r: (r.created or 0.0, r.run_id))   # ids share a second
    return out
