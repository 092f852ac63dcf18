"""Sweeps: knobs x values -> variants, run in interleaved rounds, judged A/B.

A run's measurement, in this order: the program's own ``HIPSCOPE_RESULT {"wall_s": ...}``
stdout line (:func:`program_wall_s`; ``wall_from = "program"``), else the process's
wall time (``"process"``). Per-step times from a profiler trace are not used (a
timing sweep runs without a profiler). All runs of a sweep must share one source.

A :class:`SweepSpec` names the program (``command``), where it runs (``target``), the
profiler (``profiler``, usually ``none`` for timing runs) and the knobs. Each knob is
an environment variable (``env``) or a program argument (``arg``, a template such as
``--streams={value}``); ``values`` lists what to try, ``None`` for "unset / leave out".
The arms are the baseline (no change), the Cartesian product of the knobs' values and,
last, the A/A control (the baseline again, ``control = true``). :func:`run_sweep` runs
one round of every arm at a time in an interleaved order (``stats.interleaved_order``):
``warmup`` rounds first (discarded), then at least ``repeats`` rounds and up to
``max_rounds`` (or ``max_seconds``), stopping at a planned look once every variant is
decided or narrow (``abstats``). Runs go through a *runner*: any callable
``run_variant(env, args) -> Measurement``. :func:`subprocess_runner` runs local
processes directly; :func:`launcher_runner` goes through ``hipscope.launchers``
(local, SSH, Slurm; profiler plug-ins). Loadable from JSON or TOML::

    command = ["python", "train.py"]
    repeats = 5          # first look; max_rounds = 48 is the run budget
    [[knobs]]
    name = "GPU_MAX_HW_QUEUES"
    kind = "env"
    values = ["4", "8"]
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import abstats
from .abstats import Drift, PairedResult, Plan
from .stats import interleaved_order


class SweepError(RuntimeError):
    """A sweep that cannot go on; ``str()`` is one sentence for people."""


@dataclass
class Knob:
    name: str
    values: list[str | None]
    kind: str = "env"                 # env | arg
    template: str | None = None       # arg: e.g. "--streams={value}"

    def __post_init__(self) -> None:
        if self.kind not in ("env", "arg"):
            raise ValueError(f"knob {self.name!r}: kind must be env or arg")
        if not self.values:
            raise ValueError(f"knob {self.name!r} has no values")
        if self.kind == "arg" and not self.template:
            self.template = f"--{self.name}={{value}}"


@dataclass
class Variant:
    name: str
    env: dict[str, str | None] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)


@dataclass
class Measurement:
    wall_s: float
    trace_path: str | None = None
    exit_status: int = 0
    wall_from: str = "process"        # process | program (its HIPSCOPE_RESULT line)


#: A program may print ``HIPSCOPE_RESULT {"wall_s": ...}`` as a line of its stdout: the
#: sweep then compares that (the timed region, without interpreter start-up and
#: imports) instead of the process's wall time. The last such line counts.
RESULT_PREFIX = "HIPSCOPE_RESULT "


def program_wall_s(stdout: str | bytes | None) -> float | None:
    """``wall_s`` of the last ``HIPSCOPE_RESULT {...}`` line of ``stdout``, or None."""
    if not stdout:
        return None
    if isinstance(stdout, bytes):
        stdout = stdout.decode("utf-8", errors="replace")
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            try:
                v = json.loads(line[len(RESULT_PREFIX):]).get("wall_s")
            except (ValueError, AttributeError):
                return None
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
            return float(v) if ok else None
    return None


Runner = Callable[[dict, list], Measurement]

#: the name of the A/A control arm (the baseline run as a second, interleaved arm)
CONTROL = "baseline (A/A control)"


@dataclass
class SweepSpec:
    command: list[str]
    knobs: list[Knob] = field(default_factory=list)
    repeats: int = 5
    order: str = "abab"
    target: str = "local"
    profiler: str = "none"
    lower_is_better: bool = True
    seed: int = 0
    name: str | None = None
    cwd: str | None = None
    max_rounds: int = 48              # run budget (rounds after the warm-up)
    max_seconds: float | None = None  # time budget: judge and stop after the round past it
    warmup: int = 1                   # rounds run first and discarded
    control: bool = True              # the A/A control arm (the baseline again)
    alpha: float = 0.05               # family-wise error over the sweep's comparisons
    target_width: float = 0.10        # stop when every interval's hi/lo - 1 is below

    def __post_init__(self) -> None:
        if not self.command:
            raise ValueError("a sweep needs a command")
        if self.repeats < 2:
            raise ValueError("a sweep needs at least 2 repeats per variant for statistics")
        self.plan()                   # validates the budget

    def plan(self) -> Plan:
        return Plan(alpha=self.alpha, min_rounds=self.repeats,
                    max_rounds=max(self.max_rounds, self.repeats), warmup=self.warmup,
                    target_width=self.target_width)

    def arms(self) -> list[Variant]:
        """The variants, then the A/A control when ``control`` is on."""
        vs = self.variants()
        return [*vs, Variant(CONTROL)] if self.control else vs

    def max_runs(self) -> int:
        p = self.plan()
        return len(self.arms()) * (p.warmup + p.max_rounds)

    def variants(self) -> list[Variant]:
        """Baseline first, then every combination of knob values."""
        out = [Variant("baseline")]
        for combo in itertools.product(*[k.values for k in self.knobs]):
            v = Variant(", ".join(f"{k.name}={'unset' if x is None else x}"
                                  for k, x in zip(self.knobs, combo)))
            for k, x in zip(self.knobs, combo):
                if k.kind == "env":
                    v.env[k.name] = x
                elif x is not None:
                    assert k.template is not None  # an arg knob always has one (__post_init__)
                    v.args.append(k.template.format(value=x))
            out.append(v)
        return out

    # ---------------------------------------------------------------- files
    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SweepSpec:
        d = dict(d)
        knobs = [Knob(**k) for k in d.pop("knobs", [])]
        unknown = set(d) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown sweep fields: {', '.join(sorted(unknown))}")
        cmd = d.pop("command")
        cmd = cmd.split() if isinstance(cmd, str) else list(cmd)
        return cls(command=cmd, knobs=knobs, **d)

    @classmethod
    def load(cls, path: str | Path) -> SweepSpec:
        p = Path(path)
        text = p.read_text()
        try:
            if p.suffix.lower() == ".toml":
                import tomllib

                data = tomllib.loads(text)
            else:
                data = json.loads(text)
            return cls.from_dict(data)
        except (ValueError, TypeError, KeyError) as exc:
            raise SweepError(f"{p}: not a sweep spec ({exc})") from exc

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Run:
    variant: int
    repeat: int                       # round (warm-up rounds first)
    measurement: Measurement
    warmup: bool = False


@dataclass
class SweepResult:
    spec: SweepSpec
    variants: list[Variant]           # the arms: baseline, variants, then the control
    runs: list[Run]
    comparisons: dict[str, PairedResult]
    control: PairedResult | None = None
    drift: Drift | None = None
    source: str = "process"           # program (HIPSCOPE_RESULT) | process (wall time)
    rounds: int = 0                   # kept rounds (after the warm-up)
    stopped: str = ""                 # why it stopped: decided | budget | time

    def walls(self, variant: int) -> list[float]:
        """The kept (not warm-up) measurements of arm ``variant``."""
        return [r.measurement.wall_s for r in self.runs if r.variant == variant
                and not r.warmup]

    def warnings(self) -> list[str]:
        out = list(self.drift.notes) if self.drift else []
        if self.control is not None and self.control.verdict != "no difference":
            out.append("the A/A control (the baseline against itself) came out "
                       f"{self.control.verdict}: the machine is not steady enough to trust "
                       "these verdicts")
        return out

    def best(self) -> str | None:
        """The variant with the lowest ratio among those judged better, or None."""
        better = [(c.ratio if self.spec.lower_is_better else -c.ratio, n)
                  for n, c in self.comparisons.items() if c.verdict == "better"]
        return min(better)[1] if better else None

    def to_json(self) -> dict[str, Any]:
        return {"spec": self.spec.to_json(), "variants": [asdict(v) for v in self.variants],
                "runs": [asdict(r) for r in self.runs],
                "comparisons": {n: c.to_json() for n, c in self.comparisons.items()},
                "control": self.control.to_json() if self.control else None,
                "drift": self.drift.to_json() if self.drift else None,
                "source": self.source, "rounds": self.rounds, "stopped": self.stopped,
                "looks": self.spec.plan().looks(), "warnings": self.warnings(),
                "best": self.best()}


def run_sweep(spec: SweepSpec, runner: Runner,
              progress: Callable[[float], None] | None = None,
              cancelled: Callable[[], bool] | None = None,
              resamples: int | None = None,
              on_run: Callable[[Run], None] | None = None) -> SweepResult:
    """Run interleaved rounds of every arm and judge each variant against the baseline
    at the plan's looks (``abstats``); stop when decided, narrow or out of budget. A
    failing run (non-zero exit) stops the sweep: its timings would compare a crash with
    a run. ``on_run`` sees each run as it ends (its arm, round, warm-up flag).
    ``resamples`` is ignored (the paired test needs no bootstrap)."""
    arms, plan = spec.arms(), spec.plan()
    total = plan.warmup + plan.max_rounds
    order = interleaved_order(len(arms), total, spec.order, spec.seed)
    looks, holds = set(plan.looks()), np.array([a.name != CONTROL for a in arms[1:]])
    track = abstats.Track.new(1, len(arms) - 1)
    runs: list[Run] = []
    t0, stopped = time.monotonic(), "budget"
    for i in range(0, len(order), len(arms)):
        for vi, rnd in order[i:i + len(arms)]:
            m = _one_run(runner, arms[vi], rnd, cancelled)
            if runs and m.wall_from != runs[0].measurement.wall_from:
                raise SweepError(_MIXED)
            runs.append(Run(vi, rnd, m, rnd < plan.warmup))
            if on_run is not None:
                on_run(runs[-1])
            if progress is not None:
                progress(len(runs) / len(order))
        n = rnd + 1 - plan.warmup
        late = spec.max_seconds is not None and time.monotonic() - t0 >= spec.max_seconds
        if n >= 2 and (n in looks or late):
            abstats.look(track, np.log(_table(runs, len(arms)))[None], plan, holds,
                         final=late or n == plan.max_rounds)
            if not track.active[0]:
                stopped = "time" if late and n < plan.max_rounds else (
                    "decided" if n < plan.max_rounds else "budget")
                break
    if progress is not None:
        progress(1.0)
    return _result(spec, arms, runs, track, stopped)


_MIXED = ("some runs printed a HIPSCOPE_RESULT line and others did not: their times "
          "measure different things and cannot be compared")


def _one_run(runner: Runner, arm: Variant, rnd: int, cancelled) -> Measurement:
    if cancelled is not None and cancelled():
        raise SweepError("the sweep was cancelled")
    m = runner(dict(arm.env), list(arm.args))
    if m.exit_status != 0:
        raise SweepError(f"variant {arm.name!r} (round {rnd + 1}) exited with status "
                         f"{m.exit_status}")
    return m


def _table(runs: list[Run], n_arms: int) -> np.ndarray:
    """Kept runs as (rounds, arms) of measurements."""
    kept = [r for r in runs if not r.warmup]
    t = np.zeros((len(kept) // n_arms, n_arms))
    first = kept[0].repeat
    for r in kept:
        t[r.repeat - first, r.variant] = r.measurement.wall_s
    return t


def _result(spec: SweepSpec, arms: list[Variant], runs: list[Run], track, stopped: str
            ) -> SweepResult:
    table = _table(runs, len(arms))
    source = runs[0].measurement.wall_from
    res = abstats.paired_results(track, spec.plan(), list(table.T), source,
                                 spec.lower_is_better)
    comps = {a.name: r for a, r in zip(arms[1:], res) if a.name != CONTROL}
    control = res[-1] if spec.control else None
    return SweepResult(spec, arms, runs, comps, control, abstats.drift(list(table.T)),
                       source, len(table), stopped)


# ====================================================================== runners
def _apply_env(changes: dict[str, str | None]) -> dict[str, str]:
    env = dict(os.environ)
    for k, v in changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def subprocess_runner(command: list[str], cwd: str | None = None,
                      timeout: float | None = None) -> Runner:
    """Run ``command + args`` as a local process with the env changes applied; the
    measurement is the program's ``HIPSCOPE_RESULT`` wall time when it prints one,
    else the process's wall time (``time.perf_counter`` around it)."""
    def run_variant(env: dict, args: list) -> Measurement:
        t0 = time.perf_counter()
        try:
            p = subprocess.run([*command, *args], cwd=cwd, env=_apply_env(env),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise SweepError(f"{command[0]} ran past {timeout} s") from exc
        except OSError as exc:
            raise SweepError(f"cannot start {command[0]}: {exc}") from exc
        wall = time.perf_counter() - t0
        own = program_wall_s(p.stdout)
        if own is not None:
            return Measurement(own, None, p.returncode, "program")
        return Measurement(wall, None, p.returncode)
    return run_variant


def launcher_runner(spec: SweepSpec, observers: list | None = None) -> Runner:
    """A runner over ``hipscope.launchers``: each variant is one :class:`RunSpec`
    (its own run folder), run to the end on the calling thread. The measurement is
    the launcher's own running -> collecting time when it records it, else the wall time
    around the run; ``trace_path`` is the first trace input the profiler produced."""
    from ..launchers import ProfilerSpec, RunSpec, make_launcher, parse_target

    def run_variant(env: dict, args: list) -> Measurement:
        rs = RunSpec(command=[*spec.command, *args], cwd=spec.cwd, env=dict(env),
                     profiler=ProfilerSpec(spec.profiler), target=parse_target(spec.target),
                     name=spec.name)
        launcher = make_launcher(rs, observers=observers)
        t0 = time.perf_counter()
        result = launcher.run()
        return launcher_measurement(launcher, result, time.perf_counter() - t0)
    return run_variant


def launcher_measurement(launcher, result, wall: float) -> Measurement:
    """The measurement of a launcher's ended run: the program's own ``HIPSCOPE_RESULT``
    wall time when it printed one, else the launcher's running -> collecting time when
    it records it, else ``wall`` (the time around the run). :class:`SweepError` when the
    run failed without an exit status of the program's own."""
    from ..launchers.base import RunState

    # running -> collecting is the program itself (no folder set-up, no collection)
    timings = getattr(launcher, "_timings", {})
    if "running" in timings and "collecting" in timings:
        wall = timings["collecting"] - timings["running"]
    if result.state != RunState.FINISHED and result.exit_status in (None, 0):
        raise SweepError(f"run {result.folder.name} {result.state.value}: {result.reason}")
    trace = str(result.trace_inputs[0]) if result.trace_inputs else None
    own = logged_program_wall_s(result.folder)
    if own is not None:
        return Measurement(own, trace, result.exit_status or 0, "program")
    return Measurement(wall, trace, result.exit_status or 0)


def logged_program_wall_s(folder) -> float | None:
    """The ``HIPSCOPE_RESULT`` wall time in a run folder's stdout.log (its last 64 KiB)."""
    try:
        with open(Path(folder) / "stdout.log", "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 65536))
            return program_wall_s(fh.read())
    except OSError:
        return None
