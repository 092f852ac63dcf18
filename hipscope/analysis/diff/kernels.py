"""Kernel matching: per normalised name, A's and B's count and time side by side."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .summary import TraceSummary


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
