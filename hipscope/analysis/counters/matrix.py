"""Pivot of ``trace.counters`` (long form) to the kernels x counters matrix, per
dispatch or per kernel name, and column selection."""

from __future__ import annotations

import numpy as np

from ...model import Trace
from ...model.names import compile_pattern
from ...model.progress import CancelledFn, check_cancel
from .columns import CounterColumn, CounterMatrix, is_instance_counter
from .derived import derived_columns


def _counter_kernel_rows(trace: Trace) -> np.ndarray:
    """trace.kernels row of each counter value (-1 where unknown): kernel_index, else
    the dispatch id looked up in the kernels table."""
    c, k = trace.counters, trace.kernels
    ki = c.numpy("kernel_index", fill=-1).astype(np.int64)
    miss = ki < 0
    if miss.any() and c.has("dispatch_id") and k.has("dispatch_id"):
        kd = k.numpy("dispatch_id", fill=-1).astype(np.int64)
        order = np.argsort(kd, kind="stable")
        cd = c.numpy("dispatch_id", fill=-2).astype(np.int64)[miss]
        pos = np.clip(np.searchsorted(kd[order], cd), 0, max(len(kd) - 1, 0))
        found = (kd[order][pos] == cd) if len(kd) else np.zeros(len(cd), bool)
        ki[np.flatnonzero(miss)] = np.where(found, order[pos] if len(kd) else -1, -1)
    ki[ki >= len(k)] = -1
    return ki


def counter_matrix(trace: Trace, per: str = "dispatch", derived: bool = True,
                   instances: bool = True, cancelled: CancelledFn | None = None
                   ) -> CounterMatrix:
    """Pivot ``trace.counters`` to rows x columns (see :class:`CounterMatrix`).

    Parameters
    ----------
    per : "dispatch" or "kernel" (mean over the dispatches of one kernel name).
    derived : append the derived metrics whose inputs are present (first columns).
    instances : keep per-instance counters such as ``TCC_HIT[12]``.
    cancelled : checked between the steps; raises :class:`~hipscope.model.progress.Cancelled`.
    """
    if per not in ("dispatch", "kernel"):
        raise ValueError(f"per must be 'dispatch' or 'kernel', not {per!r}")
    check_cancel(cancelled)
    c, k = trace.counters, trace.kernels
    krow = _counter_kernel_rows(trace) if len(c) else np.zeros(0, np.int64)
    codes, names = c.codes("counter") if len(c) else (np.zeros(0, np.int32), [])
    ok = (krow >= 0) & (codes >= 0)
    values = c.numpy("value") if len(c) else np.zeros(0)
    krow, codes, values = krow[ok], codes[ok], values[ok]
    used = np.unique(codes)
    keep = [int(u) for u in used if instances or not is_instance_counter(names[u])]
    col_of = np.full(len(names) + 1, -1, dtype=np.int64)
    col_of[keep] = np.arange(len(keep))
    check_cancel(cancelled)
    rows = np.unique(krow)
    r = np.searchsorted(rows, krow)
    ci = col_of[codes]
    sel = ci >= 0
    total = np.zeros((len(rows), len(keep)))
    count = np.zeros((len(rows), len(keep)))
    np.add.at(total, (r[sel], ci[sel]), values[sel])
    np.add.at(count, (r[sel], ci[sel]), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mat = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    check_cancel(cancelled)
    units = _units(trace)
    columns = [CounterColumn(names[u], units.get(names[u])) for u in keep]
    starts = k.numpy("start")[rows] if len(rows) else np.zeros(0, np.int64)
    ends = k.numpy("end")[rows] if len(rows) else np.zeros(0, np.int64)
    if derived and len(rows):
        dmat, dcols = derived_columns(trace, mat, columns,
                                      (ends - starts).astype(np.float64), cancelled)
        mat = np.concatenate([dmat, mat], axis=1)
        columns = dcols + columns
    kcodes, knames = k.codes("name") if len(k) else (np.zeros(0, np.int32), [])
    labels = [knames[kcodes[i]] if kcodes[i] >= 0 else "?" for i in rows]
    devices = k.numpy("device")[rows].astype(np.int64) if len(rows) else np.zeros(0, np.int64)
    m = CounterMatrix(mat, columns, labels, rows.astype(np.int64), np.ones(len(rows), np.int64),
                      "dispatch", starts.astype(np.int64), ends.astype(np.int64), devices)
    return m if per == "dispatch" else aggregate_by_kernel(m)


def _units(trace: Trace) -> dict[str, str]:
    """Unit of each counter name (the first one recorded), when the format has units."""
    c = trace.counters
    if not len(c) or not c.has("unit"):
        return {}
    ccodes, cnames = c.codes("counter")
    ucodes, unames = c.codes("unit")
    ok = (ccodes >= 0) & (ucodes >= 0)
    pairs = np.unique(np.stack([ccodes[ok], ucodes[ok]], axis=1), axis=0)
    out: dict[str, str] = {}
    for a, b in pairs.tolist():
        out.setdefault(cnames[a], unames[b])
    return out


def aggregate_by_kernel(m: CounterMatrix) -> CounterMatrix:
    """One row per kernel name: the mean of its dispatches (NaNs ignored)."""
    if m.per == "kernel":
        return m
    names = sorted(set(m.row_labels))
    idx = {n: i for i, n in enumerate(names)}
    g = np.array([idx[n] for n in m.row_labels], dtype=np.int64)
    n, ncol = len(names), m.values.shape[1]
    valid = np.isfinite(m.values)
    total = np.zeros((n, ncol))
    cnt = np.zeros((n, ncol))
    np.add.at(total, g, np.where(valid, m.values, 0.0))
    np.add.at(cnt, g, valid.astype(np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        vals = np.where(cnt > 0, total / np.maximum(cnt, 1), np.nan)
    counts = np.bincount(g, minlength=n).astype(np.int64)
    first = np.full(n, -1, dtype=np.int64)
    first[g[::-1]] = m.kernel_rows[::-1]        # last write wins: the first dispatch
    return CounterMatrix(vals, list(m.columns), names, first, counts, "kernel",
                         np.full(n, -1, np.int64), np.full(n, -1, np.int64),
                         np.full(n, -1, np.int64))


def select_columns(m: CounterMatrix, pattern: str = "", drop_constant: bool = False,
                   instances: bool = True, limit: int | None = None) -> CounterMatrix:
    """Columns whose name matches ``pattern`` (regex, case-insensitive; invalid
    patterns match as plain text), optionally without constant or all-NaN columns,
    without per-instance counters, and at most ``limit`` of them (derived first)."""
    names = m.column_names()
    rx = compile_pattern(pattern)[0] if pattern else None     # the one name rule
    keep = []
    for i, n in enumerate(names):
        if rx is not None and not rx.search(n):
            continue
        if not instances and is_instance_counter(n):
            continue
        col = m.values[:, i]
        fin = col[np.isfinite(col)]
        if drop_constant and (len(fin) == 0 or fin.min() == fin.max()):
            continue
        keep.append(i)
    if limit is not None:
        keep = keep[:limit]
    return m.take_columns(keep)
