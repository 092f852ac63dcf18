"""A against one or more B: headline deltas, kernel diff, provenance and the
*not comparable* warnings."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...model import Trace
from ...model.progress import Cancelled
from .kernels import KernelDiff, kernel_diff
from .names import NameNormalizer
from .ranges import Alignment, KernelRef, MarkerRef, align
from .summary import TraceSummary, summarize


@dataclass
class Comparison:
    """A against one B. ``headline``: key -> {a, b, delta, ratio, unit};
    ``provenance``: key -> {a, b, differs}."""

    headline: dict[str, dict[str, Any]]
    kernels: KernelDiff
    provenance: dict[str, dict[str, Any]]
    warnings: list[str]
    not_comparable: bool
    alignment: Alignment | None = None
    ops: dict[str, Any] | None = None      # by-op comparison (by_op.py), when asked for


def _delta(a: Any, b: Any, unit: str) -> dict[str, Any]:
    ok = a is not None and b is not None
    return {"a": a, "b": b, "unit": unit, "delta": (b - a) if ok else None,
            "ratio": (b / a) if ok and a != 0 else None}


#: what people read for each headline key (the comparison view and ``hipscope compare``)
HEADLINE_LABELS = {
    "span_ns": "Span", "marker_span_ns": "Marker range", "kernel_count": "Kernels",
    "kernel_time_ns": "Kernel time", "gpu_busy_fraction": "GPU busy",
    "idle_ns": "GPU idle", "idle_host_wait_ns": "host wait",
    "idle_launch_overhead_ns": "launch overhead", "idle_sync_ns": "sync",
    "idle_other_ns": "other", "queue_delay_from_api_end_p50_ns": "Queue delay p50",
    "queue_delay_from_api_end_p95_ns": "Queue delay p95",
    "queue_delay_from_api_start_p50_ns": "Launch → start p50",
    "queue_delay_from_api_start_p95_ns": "Launch → start p95",
    "graph_launch_kernels": "Graph-launched kernels", "kernels_per_second": "Kernels/s",
    "launch_overhead_ns": "Launch call (median)", "api_call_count": "API calls",
}
#: the parts of "GPU idle", shown indented under it
IDLE_PARTS = {"idle_host_wait_ns", "idle_launch_overhead_ns", "idle_sync_ns", "idle_other_ns"}


def headline_label(key: str, indent: str = "   ", arrow: str = " → ") -> str:
    """The label of headline figure ``key`` (the key itself when it has none): the
    parts of GPU idle after ``indent``, launch-to-start delays with ``arrow``."""
    if key.startswith("copies_"):
        _, direction, what = key.split("_", 2)
        return f"Copies {direction} {'time' if what == 'ns' else what}"
    label = HEADLINE_LABELS.get(key, key)
    if key in IDLE_PARTS:
        label = indent + label
    return label.replace(" → ", arrow)


# The kernel sets "barely overlap" below this share of either run's kernel time.
MIN_TIME_OVERLAP = 0.5


def compare_summaries(a: TraceSummary, b: TraceSummary) -> Comparison:
    keys = list(a.metrics) + [k for k in b.metrics if k not in a.metrics]
    headline = {}
    for k in keys:
        # a copy direction that one run lacks: that run had zero such copies
        missing = (0, "") if k.startswith("copies_") else (None, "")
        (va, ua), (vb, ub) = a.metrics.get(k, missing), b.metrics.get(k, missing)
        headline[k] = _delta(va, vb, ua or ub)
    kd = kernel_diff(a, b)
    prov = {k: {"a": a.provenance.get(k), "b": b.provenance.get(k),
                "differs": a.provenance.get(k) != b.provenance.get(k)}
            for k in list(a.provenance) + [k for k in b.provenance if k not in a.provenance]}
    warnings, bad = _comparability(a, b, kd)
    warnings += [f"A: {w}" for w in a.warnings] + [f"B: {w}" for w in b.warnings]
    return Comparison(headline, kd, prov, warnings, bad)


def _product(name: str) -> str:
    """'AMD Instinct MI300X VF' and 'AMD Instinct MI300X' are one product."""
    return re.sub(r"\s*(\(VF\)|VF)$", "", name.strip()).lower()


def _comparability(a: TraceSummary, b: TraceSummary, kd: KernelDiff) -> tuple[list[str], bool]:
    out, bad = [], False
    ga, gb = sorted(map(_product, a.devices)), sorted(map(_product, b.devices))
    if sorted(set(ga)) != sorted(set(gb)):
        bad = True
        out.append(f"not comparable: the GPUs differ (A: {', '.join(sorted(set(a.devices)))}; "
                   f"B: {', '.join(sorted(set(b.devices)))})")
    elif len(ga) != len(gb):
        out.append(f"A has {len(ga)} GPUs, B has {len(gb)}")
    sa, sb = kd.time_overlap()
    if min(sa, sb) < MIN_TIME_OVERLAP:
        bad = True
        out.append(f"not comparable: the kernel sets barely overlap (kernels both runs have "
                   f"take {sa:.0%} of A's kernel time and {sb:.0%} of B's)")
    return out, bad


def compare(a: Trace, b: Trace, normalizer: NameNormalizer | None = None,
            marker: MarkerRef | None = None,
            align_at: str | MarkerRef | KernelRef | None = None) -> Comparison:
    """Compare run B with run A (see module docstring)."""
    return compare_many(a, [b], normalizer, marker, align_at)[0]


def compare_many(a: Trace, bs: Sequence[Trace], normalizer: NameNormalizer | None = None,
                 marker: MarkerRef | None = None,
                 align_at: str | MarkerRef | KernelRef | None = None,
                 progress: Callable[[float], None] | None = None,
                 cancelled: Callable[[], bool] | None = None) -> list[Comparison]:
    """A against each B; A's figures are computed once. ``cancelled()`` is polled
    between traces (:class:`~hipscope.model.progress.Cancelled`); ``progress(fraction)``
    after each."""
    norm = normalizer or NameNormalizer()
    step = 1.0 / (len(bs) + 1)
    sa = summarize(a, norm, marker)
    out = []
    for i, b in enumerate(bs):
        if progress is not None:
            progress((i + 1) * step)
        if cancelled is not None and cancelled():
            raise Cancelled()
        c = compare_summaries(sa, sa if b is a else summarize(b, norm, marker))
        if align_at is not None:
            c.alignment = align([a, b], align_at, norm)
        out.append(c)
    if progress is not None:
        progress(1.0)
    return out
