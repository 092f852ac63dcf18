"""Side-by-side comparison of traces: run A against one or more runs B.

Everything is data (no text, no Qt); `hipscope compare` and the comparison view draw it.

* **Headline** (:func:`compare`): per figure A | B | delta (= B - A) | ratio (= B / A,
  None where A is 0 or a value is missing). The figures come from the existing
  analyses: span (``Trace.time_range``), the span of a chosen marker range, GPU busy
  fraction (``stats``), idle breakdown (``idle``), queue delay p50/p95
  (``queue_delay``), kernels per second and launch overhead (``concurrency``), copies
  per direction (``report``).
* **Kernels** (:class:`KernelDiff`): kernels are matched by a *normalised* name
  (:class:`NameNormalizer`: an editable list of regex substitutions that strips what
  differs between two builds of the same code: hashes, clone and ``.kd`` suffixes,
  Triton signature suffixes; template arguments only on request). Per name: count,
  total, mean, p95 for A and B, delta and ratio of the totals; names only in B are
  *added*, only in A *removed*; rows are sorted by ``|delta total|``.
* **Instances** (:func:`instance_diff`): the i-th instance of a kernel in A against
  the i-th in B, in launch order.
* **Provenance**: GPUs, versions, command, env knobs side by side, differences
  flagged; a *not comparable* warning when the GPU products differ or the kernel sets
  barely overlap.
* **Alignment** (:func:`align`): an offset in ns per trace that puts the traces' starts,
  the n-th occurrence of a marker, or the n-th instance of a kernel at time 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..model import Trace
from ..model.names import compile_strict, invalid_message
from ..model.progress import Cancelled
from . import queue_delay as qd
from .concurrency import launch_stats
from .idle import CATEGORIES as IDLE_CATEGORIES
from .idle import idle_breakdown
from .report import copies_by_direction
from .stats import busy_fraction_per_device, group_stats

# --------------------------------------------------------------------------- names


@dataclass(frozen=True)
class NameRule:
    """One substitution ``re.sub(pattern, replacement, name)``; ``repeat`` applies it
    until the name stops changing (for nested brackets)."""

    pattern: str
    replacement: str = ""
    repeat: bool = False
    typed: bool = False        # a person's rule: the one name rule (case-insensitive)
    regex: re.Pattern = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", compile_strict(self.pattern) if self.typed
                           else re.compile(self.pattern))

    def apply(self, name: str) -> str:
        out = self.regex.sub(self.replacement, name)
        while self.repeat and out != name:
            name, out = out, self.regex.sub(self.replacement, out)
        return out


# Only what differs between two builds or runs of the same code. Order matters.
DEFAULT_RULES: tuple[NameRule, ...] = (
    NameRule(r"\s*\[clone [^\]]*\]"),                  # ' [clone .kd]', ' [clone .cold]'
    NameRule(r"(\.clone(\.\d+)?|\.kd)+$"),             # '.clone', '.clone.3', '.kd'
    NameRule(r"_0x[0-9a-fA-F]+(?![0-9A-Za-z])"),       # '_0x1a2b3c'
    NameRule(r"_[0-9a-f]{8,}(?![0-9A-Za-z])"),         # '_3fa9c2d17b' (build hashes)
    NameRule(r"_(?:\d+(?:de|d|c))+$"),                 # Triton signature '_0d1d2d3de'
)
# Template arguments: only on request (a different instantiation is different code).
TEMPLATE_RULE = NameRule(r"<[^<>]*>", "", repeat=True)


class RulesError(ValueError):
    """A normalisation rules file that cannot be used; ``str()`` is one sentence."""


@dataclass(frozen=True)
class NameNormalizer:
    """Maps a kernel name to the key it is matched by (see module docstring)."""

    rules: tuple[NameRule, ...] = DEFAULT_RULES

    def __call__(self, name: str) -> str:
        for r in self.rules:
            name = r.apply(name)
        return name.strip()

    def with_templates_stripped(self) -> NameNormalizer:
        return NameNormalizer((*self.rules, TEMPLATE_RULE))

    @classmethod
    def parse(cls, text: str, source: str = "rules") -> NameNormalizer:
        """Rules from text, one a line: ``PATTERN`` (delete matches) or ``PATTERN =>
        REPLACEMENT``; ``@defaults`` inserts the default rules there, ``@templates`` the
        template-argument rule; blank lines and lines starting with ``#`` are skipped."""
        rules: list[NameRule] = []
        for no, line in enumerate(text.splitlines(), 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            if s == "@defaults":
                rules.extend(DEFAULT_RULES)
            elif s == "@templates":
                rules.append(TEMPLATE_RULE)
            else:
                pat, _, rep = s.partition(" => ")
                try:
                    rules.append(NameRule(pat, rep, typed=True))
                except re.error as exc:
                    raise RulesError(f"{source} at line {no}: {pat!r} is "
                                     f"{invalid_message(exc)}") from None
        return cls(tuple(rules))

    @classmethod
    def from_file(cls, path: str | Path) -> NameNormalizer:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RulesError(f"{path}: expected a readable UTF-8 rules file ({exc})") from None
        return cls.parse(text, str(path))


def name_keys(trace: Trace, normalizer: NameNormalizer) -> tuple[np.ndarray, list[str]]:
    """Per kernel row: code into the list of normalised keys (-1 = no name). The
    normaliser runs once per distinct name, not per kernel."""
    codes, cats = trace.kernels.codes("name")
    keys = [normalizer(c) for c in cats]
    uniq = sorted(set(keys))
    index = {k: i for i, k in enumerate(uniq)}
    lut = np.array([index[k] for k in keys] + [-1], dtype=np.int32)
    return lut[codes], uniq


# --------------------------------------------------------------------------- ranges


@dataclass(frozen=True)
class MarkerRef:
    """The ``n``-th (1-based, by start time) marker called ``name``. Without a
    ``domain`` the first domain of :data:`MARKER_DOMAIN_PREFERENCE` that has the name
    is used (then any other)."""

    name: str
    n: int = 1
    domain: str | None = None

    @classmethod
    def parse(cls, text: str, domain: str | None = None) -> MarkerRef:
        """``NAME`` or ``NAME:N`` (a trailing ``:digits`` is the occurrence)."""
        return cls(*_name_n(text), domain)


@dataclass(frozen=True)
class KernelRef:
    """The ``n``-th (1-based, launch order) instance of a kernel, by normalised name."""

    name: str
    n: int = 1

    @classmethod
    def parse(cls, text: str) -> KernelRef:
        return cls(*_name_n(text))


def _name_n(text: str) -> tuple[str, int]:
    """``NAME`` or ``NAME:N``: a trailing ``:digits`` is the occurrence (``at::x`` is a
    name)."""
    name, sep, n = text.rpartition(":")
    return (name, int(n)) if sep and n.isdigit() and name else (text, 1)


# The GPU mirror of an annotation first: it is what the GPU did during the step (for a
# CUDA-graph replay the host range ends long before the GPU's work does).
MARKER_DOMAIN_PREFERENCE = ("gpu_user_annotation", "user_annotation", "roctx", "nvtx")


@dataclass(frozen=True)
class Range:
    start: int
    end: int
    label: str

    @property
    def span(self) -> int:
        return self.end - self.start


def find_marker(trace: Trace, ref: MarkerRef) -> Range:
    """The marker range ``ref`` names; LookupError (one sentence) when there is none."""
    m = trace.markers
    codes, names = m.codes("name")
    if ref.name not in names:
        raise LookupError(f"no marker named {ref.name!r}")
    hit = codes == names.index(ref.name)
    dcodes, domains = m.codes("domain")
    present = [domains[c] for c in np.unique(dcodes[hit]) if c >= 0]
    ranked = [d for d in MARKER_DOMAIN_PREFERENCE if d in present] or sorted(present)
    domain = ref.domain if ref.domain is not None else ranked[0]
    rows = np.flatnonzero(hit & (dcodes == (domains.index(domain) if domain in domains
                                            else -2)))
    if len(rows) < ref.n or ref.n < 1:
        raise LookupError(f"marker {ref.name!r} ({domain}) occurs {len(rows)} times, "
                          f"occurrence {ref.n} asked for")
    s = m.numpy("start")
    row = rows[np.argsort(s[rows], kind="stable")][ref.n - 1]
    return Range(int(s[row]), int(m.numpy("end")[row]), f"{ref.name} #{ref.n} ({domain})")


def launch_order(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """``rows`` of trace.kernels sorted in launch order: by the launching call's start
    when every row has one (then kernel start), else by kernel start."""
    k = trace.kernels
    start = k.numpy("start")[rows]
    api = k.numpy("api_index", fill=-1).astype(np.int64)[rows] if k.has("api_index") else None
    if api is not None and len(trace.api) and len(rows) and (api >= 0).all():
        return rows[np.lexsort((start, trace.api.numpy("start")[api]))]
    return rows[np.argsort(start, kind="stable")]


def kernel_rows(trace: Trace, name: str, normalizer: NameNormalizer) -> np.ndarray:
    """Rows of trace.kernels whose normalised name is ``normalizer(name)``, in launch
    order."""
    codes, keys = name_keys(trace, normalizer)
    key = normalizer(name)
    if key not in keys:
        return np.zeros(0, dtype=np.int64)
    return launch_order(trace, np.flatnonzero(codes == keys.index(key)))


def find_kernel(trace: Trace, ref: KernelRef, normalizer: NameNormalizer) -> Range:
    rows = kernel_rows(trace, ref.name, normalizer)
    if len(rows) < ref.n or ref.n < 1:
        raise LookupError(f"kernel {ref.name!r} has {len(rows)} instances, "
                          f"instance {ref.n} asked for")
    r = rows[ref.n - 1]
    k = trace.kernels
    return Range(int(k.numpy("start")[r]), int(k.numpy("end")[r]), f"{ref.name} #{ref.n}")


@dataclass(frozen=True)
class Alignment:
    """Per trace: ``origin`` (absolute ns that becomes time 0), ``offset`` (= -origin:
    add it to a trace's times to align) and the aligned range."""

    label: str
    ranges: tuple[Range, ...]

    @property
    def origins(self) -> list[int]:
        return [r.start for r in self.ranges]

    @property
    def offsets(self) -> list[int]:
        return [-r.start for r in self.ranges]

    @property
    def spans(self) -> list[int]:
        return [r.span for r in self.ranges]


def align(traces: Sequence[Trace], at: str | MarkerRef | KernelRef = "start",
          normalizer: NameNormalizer | None = None) -> Alignment:
    """Align traces at their starts (``"start"``: the range is the whole trace), at the
    n-th occurrence of a marker, or at the n-th instance of a kernel. LookupError (one
    sentence naming the trace) when a trace lacks it."""
    norm = normalizer or NameNormalizer()
    ranges = []
    for i, tr in enumerate(traces):
        try:
            if isinstance(at, MarkerRef):
                ranges.append(find_marker(tr, at))
            elif isinstance(at, KernelRef):
                ranges.append(find_kernel(tr, at, norm))
            else:
                ranges.append(_whole(tr))
        except LookupError as exc:
            raise LookupError(f"{_trace_label(tr, i)}: {exc.args[0]}") from None
    label = "start" if isinstance(at, str) else ranges[0].label.split(" (")[0]
    return Alignment(label, tuple(ranges))


def _whole(trace: Trace) -> Range:
    tr = trace.time_range()
    if tr is None:
        raise LookupError("the trace has no timed events")
    return Range(tr[0], tr[1], "whole trace")


def _trace_label(trace: Trace, i: int) -> str:
    src = trace.meta.get("sources") or []
    return str(src[0]) if src else f"trace {i}"


# --------------------------------------------------------------------------- per trace


@dataclass
class TraceSummary:
    """The figures of one trace that a comparison needs (computed once per trace)."""

    metrics: dict[str, tuple[float | int | None, str]]   # key -> (value, unit)
    keys: list[str]                 # normalised kernel names, aligned with the arrays
    count: np.ndarray
    total: np.ndarray
    mean: np.ndarray
    p95: np.ndarray
    raw_names: dict[str, list[str]]  # key -> the names that were merged into it
    devices: list[str]
    provenance: dict[str, Any]
    marker: Range | None
    warnings: list[str]             # the reader's


def summarize(trace: Trace, normalizer: NameNormalizer | None = None,
              marker: MarkerRef | None = None) -> TraceSummary:
    norm = normalizer or NameNormalizer()
    k = trace.kernels
    codes, keys = name_keys(trace, norm)
    dur = (k.numpy("end") - k.numpy("start")).astype(np.int64) if len(k) else np.zeros(0)
    gs = group_stats(codes, keys, dur)
    raw_codes, raw = k.codes("name")
    raw_names: dict[str, list[str]] = {}
    for c in np.unique(raw_codes[raw_codes >= 0]):
        raw_names.setdefault(norm(raw[c]), []).append(raw[c])
    try:
        rng = find_marker(trace, marker) if marker is not None else None
    except LookupError as exc:
        raise LookupError(f"{_trace_label(trace, 0)}: {exc.args[0]}") from None
    return TraceSummary(
        metrics=_metrics(trace, gs.total, rng), keys=gs.names, count=gs.count,
        total=gs.total, mean=gs.mean, p95=gs.p95, raw_names=raw_names,
        devices=[str(x) for x in trace.devices.strings("name")] if len(trace.devices) else [],
        provenance=provenance(trace), marker=rng, warnings=trace.warnings)


def _metrics(trace: Trace, totals: np.ndarray, marker: Range | None) -> dict:
    tr = trace.time_range()
    m: dict[str, tuple[Any, str]] = {"span_ns": (None if tr is None else tr[1] - tr[0], "ns")}
    if marker is not None:
        m["marker_span_ns"] = (marker.span, "ns")
    busy = busy_fraction_per_device(trace)
    m["kernel_count"] = (len(trace.kernels), "count")
    m["kernel_time_ns"] = (int(totals.sum()), "ns")
    m["gpu_busy_fraction"] = (float(np.mean(list(busy.values()))) if busy else None, "fraction")
    idle = idle_breakdown(trace).total()
    m["idle_ns"] = (sum(idle.values()), "ns")
    for c in IDLE_CATEGORIES:
        m[f"idle_{c}_ns"] = (idle[c], "ns")
    delays = qd.queue_delays(trace)
    for key in ("from_api_end", "from_api_start"):
        s = qd.summary(getattr(delays, key)) or {}
        m[f"queue_delay_{key}_p50_ns"] = (s.get("p50"), "ns")
        m[f"queue_delay_{key}_p95_ns"] = (s.get("p95"), "ns")
    m["graph_launch_kernels"] = (len(delays.graph_rows), "count")
    ls = launch_stats(trace, top=0)
    m["kernels_per_second"] = (ls["kernels_per_second"], "1/s")
    m["launch_overhead_ns"] = (ls["launch_overhead_ns"], "ns")
    m["api_call_count"] = (len(trace.api), "count")
    for c in copies_by_direction(trace):
        d = c["direction"]
        m[f"copies_{d}_count"] = (c["count"], "count")
        m[f"copies_{d}_bytes"] = (c["bytes"], "bytes")
        m[f"copies_{d}_ns"] = (c["total_ns"], "ns")
    return m


_META_SKIP = {"sources", "trace_id", "traceName", "events", "pids", "warnings", "provenance",
              "dropped", "baseTimeNanoseconds", "displayTimeUnit", "env", "_original_names",
              "cached"}


def provenance(trace: Trace) -> dict[str, Any]:
    """Where a run came from: GPUs, versions, tool, command, env knobs (flat)."""
    out: dict[str, Any] = {}
    d = trace.devices
    for col, key in (("name", "gpu"), ("arch", "gpu_arch"), ("compute_units", "compute_units"),
                     ("memory_bytes", "gpu_memory_bytes"), ("host", "host")):
        vals = sorted({v for v in d.strings(col) if v is not None}, key=str) if len(d) else []
        if vals:
            out[key] = vals[0] if len(vals) == 1 else ", ".join(str(v) for v in vals)
    out["gpu_count"] = len(d)
    for k, v in sorted(trace.meta.items()):
        if k not in _META_SKIP and isinstance(v, (str, int, float, bool)):
            out[k] = v
    env = trace.meta.get("env")
    if isinstance(env, dict):
        out.update({f"env.{k}": v for k, v in sorted(env.items())})
    run = trace.meta.get("run")
    if isinstance(run, dict):     # the run folder's spec (parsers.run_provenance)
        out.update({f"run.{k}": (" ".join(map(str, v)) if isinstance(v, list) else v)
                    for k, v in run.items() if k in ("id", "command", "cwd", "target")})
        out["run.profiler"] = (run.get("profiler") or {}).get("name")
        out.update({f"run.env.{k}": "(unset)" if v is None else v
                    for k, v in sorted((run.get("env") or {}).items())})
    return out


# --------------------------------------------------------------------------- comparison


@dataclass
class KernelDiff:
    """Per normalised kernel name, sorted by |delta total| (largest first). Arrays are
    aligned with ``names``; a side without the kernel has count 0 and NaN stats."""

    names: list[str]
    status: list[str]            # "matched", "added" (only in B), "removed" (only in A)
    a_count: np.ndarray
    b_count: np.ndarray
    a_total: np.ndarray
    b_total: np.ndarray
    a_mean: np.ndarray
    b_mean: np.ndarray
    a_p95: np.ndarray
    b_p95: np.ndarray
    raw_names: list[list[str]]   # names merged into each row (A's then B's new ones)

    @property
    def delta_total(self) -> np.ndarray:
        return self.b_total - self.a_total

    @property
    def ratio(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.a_total > 0, self.b_total / np.where(
                self.a_total > 0, self.a_total, 1), np.nan)

    @property
    def added(self) -> list[str]:
        return [n for n, s in zip(self.names, self.status) if s == "added"]

    @property
    def removed(self) -> list[str]:
        return [n for n, s in zip(self.names, self.status) if s == "removed"]

    def time_overlap(self) -> tuple[float, float]:
        """Share of A's and of B's kernel time spent in kernels that both runs have."""
        both = np.array([s == "matched" for s in self.status], dtype=bool)
        ta, tb = self.a_total.sum(), self.b_total.sum()
        return (float(self.a_total[both].sum() / ta) if ta else 1.0,
                float(self.b_total[both].sum() / tb) if tb else 1.0)


def kernel_diff(a: TraceSummary, b: TraceSummary) -> KernelDiff:
    names = sorted(set(a.keys) | set(b.keys))
    idx = {n: i for i, n in enumerate(names)}
    n = len(names)

    def spread(s: TraceSummary) -> tuple[np.ndarray, ...]:
        pos = np.array([idx[x] for x in s.keys], dtype=np.int64)
        cnt = np.zeros(n, np.int64)
        tot = np.zeros(n)
        mean, p95 = np.full(n, np.nan), np.full(n, np.nan)
        if len(pos):
            cnt[pos], tot[pos], mean[pos], p95[pos] = s.count, s.total, s.mean, s.p95
        return cnt, tot, mean, p95

    ac, at, am, ap = spread(a)
    bc, bt, bm, bp = spread(b)
    order = np.lexsort((np.arange(n), -np.maximum(at, bt), -np.abs(bt - at)))
    status = np.where(ac == 0, "added", np.where(bc == 0, "removed", "matched"))
    raw = [a.raw_names.get(x, []) + [r for r in b.raw_names.get(x, [])
                                     if r not in a.raw_names.get(x, [])] for x in names]
    return KernelDiff([names[i] for i in order], [str(status[i]) for i in order],
                      ac[order], bc[order], at[order], bt[order], am[order], bm[order],
                      ap[order], bp[order], [raw[i] for i in order])


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


# --------------------------------------------------------------------------- instances


@dataclass
class InstanceDiff:
    """i-th instance of one kernel in A against the i-th in B (launch order)."""

    name: str
    a_rows: np.ndarray       # rows in A's kernels table, the matched ones
    b_rows: np.ndarray
    a_duration: np.ndarray   # ns
    b_duration: np.ndarray
    a_unmatched: int         # instances beyond the shorter run's count
    b_unmatched: int

    @property
    def delta(self) -> np.ndarray:
        return self.b_duration - self.a_duration


def instance_diff(a: Trace, b: Trace, name: str,
                  normalizer: NameNormalizer | None = None) -> InstanceDiff:
    norm = normalizer or NameNormalizer()
    ra, rb = kernel_rows(a, name, norm), kernel_rows(b, name, norm)
    n = min(len(ra), len(rb))

    def dur(t: Trace, rows: np.ndarray) -> np.ndarray:
        return (t.kernels.numpy("end")[rows] - t.kernels.numpy("start")[rows]).astype(np.int64)

    return InstanceDiff(norm(name), ra[:n], rb[:n], dur(a, ra[:n]), dur(b, rb[:n]),
                        len(ra) - n, len(rb) - n)


# --------------------------------------------------------------------------- JSON


def _num(x: Any) -> Any:
    """A JSON-safe number: numpy scalars to Python, NaN/inf to None."""
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if np.isfinite(x) else None
    return x


def _ns(x: Any) -> int | None:
    return None if x is None or not np.isfinite(x) else int(round(float(x)))


def to_json(c: Comparison, top: int | None = None) -> dict[str, Any]:
    """One JSON-serialisable dict (keys documented in `hipscope compare --help`)."""
    h, kd = c.headline, c.kernels
    ratio = kd.ratio
    rows = range(len(kd.names)) if top is None else range(min(top, len(kd.names)))
    out: dict[str, Any] = {
        "span_ns": {k: _num(h["span_ns"][k]) for k in ("a", "b", "ratio")},
        "gpu_busy_fraction": {k: _num(h["gpu_busy_fraction"][k]) for k in ("a", "b")},
        "kernels": [{
            "name": kd.names[i], "status": kd.status[i],
            "a_count": int(kd.a_count[i]), "b_count": int(kd.b_count[i]),
            "a_total_ns": _ns(kd.a_total[i]), "b_total_ns": _ns(kd.b_total[i]),
            "delta_ns": _ns(kd.delta_total[i]), "ratio": _num(ratio[i]),
            "a_mean_ns": _ns(kd.a_mean[i]), "b_mean_ns": _ns(kd.b_mean[i]),
            "a_p95_ns": _ns(kd.a_p95[i]), "b_p95_ns": _ns(kd.b_p95[i]),
            "merged_names": kd.raw_names[i] if len(kd.raw_names[i]) > 1 else [],
        } for i in rows],
        "added": kd.added, "removed": kd.removed,
        "headline": {k: {f: _num(v) for f, v in d.items()} for k, d in h.items()},
        "provenance": {k: {f: _num(v) for f, v in d.items()} for k, d in c.provenance.items()},
        "not_comparable": c.not_comparable,
        "warnings": list(c.warnings),
    }
    if c.alignment is not None:
        al = c.alignment
        ra, rb = al.ranges
        out["aligned"] = {"label": al.label, "offset_ns": {"a": al.offsets[0], "b": al.offsets[1]},
                          "a": {"start": ra.start, "end": ra.end, "span_ns": ra.span},
                          "b": {"start": rb.start, "end": rb.end, "span_ns": rb.span},
                          "ratio": (rb.span / ra.span) if ra.span else None}
    return out
