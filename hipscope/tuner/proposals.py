"""What the tuner proposes: :class:`Proposal` and its parts (plain, JSON-able data).

A proposal says *what* to try (``experiment``), *why* (``evidence``: figures from this
trace and references the GUI can link to the timeline), *how much* it may give
(``estimate``: per steady-state step where the trace has steps, else over the kernel
window; ``estimated_gain_fraction`` is its fraction, with the ``formula`` that
produced it), *how sure* hipscope is (``confidence``) and *where the knob is
documented* (``docs``). Rules (``rules.py``) build proposals; nothing here computes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..model.units import fmt_duration

CONFIDENCE_LEVELS = ("low", "medium", "high")
VENDORS = ("AMD", "NVIDIA", "both")


@dataclass(frozen=True)
class Ref:
    """A place in the trace: a row of a table (``table``, ``row``) or a time range
    (``t0``, ``t1``, ns on the trace's clock). ``label`` says what it is."""

    label: str
    table: str | None = None
    row: int | None = None
    t0: int | None = None
    t1: int | None = None

    @classmethod
    def at_row(cls, table: str, row: int, label: str) -> Ref:
        return cls(label, table=table, row=int(row))

    @classmethod
    def span(cls, t0: int, t1: int, label: str) -> Ref:
        return cls(label, t0=int(t0), t1=int(t1))


@dataclass
class Evidence:
    """Figures measured in this trace (name -> number or short text) and the places
    in the trace they come from."""

    figures: dict[str, Any] = field(default_factory=dict)
    refs: list[Ref] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Confidence:
    level: str        # low | medium | high
    why: str

    def __post_init__(self) -> None:
        if self.level not in CONFIDENCE_LEVELS:
            raise ValueError(f"confidence must be one of {CONFIDENCE_LEVELS}, not {self.level!r}")

    @property
    def rank(self) -> int:
        return CONFIDENCE_LEVELS.index(self.level)


@dataclass
class Experiment:
    """What to change for the A/B run. ``env``: variable -> value (None unsets);
    ``args``: argument changes (old -> new, or new arguments with old None);
    ``recipe``: code to change when only the user's program can change;
    ``steps``: ordered runs when one experiment needs several (TunableOp)."""

    env: dict[str, str | None] = field(default_factory=dict)
    args: list[dict[str, str | None]] = field(default_factory=list)
    recipe: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    note: str | None = None

    @property
    def automatic(self) -> bool:
        """True when a sweep can run it without touching the user's code."""
        return bool(self.env or self.args) and self.recipe is None


GPU_LAG = 1.25                  # GPU step over host step above which the estimate says so


@dataclass
class Estimate:
    """How much a proposal may give, in the unit the user compares (``tuner.estimate``).

    ``gain_ns``: wall-clock time recoverable inside ``window_ns`` (time several GPUs
    wait at once counted once, so never more than the window); ``basis``: "steps"
    (the steady-state steps) or "kernel window" (first kernel start to last kernel
    end, when the trace marks no steps); ``per_device`` / ``per_thread``: each GPU's and
    each launching host thread's own recoverable time in the window, beside it."""

    gain_ns: int
    window_ns: int
    basis: str
    span_ns: int
    span_gain_ns: int
    steps: int = 0                  # steady-state steps used
    step_ns: int = 0                # median steady-state step
    step_source: str = ""
    per_device: dict[str, int] = field(default_factory=dict)
    per_thread: dict[str, int] = field(default_factory=dict)
    gpu_step_ns: int = 0            # median steady step to the end of its GPU work

    @property
    def gpu_lags(self) -> bool:
        """The GPU's step is much longer than the host's step ranges (the host ran
        ahead): the step time and the window are the host's, not what a user times."""
        return self.basis == "steps" and self.gpu_step_ns > GPU_LAG * self.step_ns

    @property
    def fraction(self) -> float:
        return self.gain_ns / self.window_ns if self.window_ns > 0 else 0.0

    @property
    def span_fraction(self) -> float:
        return self.span_gain_ns / self.span_ns if self.span_ns > 0 else 0.0

    def text(self) -> str:
        """'step 2.90 ms -> about 0.800 ms (-72 %) over 4 steady-state steps; ...'."""
        span = f"{self.span_fraction:.1%} of the {fmt_duration(self.span_ns)} span"
        if self.basis == "steps":
            after = self.step_ns * (1 - self.fraction)
            lag = (f"; but the GPU's step is {fmt_duration(self.gpu_step_ns)} (its kernels "
                   "end after the host's step ranges): these step figures are the host's, "
                   "so the estimate may be far off; the A/B will tell" if self.gpu_lags else "")
            return (f"step {fmt_duration(self.step_ns)} -> about {fmt_duration(after)} "
                    f"(-{self.fraction:.0%}) over {self.steps} steady-state "
                    f"step{'s' if self.steps != 1 else ''} ({self.step_source}); {span}{lag}")
        why = (f"its steps ({self.step_source}) hold no kernels" if self.step_source
               else "the trace marks no steps")
        return (f"{self.fraction:.1%} of the {fmt_duration(self.window_ns)} kernel window "
                f"({why}); {span}")

    def breakdown_text(self) -> str:
        """Each GPU's and host thread's own recoverable time (largest first)."""
        parts = [f"GPU {d} {fmt_duration(v)}" for d, v in
                 sorted(self.per_device.items(), key=lambda kv: -kv[1])[:8]]
        parts += [f"thread {t} {fmt_duration(v)}" for t, v in
                  sorted(self.per_thread.items(), key=lambda kv: -kv[1])[:4]]
        if not parts:
            return ""
        where = "the steady-state steps" if self.basis == "steps" else "the kernel window"
        return ", ".join(parts) + f" (in {where})"


@dataclass(frozen=True)
class Citation:
    title: str
    url: str
    says: str = ""


@dataclass
class Proposal:
    """One optimisation proposal. ``id`` is stable for the same trace and rule
    (``rule`` or ``rule:qualifier``) so the GUI can keep a selection across reruns."""

    id: str
    rule: str
    title: str
    evidence: Evidence
    estimated_gain_fraction: float
    formula: str
    confidence: Confidence
    experiment: Experiment
    applies_to: str = "both"
    docs: list[Citation] = field(default_factory=list)
    estimate: Estimate | None = None

    def __post_init__(self) -> None:
        if self.applies_to not in VENDORS:
            raise ValueError(f"applies_to must be one of {VENDORS}")
        if self.estimate is not None:
            self.estimated_gain_fraction = self.estimate.fraction
        g = float(self.estimated_gain_fraction)
        self.estimated_gain_fraction = min(max(g, 0.0), 1.0)

    def estimate_text(self) -> str:
        """The estimate for people: per step where the trace has steps."""
        if self.estimate is None:
            return f"{self.estimated_gain_fraction:.1%} of the profiled span"
        return self.estimate.text()

    def sort_key(self) -> tuple:
        """Best first: larger gain, then higher confidence, then id (stable)."""
        return (-round(self.estimated_gain_fraction, 4), -self.confidence.rank, self.id)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["evidence"]["refs"] = [{k: v for k, v in r.items() if v is not None}
                                 for r in d["evidence"]["refs"]]
        return d
