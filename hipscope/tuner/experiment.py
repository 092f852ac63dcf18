"""From a proposal's experiment and a program to an A/B sweep (Qt-free).

:func:`experiment_sweep` turns an :class:`~.proposals.Experiment` (env changes and
argument changes) plus the program to run (a launcher :class:`RunSpec`) into a
two-variant :class:`~.sweep.SweepSpec` (baseline, the experiment);
:func:`experiment_runner` runs its variants through ``hipscope.launchers`` with the
program's own target, profiler and env, and stops the running program at once when
the sweep is cancelled. :func:`program_for_trace` finds the program of a trace: the
run folder's ``spec.json`` when the trace was launched by hipscope, else the
command the profiler recorded (``trace.meta["command"]``).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from .proposals import Proposal
from .sweep import Knob, Measurement, Runner, SweepError, SweepSpec, launcher_measurement

ARGS_KNOB = "args"


def apply_arg_changes(command: list[str], changes: list[dict[str, str | None]]
                      ) -> list[str]:
    """``command`` with each ``{"old": ..., "new": ...}`` applied: the words of ``old``
    (a contiguous run of arguments) are replaced by those of ``new``; an ``old`` that is
    None or not found appends ``new``; a ``new`` of None removes ``old``."""
    out = list(command)
    for ch in changes:
        old = shlex.split(ch["old"]) if ch.get("old") else []
        new = shlex.split(ch["new"]) if ch.get("new") else []
        at = next((i for i in range(1, len(out) - len(old) + 1)
                   if old and out[i:i + len(old)] == old), None)
        if at is None:
            out.extend(new)
        else:
            out[at:at + len(old)] = new
    return out


def experiment_sweep(proposal: Proposal, program, repeats: int = 5,
                     order: str = "abab") -> SweepSpec:
    """The A/B sweep of ``proposal``'s experiment on ``program`` (a RunSpec): baseline
    and one variant with every env and argument change of the experiment (plus the
    sweep's A/A control); ``repeats`` is the first look, not a fixed count.

    Raises ValueError when the experiment needs a code change (no automatic run)."""
    exp = proposal.experiment
    if not exp.automatic:
        raise ValueError(f"{proposal.id}: the experiment needs a change to the program's "
                         "code; it cannot be run automatically")
    knobs = [Knob(k, [v], "env") for k, v in exp.env.items()]
    if exp.args:
        # one knob whose value names the argument changes; experiment_runner applies them
        knobs.append(Knob(ARGS_KNOB, [" ".join(str(a.get("new") or "") for a in exp.args)],
                          "arg", template="{value}"))
    return SweepSpec(command=list(program.command), knobs=knobs, repeats=repeats, order=order,
                     target=program.target.label(), profiler=program.profiler.name,
                     name=f"tune-{proposal.id}", cwd=program.cwd)


def variant_spec(proposal: Proposal, program, env: dict[str, str | None],
                 args: list[str]):
    """The RunSpec of one variant: ``program`` with the variant's env on top of its
    own and, when the variant carries the argument knob, the argument changes."""
    command = apply_arg_changes(program.command, proposal.experiment.args) if args \
        else list(program.command)
    return replace(program, command=command, env={**program.env, **env})


def applied_spec(proposal: Proposal, program):
    """``program`` with the experiment applied (the Apply action's new RunSpec)."""
    exp = proposal.experiment
    return variant_spec(proposal, program, dict(exp.env), ["applied"] if exp.args else [])


def shell_line(spec) -> str:
    """A POSIX shell line that runs ``spec`` locally (env changes, then the command)."""
    unset = [k for k, v in spec.env.items() if v is None]
    sets = [f"{k}={shlex.quote(v)}" for k, v in spec.env.items() if v is not None]
    parts = []
    if spec.cwd:
        parts.append(f"cd {shlex.quote(spec.cwd)} &&")
    if unset:
        parts.append("env " + " ".join(f"-u {k}" for k in unset))
    parts += sets
    parts.append(shlex.join(spec.command))
    return " ".join(parts)


def experiment_runner(proposal: Proposal, program,
                      cancelled: Callable[[], bool] | None = None,
                      observers: list | None = None, poll_s: float = 0.05) -> Runner:
    """A sweep runner over ``hipscope.launchers`` for ``proposal`` on ``program``.

    Each call starts one launcher, waits for it and, when ``cancelled()`` turns true,
    cancels it (the launcher kills the program's process group) and raises
    :class:`SweepError`. The measurement (``Measurement.wall_from``) is the program's
    own ``HIPSCOPE_RESULT`` wall time when it prints one (``program``), else the
    launcher's running -> collecting time (``process``); ``trace_path`` is the first
    trace the profiler produced (its step times are not used)."""
    from ..launchers import make_launcher

    def run_variant(env: dict, args: list) -> Measurement:
        launcher = make_launcher(variant_spec(proposal, program, env, args),
                                 observers=observers)
        t0 = time.perf_counter()
        launcher.start()
        while launcher.wait(poll_s) is None:
            if cancelled is not None and cancelled():
                launcher.cancel()
                launcher.wait()
                raise SweepError("the sweep was cancelled")
        return launcher_measurement(launcher, launcher.result(), time.perf_counter() - t0)
    return run_variant


def program_for_trace(meta: dict[str, Any], paths: list[Path] | None = None):
    """The RunSpec that produced a trace, or None: the ``spec.json`` of the hipscope
    run folder holding one of ``paths``, else ``meta["command"]`` run locally."""
    from ..launchers import RunSpec

    for p in paths or []:
        for parent in list(Path(p).resolve().parents)[:4]:
            f = parent / "spec.json"
            if f.is_file():
                import json

                try:
                    return RunSpec.from_json(json.loads(f.read_text()))
                except (ValueError, TypeError, OSError):
                    break
    cmd = meta.get("command")
    if isinstance(cmd, list):
        cmd = cmd[0] if len(cmd) == 1 else None      # several programs: ambiguous
    if not cmd or not isinstance(cmd, str):
        return None
    try:
        words = shlex.split(cmd)
    except ValueError:
        words = cmd.split()
    return RunSpec(words, cwd=meta.get("cwd") if isinstance(meta.get("cwd"), str) else None) \
        if words else None
