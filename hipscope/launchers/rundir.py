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

import json
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .spec import RunSpec

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
        try:
            return json.loads((self.path / "status.json").read_text())
        except (OSError, ValueError):
            return {}

    def update_status(self, **fields: Any) -> dict[str, Any]:
        with self._lock:
            st = self.status()
            st.update(fields)
            _write_json_atomic(self.path / "status.json", st)
            return st

    def append_event(self, obj: dict[str, Any]) -> None:
        line = json.dumps(obj, sort_keys=True, default=str)
        with self._lock, open(self.path / "events.jsonl", "a", encoding="utf-8") as fh:
            fh.write(line + "\n")

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


def list_runs(base: Path | None = None) -> list[RunSummary]:
    """Every run folder, oldest first (by queue time); folders without a readable spec
    are skipped."""
    base = Path(base) if base else runs_dir()
    if not base.is_dir():
        return []
    out = []
    for p in sorted(base.iterdir()):
        if not (p / "spec.json").is_file():
            continue
        rf = RunFolder(p)
        try:
            spec = json.loads((p / "spec.json").read_text())
        except (OSError, ValueError):
            continue
        st = rf.status()
        t = st.get("timings", {})
        start, end = t.get("started"), t.get("ended")
        dur = (end - start) if (start is not None and end is not None) else None
        tgt = spec.get("target", {})
        label = tgt.get("kind", "local")
        if label != "local":
            label = (tgt.get("host") or "local") if label == "ssh" else \
                f"slurm:{tgt.get('host') or 'local'}"
        out.append(RunSummary(p.name, p, st.get("state", "unknown"), label,
                              list(spec.get("command", [])), t.get("queued"), dur,
                              st.get("exit_status"), st.get("reason")))
    out.sort(key=lambda r: (r.created or 0.0, r.run_id))   # ids share a second
    return out
