"""The timeline's interface as the shell sees it: a declared Protocol and the frozen
figures of one ruler measurement (no more ``hasattr`` probes or key spellings)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..model.units import fmt_duration


@dataclass(frozen=True)
class RangeStats:
    """A ruler measurement over ``[t0, t1)`` ns: events overlapping it and, per device,
    the busy fraction (union of its kernels); ``busy_fraction`` is their mean."""

    t0: int
    t1: int
    kernels: int = 0
    api_calls: int = 0
    copies: int = 0
    busy: Mapping[int, float] = field(default_factory=dict)
    busy_fraction: float | None = None
    device_names: Mapping[int, str] = field(default_factory=dict)

    @property
    def duration_ns(self) -> int:
        return self.t1 - self.t0

    @classmethod
    def from_ruler(cls, stats: Mapping[str, Any]) -> RangeStats:
        """From the timeline ruler's figures (``analysis.lod.range_stats`` plus the
        view's ``busy_fraction`` and ``device_names``)."""
        return cls(int(stats["t0"]), int(stats["t1"]), int(stats["kernels"]),
                   int(stats["api_calls"]), int(stats["copies"]), dict(stats["busy"]),
                   stats.get("busy_fraction"), dict(stats.get("device_names") or {}))

    def text(self) -> str:
        """One status-bar line: 'measured 1.2 ms, 40 kernels, 3 copies, busy 61.0 %'."""
        parts = [f"measured {fmt_duration(self.duration_ns)}", f"{self.kernels:,} kernels"]
        if self.api_calls:
            parts.append(f"{self.api_calls:,} API calls")
        if self.copies:
            parts.append(f"{self.copies:,} copies")
        if self.busy_fraction is not None:
            parts.append(f"busy {100 * self.busy_fraction:.1f} %")
        return ", ".join(parts)


@runtime_checkable
class Timeline(Protocol):
    """What the window asks of a tab's timeline (``views.timeline.TimelineView``).

    Its ``range_measured`` signal carries the ruler's figures as :class:`RangeStats`
    (``None`` when the ruler is cleared). ``prepared`` is emitted when
    rows made in a worker are ready (``preparing`` is True meanwhile).
    """

    range_measured: Any          # Qt SignalInstances
    prepared: Any
    preparing: bool

    def fit(self) -> None: ...

    def find_next(self) -> None: ...

    def find_prev(self) -> None: ...

    def export_png(self, path: str | Path) -> bool: ...

    def export_svg(self, path: str | Path) -> bool: ...
