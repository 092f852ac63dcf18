"""The run a trace came from: ``trace.meta["run"]`` for traces inside a hipscope run folder.

A run folder (see :mod:`hipscope.launchers.rundir`) holds ``spec.json`` and
``status.json`` beside ``prof/``; those files are not part of the trace, so the cache
never sees them: :func:`attach_run_provenance` runs after every read, cached or not.
However the trace is opened (the run folder, its ``prof/``, a file inside ``prof/``),
the same run is found by walking up from the opened path.

``meta["run"]`` holds: ``id``, ``folder``, ``command``, ``cwd``, ``target`` (label) and
``target_spec``, ``profiler`` (``{"name", "options"}``), ``env`` (the run's changes:
``None`` unsets; secret values are already ``"<redacted>"`` in spec.json),
``target_env`` (the allow-listed knobs of the target's environment, provenance.json),
``profiler_env`` (what the profiler's wrapper set on top, provenance.json),
``gpus``, ``versions``, ``host``, ``state``, ``exit_status`` and ``source``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..model import Trace

SOURCE = "run folder"
#: the target's variables not worth carrying (long, and no knob a rule reads)
_SKIP_TARGET_ENV = {"PATH", "LD_LIBRARY_PATH", "HOSTNAME", "HIPSCOPE_DATA_DIR"}


def find_run_folder(path: str | os.PathLike) -> Path | None:
    """The nearest folder at or above ``path`` holding spec.json and status.json."""
    try:
        p = Path(path).resolve()
        for d in (p, *p.parents):
            if (d / "spec.json").is_file() and (d / "status.json").is_file():
                return d
    except OSError:        # an unreadable folder on the way: check_path says why
        return None
    return None


def _is_dir(p: Path) -> bool:
    try:
        return p.is_dir()
    except OSError:
        return False


def _load(path: Path) -> dict[str, Any]:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path.name} cannot be read ({exc})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{path.name} is not a JSON object")
    return obj


def _recorded_inputs(folder: Path) -> list[Path]:
    """status.json's ``trace_inputs``, under ``folder`` itself (it may be a moved or
    copied run folder: its own files, not the original's)."""
    st = _load(folder / "status.json")
    out = []
    for raw in st.get("trace_inputs") or []:
        p = Path(str(raw))
        if not p.is_absolute():
            p = folder / p
        elif folder.name in p.parts:
            inside = folder.joinpath(
                *p.parts[len(p.parts) - p.parts[::-1].index(folder.name):])
            p = inside if inside.exists() or not p.exists() else p
        out.append(p)
    return out


def expand_run_folders(paths: Sequence[Path]) -> list[Path]:
    """``paths`` with a run folder (or its ``prof/``) replaced by the run's trace files.

    Raises TraceFormatError for a run folder that recorded no trace."""
    from .base import TraceFormatError

    out: list[Path] = []
    for p in paths:
        folder = find_run_folder(p) if _is_dir(p) else None
        if folder is None or p.resolve() not in (folder, folder / "prof"):
            out.append(p)
            continue
        try:
            inputs = _recorded_inputs(folder)
            st = _load(folder / "status.json")
        except ValueError as exc:
            raise TraceFormatError(folder / "status.json", None, "a run's status.json",
                                   str(exc)) from None
        if not inputs and p.resolve() != folder:
            out.append(p)                   # prof/ of an unfinished run: readers may try
            continue
        if not inputs:
            raise TraceFormatError(p, None, "a run folder whose run recorded a trace",
                                   f"none (run {folder.name}: state "
                                   f"{st.get('state', 'unknown')}, profiler "
                                   f"{st.get('profiler', 'unknown')})")
        out.extend(inputs)
    return out


def read_run(folder: Path) -> dict[str, Any]:
    """``meta["run"]`` for one run folder; raises ValueError when spec.json is damaged."""
    spec = _load(folder / "spec.json")
    st = _load(folder / "status.json")
    prov = _load(folder / "provenance.json")
    target = spec.get("target") if isinstance(spec.get("target"), dict) else {}
    kind, host = target.get("kind", "local"), target.get("host")
    label = "local" if kind == "local" else (
        str(host) if kind == "ssh" else f"slurm:{host or 'local'}")
    env = spec.get("env") if isinstance(spec.get("env"), dict) else {}
    tenv = prov.get("env") if isinstance(prov.get("env"), dict) else {}
    prof = spec.get("profiler") if isinstance(spec.get("profiler"), dict) else {}
    return {
        "id": folder.name, "folder": str(folder), "source": SOURCE,
        "command": [str(a) for a in spec.get("command") or []],
        "cwd": spec.get("cwd"), "target": label, "target_spec": target,
        "profiler": {"name": prof.get("name", "none"), "options": prof.get("options") or {}},
        "env": {str(k): (None if v is None else str(v)) for k, v in env.items()},
        "target_env": {str(k): str(v) for k, v in sorted(tenv.items())
                       if k not in _SKIP_TARGET_ENV},
        "profiler_env": {str(k): (None if v is None else str(v))
                         for k, v in (prov.get("env_changes") or {}).items() if k not in env},
        "gpus": prov.get("gpus") or [], "versions": prov.get("versions") or {},
        "host": prov.get("host"), "state": st.get("state"),
        "exit_status": st.get("exit_status"),
    }


def attach_run_provenance(trace: Trace, paths: Sequence[str | os.PathLike]) -> Trace:
    """``trace`` with ``meta["run"]`` when every path lies in one run folder (unchanged
    otherwise; a damaged spec becomes a warning, never a failure to open)."""
    folders = {find_run_folder(p) for p in paths}
    if len(folders) != 1 or None in folders:
        return trace
    folder = folders.pop()
    try:
        run = read_run(folder)
    except ValueError as exc:
        return trace.with_meta(warnings=[*trace.warnings, (
            f"the run folder {folder} is damaged ({exc}): the run's command, environment "
            "and GPUs are not shown and the tuner uses defaults")])
    return trace.with_meta(run=run)


def stated_run(command: Sequence[str] | None, env: dict[str, str | None],
               cwd: str | None = None, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``meta["run"]`` for settings the user states (``tune --env/--command``, the
    tuner panel): over ``base`` (a run folder's), the stated values win."""
    run = dict(base or {})
    if command:
        run["command"] = [str(a) for a in command]
    if cwd:
        run["cwd"] = cwd
    run["env"] = {**(run.get("env") or {}), **env}
    run["source"] = "stated by the user" if not base else f"{base.get('source')} + stated"
    run["stated_env"] = sorted(env)
    return run


def run_spec(run: dict[str, Any] | None):
    """The :class:`~hipscope.launchers.RunSpec` that runs ``run`` (``meta["run"]``)
    again, or None without a command or with a spec this hipscope cannot rebuild."""
    from ..launchers.spec import ProfilerSpec, RunSpec, SlurmOptions, Target

    if not run or not run.get("command"):
        return None
    tgt = dict(run.get("target_spec") or {})
    prof = run.get("profiler") or {}
    try:
        tgt["slurm"] = SlurmOptions(**(tgt.get("slurm") or {}))
        return RunSpec([str(a) for a in run["command"]], cwd=run.get("cwd"),
                       env=dict(run.get("env") or {}), target=Target(**tgt),
                       profiler=ProfilerSpec(prof.get("name") or "none",
                                             dict(prof.get("options") or {})))
    except (TypeError, ValueError):
        return None
