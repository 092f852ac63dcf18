"""The one rule for impossible times, applied to every reader's trace.

Readers pass the raw start and end of every row through (int64 ns; a sum that would
overflow int64 saturates at the int64 limits instead of wrapping, see
:func:`add_ns`). :func:`drop_bad_intervals` then, once, for every table with
start/end (kernels, API calls, copies, markers):

* drops rows that end before they start, rows with a negative start or end, and rows
  with a start or end past 2^62 ns (146 years: no clock gives that), with one warning
  per table that counts each kind ("dropped 3 kernels that end before they start");
* keeps row links consistent: ``api_index`` of kernels/copies pointing at a dropped
  API call becomes null, counters of a dropped kernel are dropped with it, and every
  other link is renumbered;
* warns (drops nothing) when a few rows lie far from all the others. Rule: sort every
  start and end of the trace; when the widest gap between neighbours is at least
  an hour, at least ten times the span of everything else, and one side of it holds
  at most 1 % of the time points (or 2), that side is "far"; repeat on the rest (at
  most 3 times). A real trace can idle for hours between two bursts of work, but a
  few rows days away from seconds of work are a broken clock or a planted value.
"""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pyarrow as pa

from ..model import Trace
from ..model.diagnostics import coded
from ..model.table import Table
from ..model.units import fmt_duration

LIMIT_NS = 1 << 62
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min
FAR_GAP_NS = 3_600 * 10**9      # an hour
FAR_RATIO = 10                  # the gap against the span of everything else
FAR_FEW = 100                   # "a few": at most 1 % of the time points (or 2)
_TIMED = ("kernels", "api", "copies", "markers")
_NOUNS = {"kernels": ("kernel", "kernels"), "api": ("API call", "API calls"),
          "copies": ("memory copy", "memory copies"), "markers": ("marker", "markers")}
_REASONS = (("backwards", ("that ends before it starts", "that end before they start")),
            ("negative", ("with a negative timestamp",) * 2),
            ("past", ("with a timestamp past 2^62 ns",) * 2))


# --------------------------------------------------------------------------- arithmetic

def add_ns(a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
    """``a + b`` in int64 where an overflow saturates at the int64 limits (which the
    rule then drops as past 2^62 / negative) instead of wrapping round."""
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    with np.errstate(over="ignore"):
        out = a + b
    over = ((a >= 0) == (b >= 0)) & ((out >= 0) != (a >= 0))
    if np.any(over):
        out = np.where(over, np.where(a >= 0, INT64_MAX, INT64_MIN), out)
    return out


def int64_sat(v: int) -> int:
    """A Python int (e.g. a uint64 protobuf time) saturated into int64."""
    return INT64_MAX if v > INT64_MAX else (INT64_MIN if v < INT64_MIN else v)


# --------------------------------------------------------------------------- the rule

def _bad_rows(t: Table) -> dict[str, np.ndarray] | None:
    """Masks of rows to drop, by reason (each row counted under its first reason); None
    when there are none (found with four reductions and one comparison: the usual case
    builds no masks)."""
    s, e = t.numpy("start", fill=0), t.numpy("end", fill=0)
    if (min(int(s.min()), int(e.min())) >= 0 and max(int(s.max()), int(e.max())) <= LIMIT_NS
            and not (e < s).any()):
        return None
    past = (s > LIMIT_NS) | (e > LIMIT_NS)
    backwards = ~past & (e < s)
    negative = ~past & ~backwards & ((s < 0) | (e < 0))
    return {"past": past, "negative": negative, "backwards": backwards}


def _count_text(name: str, masks: dict[str, np.ndarray]) -> str:
    parts = []
    for key, text in _REASONS:
        n = int(masks[key].sum())
        if n:
            noun = f" {_NOUNS[name][n != 1]}" if not parts else ""
            parts.append(f"{n:,}{noun} {text[n != 1]}")
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _new_index(keep: np.ndarray) -> np.ndarray:
    return np.where(keep, np.cumsum(keep) - 1, -1)


def _relink(t: Table, col: str, new_index: np.ndarray) -> tuple[Table, np.ndarray]:
    """``col`` renumbered through ``new_index`` (null where its row was dropped), and
    the mask of rows whose link pointed at a dropped row."""
    if col not in t.data.column_names or not len(t):
        return t, np.zeros(len(t), bool)
    arr = t.column(col)
    vals = t.numpy(col, fill=-1).astype(np.int64)
    inside = (vals >= 0) & (vals < len(new_index))
    nv = np.where(inside, new_index[np.clip(vals, 0, max(len(new_index) - 1, 0))], vals)
    lost = inside & (nv < 0)
    mask = ~t.valid(col) | lost
    out = pa.array(np.where(mask, 0, nv), mask=mask if mask.any() else None).cast(arr.type)
    return Table(t.spec, t.data.set_column(t.data.column_names.index(col), col, out)), lost


def drop_bad_intervals(trace: Trace, path: str | os.PathLike | None = None) -> Trace:
    """``trace`` without rows of impossible times, links renumbered, one warning per
    table with counts, and a warning when a few rows lie far from all the others.
    Warnings name ``path`` (what was opened), else the trace's one source file."""
    sources = trace.meta.get("sources") or []
    where = path if path is not None else (sources[0] if len(sources) == 1 else None)
    prefix = f"{where}: " if where is not None else ""
    warnings: list[str] = []
    tables = {name: getattr(trace, name) for name in (*_TIMED, "counters")}
    keeps: dict[str, np.ndarray] = {}
    dropped = dict(trace.meta.get("dropped") or {})
    for name in _TIMED:
        if not len(tables[name]):
            continue
        masks = _bad_rows(tables[name])
        if masks is None:
            continue
        bad = masks["past"] | masks["negative"] | masks["backwards"]   # some row: not None
        keeps[name] = ~bad
        text = f"{prefix}dropped {_count_text(name, masks)}"
        warnings.append(coded("times.end_before_start", text, where) if masks["backwards"].any()
                        else coded("times.out_of_range", text, where))
        dropped[f"{name} with impossible times"] = int(bad.sum())
    if keeps:
        tables = _apply(tables, keeps, warnings, prefix)
    far = _far_warning(tables, prefix)
    if far:
        warnings.append(coded("times.far_rows", far, where))
    if not warnings:
        return trace
    meta = {**trace.meta, "warnings": [*trace.meta.get("warnings", []), *warnings]}
    if keeps:
        meta["dropped"] = dropped
    return replace(trace, meta=meta, **tables)


def _apply(tables: dict[str, Table], keeps: dict[str, np.ndarray], warnings: list[str],
           prefix: str) -> dict[str, Table]:
    """Take the kept rows and renumber api_index / kernel_index links."""
    out = dict(tables)
    for name, keep in keeps.items():
        out[name] = tables[name].take(np.flatnonzero(keep))
    if "api" in keeps:
        idx = _new_index(keeps["api"])
        out["kernels"], _ = _relink(out["kernels"], "api_index", idx)
        out["copies"], _ = _relink(out["copies"], "api_index", idx)
    if "kernels" in keeps and len(out["counters"]):
        counters, lost = _relink(out["counters"], "kernel_index", _new_index(keeps["kernels"]))
        if lost.any():
            counters = counters.take(np.flatnonzero(~lost))
            n = int(lost.sum())
            warnings.append(coded("times.dropped_counters",
                                  f"{prefix}dropped {n:,} counter value{'s' * (n != 1)} of the "
                                  "kernels dropped for impossible times", prefix[:-2] or None))
        out["counters"] = counters
    return out


# --------------------------------------------------------------------------- far rows

def _far_range(points: np.ndarray) -> tuple[int, int] | None:
    """(lo, hi) of the main group of time points when some lie far away, else None."""
    p = np.sort(points)
    lo_i, hi_i, found = 0, len(p), False
    few = max(2, len(p) // FAR_FEW)
    for _ in range(3):
        q = p[lo_i:hi_i]
        if len(q) < 2:
            break
        gaps = np.diff(q)
        i = int(np.argmax(gaps))
        gap = int(gaps[i])
        rest = int(q[-1] - q[0]) - gap
        n_left, n_right = i + 1, len(q) - i - 1
        if gap < FAR_GAP_NS or gap < FAR_RATIO * rest or min(n_left, n_right) > few:
            break                        # two bursts of work apart are a real trace
        found = True
        if n_left >= n_right:
            hi_i = lo_i + n_left
        else:
            lo_i = lo_i + n_left
    return (int(p[lo_i]), int(p[hi_i - 1])) if found else None


def _far_warning(tables: dict[str, Table], prefix: str) -> str | None:
    timed = [(n, tables[n]) for n in _TIMED if len(tables[n])]
    if not timed:
        return None
    starts = {n: t.numpy("start", fill=0) for n, t in timed}
    ends = {n: t.numpy("end", fill=0) for n, t in timed}
    lo = min(int(v.min()) for v in starts.values())
    if max(int(v.max()) for v in ends.values()) - lo < FAR_GAP_NS:
        return None                         # under an hour in all: no gap to sort for
    rng = _far_range(np.concatenate([*starts.values(), *ends.values()]))
    if rng is None:
        return None
    lo, hi = rng
    parts, n_far, n_all, dist = [], 0, 0, 0
    for name, _t in timed:
        s, e = starts[name], ends[name]
        far = (s < lo) | (e > hi)
        n_all += len(s)
        k = int(far.sum())
        if k:
            n_far += k
            parts.append(f"{k:,} {_NOUNS[name][k != 1]}")
            dist = max(dist, int(max(lo - s[far].min(), e[far].max() - hi, 0)))
    what = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return (f"{prefix}{what} {'lies' if n_far == 1 else 'lie'} up to {fmt_duration(dist)} away from the other "
            f"{n_all - n_far:,} timed rows (which span {fmt_duration(hi - lo)}): "
            "their timestamps look wrong, and the trace's time span is mostly that gap")

