"""What the tuner proposes: :class:`Proposal` and its parts (plain, JSON-able data).

A proposal says *what* to try (``experiment``), *why* (``evidence``: figures from this
trace and references the GUI can link to the timeline), *how much* it may give
(``estimated_gain_fraction`` of the profiled span, with the ``formula`` that produced
it), *how sure* hipscope is (``confidence``) and *where the knob is documented*
(``docs``). Rules (``rules.py``) build proposals; nothing here computes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

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

    def __post_init__(self) -> None:
        if self.applies_to not in VENDORS:
            raise ValueError(f"applies_to must be one of {VENDORS}")
        g = float(self.estimated_gain_fraction)
        self.estimated_gain_fraction = min(max(g, 0.0), 1.0)

    def sort_key(self) -> tuple:
        """Best first: larger gain, then higher confidence, then id (stable)."""
        return (-round(self.estimated_gain_fraction, 4), -self.confidence.rank, self.id)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["evidence"]["refs"] = [{k: v for k, v in r.items() if v is not None}
                                 for r in d["evidence"]["refs"]]
        return d
