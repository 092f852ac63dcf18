"""Launching profiled runs locally, over SSH and through Slurm (Qt-free).

Public names (imported lazily so that ``python -m hipscope.launchers.torch_profile``
on a target pulls in nothing but the standard library and torch)::

    RunSpec, Target, ProfilerSpec, SlurmOptions, parse_target      (spec)
    RunState, RunEvent, RunResult, Launcher                         (base)
    RunFolder, list_runs, data_dir                                  (rundir)
    make_launcher(spec, observers=..., host_key_callback=...)
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_NAMES = {
    "RunSpec": "spec", "Target": "spec", "ProfilerSpec": "spec", "SlurmOptions": "spec",
    "parse_target": "spec", "parse_env_changes": "spec",
    "RunState": "base", "RunEvent": "base", "RunResult": "base", "Launcher": "base",
    "LaunchError": "base",
    "RunFolder": "rundir", "list_runs": "rundir", "data_dir": "rundir",
    "get_profiler": "profilers", "PROFILERS": "profilers",
}


def __getattr__(name: str) -> Any:
    mod = _NAMES.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{mod}"), name)


def make_launcher(spec, observers=None, folder=None, host_key_callback=None, **kw):
    """The launcher for ``spec.target.kind`` (local, ssh, slurm)."""
    kind = spec.target.kind
    if kind == "local":
        from .local import LocalLauncher

        return LocalLauncher(spec, folder=folder, observers=observers, **kw)
    if kind == "ssh":
        from .remote import SSHLauncher

        return SSHLauncher(spec, folder=folder, observers=observers,
                           host_key_callback=host_key_callback, **kw)
    if kind == "slurm":
        from .slurm import SlurmLauncher

        return SlurmLauncher(spec, folder=folder, observers=observers,
                             host_key_callback=host_key_callback, **kw)
    raise ValueError(f"unknown target kind {kind!r}")
