"""`TunerState`: the plain, observable object the GUI's tuner panel binds to.

No Qt: an :class:`~hipscope.model.observable.Observable`; observers are callables
``fn(event: str, payload)`` (the GUI's bridge turns them into queued signals).
Events: ``proposals_changed`` (list), ``selection_changed`` (id or None),
``experiment_changed`` (:class:`ExperimentRecord`), ``program_changed`` (the
program experiments run: a launcher ``RunSpec`` or None).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..model.observable import Observable
from .proposals import Proposal
from .stats import ABResult

EXPERIMENT_STATES = ("idle", "queued", "running", "finished", "failed", "cancelled")

Observer = Callable[[str, Any], None]


@dataclass
class ExperimentRecord:
    proposal_id: str
    status: str = "idle"
    progress: float | None = None
    message: str | None = None
    result: ABResult | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.status not in EXPERIMENT_STATES:
            raise ValueError(f"experiment status must be one of {EXPERIMENT_STATES}")


class TunerState(Observable):
    """Proposals of the current trace, the selected one, and each one's experiment."""

    _isolate_listeners = True       # experiments update it from worker threads

    def __init__(self) -> None:
        self._proposals: list[Proposal] = []
        self._selected: str | None = None
        self._experiments: dict[str, ExperimentRecord] = {}
        self._program: Any = None

    # ------------------------------------------------------------ proposals
    @property
    def proposals(self) -> list[Proposal]:
        return list(self._proposals)

    def set_proposals(self, proposals: list[Proposal]) -> None:
        """Replace the proposals; keeps the selection and experiment records of ids
        that are still proposed (ids are stable across reruns)."""
        self._proposals = sorted(proposals, key=Proposal.sort_key)
        ids = {p.id for p in self._proposals}
        self._experiments = {k: v for k, v in self._experiments.items() if k in ids}
        self._emit("proposals_changed", self.proposals)
        if self._selected not in ids and self._selected is not None:
            self.select(None)

    def proposal(self, pid: str) -> Proposal | None:
        return next((p for p in self._proposals if p.id == pid), None)

    # ------------------------------------------------------------ selection
    @property
    def selected(self) -> str | None:
        return self._selected

    @property
    def selected_proposal(self) -> Proposal | None:
        return None if self._selected is None else self.proposal(self._selected)

    def select(self, pid: str | None) -> None:
        if pid is not None and self.proposal(pid) is None:
            raise KeyError(f"no proposal {pid!r}")
        if pid != self._selected:
            self._selected = pid
            self._emit("selection_changed", pid)

    # ------------------------------------------------------------ program
    @property
    def program(self) -> Any:
        """The program experiments run (a ``hipscope.launchers.RunSpec``) or None."""
        return self._program

    def set_program(self, spec: Any) -> None:
        if spec != self._program:
            self._program = spec
            self._emit("program_changed", spec)

    # ------------------------------------------------------------ experiments
    def experiment(self, pid: str) -> ExperimentRecord:
        if self.proposal(pid) is None:
            raise KeyError(f"no proposal {pid!r}")
        return self._experiments.setdefault(pid, ExperimentRecord(pid))

    def update_experiment(self, pid: str, **changes: Any) -> ExperimentRecord:
        """Set fields of a proposal's experiment record (status, progress, message,
        result, runs) and notify the observers."""
        rec = self.experiment(pid)
        for k, v in changes.items():
            if not hasattr(rec, k):
                raise AttributeError(f"ExperimentRecord has no field {k!r}")
            if k == "status" and v not in EXPERIMENT_STATES:
                raise ValueError(f"experiment status must be one of {EXPERIMENT_STATES}")
            setattr(rec, k, v)
        self._emit("experiment_changed", rec)
        return rec
