"""Sweeps: knobs x values -> variants, run interleaved N times, compared A/B.

A run's measurement is the program's own ``HIPSCOPE_RESULT {"wall_s": ...}`` stdout
line when it prints one (:func:`program_wall_s`), else the process's wall time.

A :class:`SweepSpec` names the program (``command``), where it runs (``target``), the
profiler (``profiler``, usually ``none`` for timing runs) and the knobs. Each knob is
an environment variable (``env``) or a program argument (``arg``, a template such as
``--streams={value}``); ``values`` lists what to try, ``None`` for "unset / leave out".
The variants are the baseline (no change) plus the Cartesian product of the knobs'
values. :func:`run_sweep` runs every variant ``repeats`` times in an interleaved order
(``stats.interleaved_order``) through a *runner*: any callable
``run_variant(env, args) -> Measurement``. :func:`subprocess_runner` runs local
processes directly; :func:`launcher_runner` goes through ``hipscope.launchers``
(local, SSH, Slurm; profiler plug-ins). Loadable from JSON or TOML::

    command = ["python", "train.py"]
    repeats = 5
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

from .stats import ABResult, compare, interleaved_order


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

    def __post_init__(self) -> None:
        if not self.command:
            raise ValueError("a sweep needs a command")
        if self.repeats < 2:
            raise ValueError("a sweep needs at least 2 repeats per variant for statistics")

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
    repeat: int
    measurement: Measurement


@dataclass
class SweepResult:
    spec: SweepSpec
    variants: list[Variant]
    runs: list[Run]
    comparisons: dict[str, ABResult]

    def walls(self, variant: int) -> list[float]:
        return [r.measurement.wall_s for r in self.runs if r.variant == variant]

    def best(self) -> str | None:
        """The variant with the lowest ratio among those judged better, or None."""
        better = [(c.ratio if self.spec.lower_is_better else -c.ratio, n)
                  for n, c in self.comparisons.items() if c.verdict == "better"]
        return min(better)[1] if better else None

    def to_json(self) -> dict[str, Any]:
        return {"spec": self.spec.to_json(), "variants": [asdict(v) for v in self.variants],
                "runs": [asdict(r) for r in self.runs],
                "comparisons": {n: c.to_json() for n, c in self.comparisons.items()},
                "best": self.best()}


def run_sweep(spec: SweepSpec, runner: Runner,
              progress: Callable[[float], None] | None = None,
              cancelled: Callable[[], bool] | None = None,
              resamples: int = 10_000) -> SweepResult:
    """Run every variant ``spec.repeats`` times, interleaved, and compare each variant
    with the baseline. A failing run (non-zero exit) stops the sweep: its timings
    would compare a crash with a run."""
    variants = spec.variants()
    order = interleaved_order(len(variants), spec.repeats, spec.order, spec.seed)
    runs: list[Run] = []
    for i, (vi, rep) in enumerate(order):
        if cancelled is not None and cancelled():
            raise SweepError("the sweep was cancelled")
        v = variants[vi]
        m = runner(dict(v.env), list(v.args))
        if m.exit_status != 0:
            raise SweepError(f"variant {v.name!r} (repeat {rep + 1}) exited with status "
                             f"{m.exit_status}")
        runs.append(Run(vi, rep, m))
        if progress is not None:
            progress((i + 1) / len(order))
    base = [r.measurement.wall_s for r in runs if r.variant == 0]
    comps = {variants[vi].name: compare(
        base, [r.measurement.wall_s for r in runs if r.variant == vi],
        lower_is_better=spec.lower_is_better, resamples=resamples, seed=spec.seed)
        for vi in range(1, len(variants))}
    return SweepResult(spec, variants, runs, comps)


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
