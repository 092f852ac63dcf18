"""Per-column normalisation and row order (by one column, or similar rows together)."""

from __future__ import annotations

import warnings

import numpy as np

from ...model.progress import CancelledFn, check_cancel
from .columns import CounterMatrix

NORMALISATIONS = ("minmax", "zscore", "peak", "none")


def normalise(m: CounterMatrix, method: str = "minmax") -> np.ndarray:
    """Per-column scaling of ``m.values``: ``minmax`` to [0, 1]; ``zscore`` (mean 0,
    sd 1; constant columns 0); ``peak``: value / known peak (1.0 = 100 %; NaN where
    the column has no known peak); ``none``: raw values. NaN stays NaN."""
    v = m.values.astype(np.float64, copy=True)
    if method == "none":
        return v
    with np.errstate(invalid="ignore", divide="ignore"), _Quiet():
        if method == "minmax":
            lo, hi = np.nanmin(v, axis=0), np.nanmax(v, axis=0)
            span = hi - lo
            out = (v - lo) / np.where(span > 0, span, 1.0)
            return np.where(np.isfinite(v), np.where(span > 0, out, 0.5), np.nan)
        if method == "zscore":
            mu, sd = np.nanmean(v, axis=0), np.nanstd(v, axis=0)
            out = (v - mu) / np.where(sd > 0, sd, 1.0)
            return np.where(np.isfinite(v), np.where(sd > 0, out, 0.0), np.nan)
        if method == "peak":
            peaks = np.array([c.peak if c.peak else np.nan for c in m.columns], dtype=np.float64)
            return v / peaks
    raise ValueError(f"normalisation {method!r} not in {NORMALISATIONS}")


class _Quiet:
    """Silence numpy's 'All-NaN slice' RuntimeWarnings (pytest runs with -W error)."""

    def __enter__(self):
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


def order_by_column(m: CounterMatrix, col: int, descending: bool = True) -> np.ndarray:
    """Row order by one column (stable; NaN last either way)."""
    v = m.values[:, col]
    key = np.where(np.isfinite(v), -v if descending else v, np.inf)
    return np.argsort(key, kind="stable")


MAX_LINKAGE_ROWS = 600


def cluster_order(values: np.ndarray, max_rows: int = MAX_LINKAGE_ROWS,
                  cancelled: CancelledFn | None = None) -> np.ndarray:
    """A row order that puts similar rows together.

    Rows are z-scored per column (NaN -> 0). Up to ``max_rows`` rows: average-linkage
    (UPGMA) agglomerative clustering on Euclidean distances, leaves in tree order;
    above that (O(n^2) memory, O(n^2) numpy work per merge) the order of the rows'
    projection on the first principal component. ``cancelled`` is checked once per
    merge (raises :class:`~hipscope.model.progress.Cancelled`)."""
    check_cancel(cancelled)
    n = len(values)
    if n <= 2:
        return np.arange(n)
    with np.errstate(invalid="ignore", divide="ignore"), _Quiet():
        mu, sd = np.nanmean(values, axis=0), np.nanstd(values, axis=0)
        z = (values - mu) / np.where(sd > 0, sd, 1.0)
    z = np.nan_to_num(z, nan=0.0, posinf=0.0, neginf=0.0)
    if n > max_rows:
        z = z - z.mean(axis=0)
        _, _, vt = np.linalg.svd(z, full_matrices=False)
        return np.argsort(z @ vt[0], kind="stable")
    return _upgma_leaves(z, cancelled)


def _upgma_leaves(z: np.ndarray, cancelled: CancelledFn | None = None) -> np.ndarray:
    n = len(z)
    sq = (z * z).sum(axis=1)
    d = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * z @ z.T, 0.0))
    np.fill_diagonal(d, np.inf)
    size = np.ones(n)
    members: list[list[int]] = [[i] for i in range(n)]   # leaf order of each cluster
    alive = np.ones(n, dtype=bool)
    for _ in range(n - 1):
        check_cancel(cancelled)
        flat = int(np.argmin(d))
        a, b = divmod(flat, n)
        if a > b:
            a, b = b, a
        # average linkage: distance of the merged cluster is the size-weighted mean
        new = (d[a] * size[a] + d[b] * size[b]) / (size[a] + size[b])
        d[a, :] = new
        d[:, a] = new
        d[a, a] = np.inf
        d[b, :] = np.inf
        d[:, b] = np.inf
        size[a] += size[b]
        members[a] = members[a] + members[b]
        members[b] = []
        alive[b] = False
    root = int(np.flatnonzero(alive)[0])
    return np.array(members[root], dtype=np.int64)
