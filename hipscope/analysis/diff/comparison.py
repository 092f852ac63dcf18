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
    gpus: dict[str, Any] | None = None     # gpu_fact: what is known of the two runs' GPUs


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
    gpus = gpu_fact(a.devices, b.devices)
    warnings, bad = _comparability(gpus, kd)
    warnings += [f"A: {w}" for w in a.warnings] + [f"B: {w}" for w in b.warnings]
    return Comparison(headline, kd, prov, warnings, bad, gpus=gpus)


def _product(name: str) -> str:
    """'AMD Instinct MI300X VF' and 'AMD Instinct MI300X' are one product."""
    return re.sub(r"\s*(\(VF\)|VF)$", "", name.strip()).lower()


# A reader's stand-in for a GPU it could not name: 'GPU 0', 'NVIDIA GPU 0', 'Agent-4',
# 'GPU (Agent 4)', 'GPU (node 3)', 'GPU [1]': no evidence of which product it is.
_STAND_IN = re.compile(r"^(?:(?:amd|nvidia)\s+)?(?:gpu|agent|device)(?:[\s_-]*(?:\d+|"
                       r"\([^)]*\)|\[[^\]]*\]))?$", re.IGNORECASE)


def is_stand_in(name: str) -> bool:
    """True for a device name that only numbers the GPU ('GPU 0', 'Agent-4')."""
    return bool(_STAND_IN.match(name.strip()))


def gpu_fact(a: Sequence[str], b: Sequence[str]) -> dict[str, Any]:
    """What is known of the runs' GPUs: ``{a, b}`` (distinct names), ``unnamed {a, b}``
    (stand-ins), ``differ``: True when one run has a named product that the other
    cannot have (it names all its GPUs, and not that one), False when both name the
    same products, None when stand-ins leave it open."""
    known = [{_product(n) for n in s if not is_stand_in(n)} for s in (a, b)]
    unnamed = [sorted({n for n in s if is_stand_in(n)}) for s in (a, b)]
    if (known[0] - known[1] and not unnamed[1]) or (known[1] - known[0] and not unnamed[0]):
        differ: bool | None = True
    else:
        differ = None if unnamed[0] or unnamed[1] else False
    return {"a": sorted(set(a)), "b": sorted(set(b)), "count": {"a": len(a), "b": len(b)},
            "unnamed": {"a": unnamed[0], "b": unnamed[1]}, "differ": differ}


def unnamed_who(g: dict[str, Any]) -> str:
    """Whose GPUs are stand-ins, as the start of a sentence."""
    who = [k.upper() for k in ("a", "b") if g["unnamed"][k]]
    return "the GPUs of both runs are" if len(who) == 2 else f"{who[0]}'s GPUs are"


def _gpu_sentences(g: dict[str, Any]) -> tuple[list[str], bool]:
    """The GPU part of the verdict: a refusal only when the products are known to differ."""
    a, b = ", ".join(g["a"]) or "none", ", ".join(g["b"]) or "none"
    if g["differ"]:
        return [f"not comparable: the GPUs differ (A: {a}; B: {b})"], True
    out = []
    if g["differ"] is None:
        out.append(f"{unnamed_who(g)} not named (A: {a}; B: {b}): whether the runs had "
                   "the same product is not known")
    ca, cb = g["count"]["a"], g["count"]["b"]
    if ca != cb:
        out.append(f"A has {ca} GPUs, B has {cb}")
    return out, False


def _comparability(gpus: dict[str, Any], kd: KernelDiff) -> tuple[list[str], bool]:
    out, bad = _gpu_sentences(gpus)
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
