"""Run the probe on a target through ``hipscope.launchers`` (local, SSH, Slurm).

The run is an ordinary run folder: the command is ``python3 -m hipscope.probe.run
--json`` and the ``hipscope-probe`` profiler plug-in (registered here) copies the
standalone probe (``run.py`` as ``hipscope_probe.py``, ``backends.py`` and
``backend_base.py`` as ``hipscope_probe_backends.py`` and
``hipscope_probe_backend_base.py``) into the run's profiler folder on the target and runs
it by path, the way the PyTorch profiler wrapper travels; hipscope need not be
installed there. The probe writes ``probe.json`` into that folder, which the launcher
collects; its stdout is the fallback.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..launchers.profilers import PROFILERS, Profiler, ProfilerError, Wrapped
from .store import ProbeResultError, parse_result

PROFILER_NAME = "hipscope-probe"
MODULE = "hipscope.probe.run"
FILES = {"hipscope_probe.py": "run.py", "hipscope_probe_backends.py": "backends.py",
         "hipscope_probe_backend_base.py": "backend_base.py"}
RESULT_FILE = "probe.json"


class ProbeRunError(RuntimeError):
    """The probe run failed; ``str()`` says why in one or two sentences."""


class ProbeProfiler(Profiler):
    """Not a profiler: the plug-in that ships the standalone probe to the target."""

    name = PROFILER_NAME
    description = "hipscope GPU probe (launch, graph, stream and copy costs)"
    executable = None
    version_args = ()
    options_help = {}

    def wrap(self, argv, prof_dir, options, per_rank=False) -> Wrapped:
        self.check(options)
        if not argv:
            raise ProfilerError("the probe needs a Python interpreter to run")
        python, rest = argv[0], list(argv[1:])
        if rest[:2] == ["-m", MODULE]:
            rest = rest[2:]
        if "--out" not in rest:
            rest += ["--out", f"{prof_dir}/{RESULT_FILE}"]
        here = Path(__file__).parent
        files = {dst: (here / src).read_bytes() for dst, src in FILES.items()}
        return Wrapped([python, f"{prof_dir}/hipscope_probe.py", *rest], files=files)

    def trace_inputs(self, prof_dir, options) -> list[Path]:
        return []


def register() -> None:
    """Make the plug-in known to the launchers (idempotent)."""
    PROFILERS.setdefault(PROFILER_NAME, ProbeProfiler())


def probe_spec(target: str = "local", python: str = "python3",
               args: list[str] | None = None, ssh_config: str | None = None,
               known_hosts: str | None = None):
    """The :class:`RunSpec` of a probe run on ``target``."""
    from ..launchers.spec import ProfilerSpec, RunSpec, parse_target

    register()
    t = parse_target(target)
    t.ssh_config, t.known_hosts = ssh_config, known_hosts
    return RunSpec(command=[python, "-m", MODULE, "--json", *(args or [])],
                   profiler=ProfilerSpec(PROFILER_NAME), target=t, name="probe")


def read_result(folder: Path) -> dict[str, Any]:
    """The probe's result from a finished run folder: ``prof/probe.json``, else the
    last JSON line of ``stdout.log``."""
    f = Path(folder)
    for p, what in ((f / "prof" / RESULT_FILE, "probe.json"), (f / "stdout.log", "stdout")):
        if p.is_file() and p.stat().st_size:
            return parse_result(p.read_text(encoding="utf-8", errors="replace"),
                                f"{p} ({what} of the probe run)")
    raise ProbeResultError(f"{f}: the probe run wrote no result (no prof/{RESULT_FILE}, "
                           "empty stdout.log)")


def _probe_error(folder: Path) -> str | None:
    """The ``error`` the probe itself reported (e.g. no backend could open a GPU)."""
    import json

    try:
        data = json.loads((folder / "prof" / RESULT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    err = data.get("error") if isinstance(data, dict) else None
    return str(err) if err else None


def _tail(path: Path, n: int = 6) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(lines[-n:])


def run_on_target(spec, observers: list[Callable] | None = None,
                  host_key_callback=None) -> tuple[dict[str, Any], Path]:
    """Run ``spec`` (see :func:`probe_spec`) to the end; ``(result, run folder)``.

    :class:`ProbeRunError` when the run fails or leaves no readable result; the
    reason carries the end of the probe's stderr (the failing GPU call is there).
    """
    from ..launchers import make_launcher
    from ..launchers.base import RunState

    register()
    launcher = make_launcher(spec, observers=observers, host_key_callback=host_key_callback)
    res = launcher.run()
    folder = Path(res.folder)
    try:
        result = read_result(folder)
    except ProbeResultError as exc:
        why = _probe_error(folder) or res.reason or str(exc)
        err = "" if _probe_error(folder) else _tail(folder / "stderr.log")
        raise ProbeRunError(f"the probe on {spec.target.label()} failed: {why}"
                            + (f"; its stderr ends: {err}" if err else "")) from None
    if res.state != RunState.FINISHED and not result.get("gpu"):
        raise ProbeRunError(f"the probe on {spec.target.label()} failed: {res.reason}")
    return result, folder


def default_python(target_kind: str = "local") -> str:
    """The interpreter the probe runs with: ``HIPSCOPE_PROBE_PYTHON`` when set, else
    this interpreter on the local machine, ``python3`` on a remote target (it needs
    numpy and cuda-python or hip-python)."""
    import sys

    env = os.environ.get("HIPSCOPE_PROBE_PYTHON")
    if env:
        return env
    return sys.executable if target_kind == "local" and sys.executable else "python3"
