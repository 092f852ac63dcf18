"""The comparison tab's plain state and the work behind it (Qt-free).

* :class:`CompareState`: what the comparison view shows -- the result, the alignment
  choice, the normalisation rules, the selected kernel, the kernel filter, which B the
  tables show, delta colouring -- observable like :class:`~hipscope.model.ViewState`.
  Widgets bind to it; a controller turns changes that need work into worker jobs.
* :func:`compute`: a new result (comparisons, instance matcher, duration ratios,
  alignment) from traces and rules text, with ``progress``/``cancelled``.
* :class:`Matcher`: kernel instance i of a run <-> instance i (launch order) of the same
  normalised name in another run; vectorised, built once per result.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model import Trace
from ..model.progress import Cancelled
from ..model.view_state import Listener, Observable
from . import diff
from .context import analyses_of
from .diff.by_op import attach_ops, matched_op_instances
from .ops import STEP_PREFIX

DEFAULT_RULES_TEXT = "# one regex a line: PATTERN (deleted) or PATTERN => REPLACEMENT\n@defaults\n"
ALIGN_KINDS = ("start", "marker", "kernel", "op")
OP_ROW_KEYS = ("name", "path", "shapes", "b_shapes")   # what names a row of the Ops table
ANNOTATION_DOMAINS = diff.MARKER_DOMAIN_PREFERENCE


@dataclass(frozen=True)
class AlignChoice:
    """Where the timelines are aligned: run starts, the n-th marker ``name``, the
    n-th instance (launch order) of kernel ``name``, or (kind ``"op"``) the n-th
    matched instance of a row of the Ops table (``op_row``: its :data:`OP_ROW_KEYS`
    items) in A and run ``b``."""

    kind: str = "start"
    name: str = ""
    n: int = 1
    op_row: tuple[tuple[str, str], ...] = ()
    b: int = 1

    @classmethod
    def at_op(cls, row: dict, n: int, b: int = 1) -> AlignChoice:
        """The choice for instance ``n`` of Ops-table ``row`` (A against run ``b``)."""
        keys = tuple((k, row[k]) for k in OP_ROW_KEYS if k in row)
        return cls("op", row["name"], int(n), keys, int(b))

    def ref(self) -> str | diff.MarkerRef | diff.KernelRef:
        if self.kind == "marker":
            return diff.MarkerRef(self.name, self.n)
        if self.kind == "kernel":
            return diff.KernelRef(self.name, self.n)
        return "start"


# --------------------------------------------------------------------------- matching


def launch_ordinals(trace: Trace, codes: np.ndarray) -> np.ndarray:
    """Per kernel row: its index in launch order among the rows of the same code (as
    :func:`diff.kernel_rows` orders them); -1 for rows without a code."""
    out = np.full(len(codes), -1, dtype=np.int64)
    order = np.argsort(codes, kind="stable")
    cs = codes[order]
    cuts = np.flatnonzero(cs[1:] != cs[:-1]) + 1
    for rows in np.split(order, cuts):
        if len(rows) and codes[rows[0]] >= 0:
            out[diff.launch_order(trace, rows)] = np.arange(len(rows))
    return out


class Matcher:
    """Kernel instances matched across runs by (normalised name, launch-order index)."""

    def __init__(self, traces: Sequence[Trace], normalizer: diff.NameNormalizer,
                 cancelled: Callable[[], bool] | None = None):
        per = [diff.name_keys(t, normalizer) for t in traces]
        self.names = sorted({k for _, keys in per for k in keys})
        index = {k: i for i, k in enumerate(self.names)}
        self.key: list[np.ndarray] = []
        self.ordinal: list[np.ndarray] = []
        self._lookup: list[tuple[np.ndarray, np.ndarray]] = []
        for t, (codes, keys) in zip(traces, per):
            if cancelled is not None and cancelled():
                raise Cancelled()
            lut = np.array([index[k] for k in keys] + [-1], dtype=np.int64)
            key = lut[codes]
            ordv = launch_ordinals(t, codes)
            comp = self._composite(key, ordv)
            order = np.argsort(comp, kind="stable")
            self.key.append(key)
            self.ordinal.append(ordv)
            self._lookup.append((comp[order], order))

    @staticmethod
    def _composite(key: np.ndarray, ordinal: np.ndarray) -> np.ndarray:
        return np.where(key >= 0, (key << 32) | np.maximum(ordinal, 0), -1)

    def match_all(self, i: int, j: int) -> np.ndarray:
        """Per kernel row of run ``i``: the matched row of run ``j`` (-1: none)."""
        comp = self._composite(self.key[i], self.ordinal[i])
        sorted_comp, rows = self._lookup[j]
        if len(sorted_comp) == 0:
            return np.full(len(comp), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(sorted_comp, comp), len(sorted_comp) - 1)
        hit = (sorted_comp[pos] == comp) & (comp >= 0)
        return np.where(hit, rows[pos], -1)

    def match(self, i: int, row: int, j: int) -> int:
        """The row of run ``j`` matching kernel ``row`` of run ``i`` (-1: none)."""
        if not 0 <= row < len(self.key[i]) or self.key[i][row] < 0:
            return -1
        comp = int(self.key[i][row]) << 32 | int(self.ordinal[i][row])
        sorted_comp, rows = self._lookup[j]
        p = int(np.searchsorted(sorted_comp, comp))
        return int(rows[p]) if p < len(sorted_comp) and sorted_comp[p] == comp else -1

    def rows_of(self, i: int, name: str) -> np.ndarray:
        """Rows of run ``i`` with normalised name ``name``, in launch order."""
        if name not in self.names:
            return np.zeros(0, dtype=np.int64)
        k = self.names.index(name)
        rows = np.flatnonzero(self.key[i] == k)
        return rows[np.argsort(self.ordinal[i][rows], kind="stable")]


def durations(trace: Trace) -> np.ndarray:
    k = trace.kernels
    if not len(k):
        return np.zeros(0, dtype=np.int64)
    return (k.numpy("end") - k.numpy("start")).astype(np.int64)


def duration_ratios(traces: Sequence[Trace], matcher: Matcher) -> list[np.ndarray]:
    """Per run, per kernel row: its duration over the matched instance's in the
    partner run (A's partner is the first B, every B's is A); NaN without a match.
    Above 1: slower than the partner."""
    durs = [durations(t).astype(np.float64) for t in traces]
    out = []
    for i in range(len(traces)):
        j = 1 if i == 0 else 0
        if j >= len(traces):
            out.append(np.full(len(durs[i]), np.nan))
            continue
        m = matcher.match_all(i, j)
        other = np.where(m >= 0, durs[j][np.maximum(m, 0)] if len(durs[j]) else 0, np.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            out.append(np.where(other > 0, durs[i] / np.where(other > 0, other, 1), np.nan))
    return out


def instances(traces: Sequence[Trace], matcher: Matcher, name: str, b: int = 1,
              ) -> diff.InstanceDiff:
    """Instance i of kernel ``name`` in A against instance i in run ``b`` (the same as
    :func:`diff.instance_diff`, from the matcher's prepared keys)."""
    ra, rb = matcher.rows_of(0, name), matcher.rows_of(b, name)
    n = min(len(ra), len(rb))
    da, db = durations(traces[0]), durations(traces[b])
    return diff.InstanceDiff(name, ra[:n], rb[:n], da[ra[:n]], db[rb[:n]],
                             len(ra) - n, len(rb) - n)


# --------------------------------------------------------------------------- markers


def _natural(s: str) -> list:
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", s)]


def common_marker_names(traces: Sequence[Trace]) -> list[str]:
    """Annotation names (user annotations, NVTX/roctx ranges) present in every run,
    in natural order ('step 2' before 'step 10')."""
    common: set[str] | None = None
    for t in traces:
        m = t.markers
        names: set[str] = set()
        if len(m):
            codes, cats = m.codes("name")
            dcodes, domains = m.codes("domain")
            ok_dom = np.array([d in ANNOTATION_DOMAINS for d in domains] + [False])
            sel = ok_dom[np.where(dcodes >= 0, dcodes, len(domains))] & (codes >= 0)
            names = {cats[c] for c in np.unique(codes[sel])}
        common = names if common is None else common & names
    return sorted(common or (), key=_natural)


# --------------------------------------------------------------------------- results


@dataclass
class CompareResult:
    """Everything one (traces, rules) pair gives; ``comparisons[i]`` is A vs run i+1."""

    comparisons: list[diff.Comparison]
    matcher: Matcher
    ratios: list[np.ndarray]
    markers: list[str]
    normalizer: diff.NameNormalizer


def compute(traces: Sequence[Trace], rules_text: str,
            progress: Callable[[float], None] | None = None,
            cancelled: Callable[[], bool] | None = None) -> CompareResult:
    """Compare A (``traces[0]``) with every other run; RulesError on bad rules."""
    norm = diff.NameNormalizer.parse(rules_text, "normalisation rules")
    prog = progress or (lambda f: None)
    comps = diff.compare_many(traces[0], traces[1:], norm,
                              progress=lambda f: prog(0.7 * f), cancelled=cancelled)
    attach_ops(traces[0], traces[1:], comps, "auto")     # as `compare --by auto`
    matcher = Matcher(traces, norm, cancelled)
    prog(0.9)
    ratios = duration_ratios(traces, matcher)
    prog(1.0)
    return CompareResult(comps, matcher, ratios, common_marker_names(traces), norm)


def alignment(traces: Sequence[Trace], choice: AlignChoice,
              normalizer: diff.NameNormalizer) -> diff.Alignment:
    """LookupError (one sentence naming the run) when a run lacks the anchor."""
    if choice.kind == "op":
        al, error = op_alignment(traces, dict(choice.op_row), choice.n, choice.b)
        if al is None:
            raise LookupError(error)
        return al
    return diff.align(traces, choice.ref(), normalizer)


def initial_windows(al: diff.Alignment, choice: AlignChoice) -> list[tuple[int, int]]:
    """The windows shown right after aligning: each run's own anchor at the same
    screen position (the left edge; a quarter in for a kernel instance), one shared
    duration that holds the longest aligned range."""
    longest = max(al.spans) if al.spans else 1
    if choice.kind == "kernel":
        span = max(longest * 40, 50_000)
        return [(o - span // 4, o - span // 4 + span) for o in al.origins]
    span = max(int(longest * 1.02), 1)
    return [(o, o + span) for o in al.origins]


def synced_window(window: tuple[int, int], origin_from: int, origin_to: int
                  ) -> tuple[int, int]:
    """``window`` of one run shown in another: the same times relative to each run's
    alignment origin (window_B = window_A - origin_A + origin_B)."""
    return window[0] - origin_from + origin_to, window[1] - origin_from + origin_to


# --------------------------------------------------------------------------- ops


def _is_row(row: dict, fa, i: int, fb, j: int) -> bool:
    """Whether the matched pair (op ``i`` of A's forest ``fa``, op ``j`` of B's) belongs
    to a row of the Ops table (a finer row: A's module path, the name, A's input
    shapes and, where the row has them, B's)."""
    name = fa.name_of(i)
    if "path" in row:
        return (fa.module_path(i), name, fa.shape_of(i)) == (
            row["path"], row["name"], row.get("shapes", "")) and (
            "b_shapes" not in row or fb.shape_of(j) == row["b_shapes"])
    return name == row["name"] or (row["name"] == STEP_PREFIX and name.startswith(STEP_PREFIX)
                                   and name[len(STEP_PREFIX):].isdigit())


def _op_range(trace, att, i: int, label: str) -> diff.Range:
    """Op ``i``'s start to the later of its end and the end of the GPU work launched
    inside it (on its thread, while it ran)."""
    f = att.forest
    s, e = int(f.start[i]), int(f.end[i])
    op, _, _, _ = att.events()
    ends = np.concatenate([t.numpy("end", fill=0).astype(np.int64) if len(t) else
                           np.zeros(0, np.int64) for t in (trace.kernels, trace.copies)])
    ok = np.flatnonzero(op >= 0)
    lo = op[ok]
    inside = ok[(f.thread[lo] == f.thread[i]) & (f.start[lo] >= s) & (f.start[lo] < e)]
    return diff.Range(s, max(e, int(ends[inside].max())) if len(inside) else e, label)


def op_alignment(traces, row: dict, n: int, b: int = 1):
    """(Alignment at the n-th matched instance of ``row`` in A and run ``b``, other
    runs at their starts; None and one sentence when there is no such instance)."""
    atts = [analyses_of(t).ops() for t in (traces[0], traces[b])]
    m = matched_op_instances(*atts)
    fa, fb = atts[0].forest, atts[1].forest
    pick = [k for k, (i, j) in enumerate(zip(m["a"].tolist(), m["b"].tolist()))
            if _is_row(row, fa, i, fb, j)]
    label = f"{row['name']} #{n}"
    if not 1 <= n <= len(pick):
        return None, (f"op {row['name']!r} has {len(pick)} matched instances, instance {n} "
                      "asked for")
    i, j = int(m["a"][pick[n - 1]]), int(m["b"][pick[n - 1]])
    ranges = []
    for k, t in enumerate(traces):
        if k in (0, b):
            ranges.append(_op_range(t, atts[0 if k == 0 else 1], i if k == 0 else j, label))
        else:
            tr = t.time_range() or (0, 1)
            ranges.append(diff.Range(tr[0], tr[1], "whole trace"))
    return diff.Alignment(label, tuple(ranges)), ""


# --------------------------------------------------------------------------- state


@dataclass
class CompareState(Observable):
    """Observable plain state of one comparison (see module docstring). Listeners get
    ``(what, value)``; ``what`` is the field's name."""

    labels: list[str] = field(default_factory=list)     # one per run: A, B (, B2 ...)
    rules_text: str = DEFAULT_RULES_TEXT
    align: AlignChoice = field(default_factory=AlignChoice)
    result: CompareResult | None = None
    alignment: diff.Alignment | None = None
    align_error: str = ""
    error: str = ""             # the last failed computation (e.g. bad rules)
    busy: bool = False
    progress: float = 0.0
    b_index: int = 1            # which run the tables compare with A
    kernel: str | None = None   # selected normalised kernel name
    kernel_filter: str = ""
    delta_colours: bool = False
    _listeners: list[Listener] = field(default_factory=list, repr=False)

    def _set(self, what: str, value: Any, force: bool = False) -> None:
        if force or getattr(self, what) != value:
            setattr(self, what, value)
            self._emit(what, value)

    @property
    def comparison(self) -> diff.Comparison | None:
        r = self.result
        return r.comparisons[self.b_index - 1] if r is not None else None

    def set_rules_text(self, text: str) -> None:
        self._set("rules_text", text)

    def set_align(self, choice: AlignChoice) -> None:
        if choice.kind not in ALIGN_KINDS:
            raise ValueError(f"alignment kind {choice.kind!r} not in {ALIGN_KINDS}")
        self._set("align", choice, force=True)       # re-aligning re-applies the windows

    def set_result(self, result: CompareResult) -> None:
        self.error = ""
        if self.kernel is not None and self.kernel not in result.matcher.names:
            self.kernel = None
        self._set("result", result, force=True)

    def set_alignment(self, al: diff.Alignment | None, error: str = "") -> None:
        self.align_error = error
        self._set("alignment", al, force=True)

    def set_error(self, message: str) -> None:
        self._set("error", message, force=True)

    def set_busy(self, busy: bool, progress: float = 0.0) -> None:
        self.progress = progress
        self._set("busy", busy, force=True)

    def set_b_index(self, b: int) -> None:
        self._set("b_index", int(b))

    def select_kernel(self, name: str | None) -> None:
        self._set("kernel", name)

    def set_kernel_filter(self, text: str) -> None:
        self._set("kernel_filter", text)

    def set_delta_colours(self, on: bool) -> None:
        self._set("delta_colours", bool(on))
