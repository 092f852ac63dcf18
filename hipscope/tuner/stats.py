"""A/B statistics for experiments: medians, IQR and a bootstrap confidence interval
of the ratio of medians (variant / baseline).

Why medians and a bootstrap: run times are skewed (a slow outlier from a page fault,
a clock ramp, another job) and few (5 repeats by default); the median resists
outliers, and the bootstrap needs no normality. The two groups are resampled
independently (they are separate runs), with a seeded generator so a result can be
reproduced. The interval is BCa (bias-corrected and accelerated, Efron 1987) by
default, percentile on request; BCa corrects the skew of a ratio's sampling
distribution, which the plain percentile interval ignores.

Decision: for a lower-is-better metric (wall time) the variant is *better* only when
the whole interval lies below 1, *worse* only when it lies above 1; otherwise
*inconclusive*. Mirrored for higher-is-better metrics (throughput).

Sweeps do not use :func:`compare` (one interval per variant, no correction across a
sweep, no control): their verdicts come from :mod:`hipscope.tuner.abstats`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np

DEFAULT_RESAMPLES = 10_000
_N = NormalDist()


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    q1: float
    q3: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @classmethod
    def of(cls, values) -> Summary:
        v = np.asarray(values, dtype=np.float64)
        if len(v) == 0:
            raise ValueError("no measurements")
        q1, med, q3 = np.quantile(v, (0.25, 0.5, 0.75))
        return cls(len(v), float(med), float(q1), float(q3))


class ABJson:
    """What the A/B result types share: ``change`` and ``to_json`` (the fields, each
    arm's Summary with its IQR). Mixed into frozen dataclasses that have ``ratio``,
    ``baseline`` and ``variant``."""

    ratio: float
    baseline: Summary
    variant: Summary

    @property
    def change(self) -> float:
        """Relative change of the ratio: -0.2 = 20 % lower."""
        return self.ratio - 1.0

    def to_json(self) -> dict:
        d = asdict(self)  # type: ignore[call-overload]  # always a dataclass instance
        for arm in ("baseline", "variant"):
            d[arm]["iqr"] = getattr(self, arm).iqr
        return d


@dataclass(frozen=True)
class ABResult(ABJson):
    baseline: Summary
    variant: Summary
    ratio: float                 # median(variant) / median(baseline)
    ci_low: float
    ci_high: float
    confidence: float
    method: str                  # "bca" | "percentile"
    resamples: int
    seed: int
    lower_is_better: bool
    verdict: str                 # "better" | "worse" | "inconclusive"


def _medians(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return np.median(x[idx], axis=1)


def bootstrap_ratio(baseline, variant, resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                    confidence: float = 0.95, method: str = "bca"
                    ) -> tuple[float, float, float]:
    """(ratio of medians, low, high) with a bootstrap ``confidence`` interval."""
    b = np.asarray(baseline, dtype=np.float64)
    v = np.asarray(variant, dtype=np.float64)
    if len(b) < 2 or len(v) < 2:
        raise ValueError("the bootstrap needs at least 2 measurements per side")
    if np.median(b) <= 0:
        raise ValueError("the baseline median must be positive for a ratio")
    if method not in ("bca", "percentile"):
        raise ValueError(f"unknown interval method {method!r}")
    rng = np.random.default_rng(seed)
    mb = _medians(b, rng.integers(0, len(b), size=(resamples, len(b))))
    mv = _medians(v, rng.integers(0, len(v), size=(resamples, len(v))))
    ok = mb > 0
    boot = np.sort(mv[ok] / mb[ok])
    theta = float(np.median(v) / np.median(b))
    alpha = (1 - confidence) / 2
    if method == "percentile":
        lo, hi = np.quantile(boot, (alpha, 1 - alpha))
        return theta, float(lo), float(hi)
    # BCa: bias correction z0 from the share of resamples below the estimate,
    # acceleration a from the jackknife (leave one measurement out, either side).
    below = np.count_nonzero(boot < theta) + 0.5 * np.count_nonzero(boot == theta)
    share = float(below) / len(boot)
    share = min(max(share, 1 / (len(boot) + 1)), len(boot) / (len(boot) + 1))
    z0 = _N.inv_cdf(share)
    jack = np.array([np.median(v) / np.median(np.delete(b, i)) for i in range(len(b))]
                    + [np.median(np.delete(v, i)) / np.median(b) for i in range(len(v))])
    d = jack.mean() - jack
    den = 6.0 * (np.sum(d ** 2) ** 1.5)
    a = float(np.sum(d ** 3) / den) if den > 0 else 0.0
    qs = []
    for z in (_N.inv_cdf(alpha), _N.inv_cdf(1 - alpha)):
        adj = z0 + (z0 + z) / (1 - a * (z0 + z))
        qs.append(_N.cdf(adj) if math.isfinite(adj) else (0.0 if adj < 0 else 1.0))
    lo, hi = np.quantile(boot, qs)
    return theta, float(lo), float(hi)


def compare(baseline, variant, lower_is_better: bool = True, confidence: float = 0.95,
            resamples: int = DEFAULT_RESAMPLES, seed: int = 0, method: str = "bca"
            ) -> ABResult:
    """Compare two sets of measurements of one metric (see the module docstring)."""
    ratio, lo, hi = bootstrap_ratio(baseline, variant, resamples, seed, confidence, method)
    if lower_is_better:
        verdict = "better" if hi < 1 else ("worse" if lo > 1 else "inconclusive")
    else:
        verdict = "better" if lo > 1 else ("worse" if hi < 1 else "inconclusive")
    return ABResult(Summary.of(baseline), Summary.of(variant), ratio, lo, hi, confidence,
                    method, resamples, seed, lower_is_better, verdict)


def interleaved_order(n_variants: int, repeats: int, scheme: str = "abab",
                      seed: int = 0) -> list[tuple[int, int]]:
    """The run order of a sweep: (variant index, repeat index) pairs.

    Every round runs each variant once, so slow drift (thermal, clocks, other jobs)
    hits all variants alike instead of biasing whichever ran last:

    * ``abab``: the same order every round (A B C A B C ...);
    * ``rotate``: round r starts at variant r mod n (A B C, B C A, C A B ...), so no
      variant always runs first after a pause;
    * ``shuffle``: a seeded random order per round.
    """
    if n_variants < 1 or repeats < 1:
        raise ValueError("a sweep needs at least one variant and one repeat")
    rng = np.random.default_rng(seed)
    out: list[tuple[int, int]] = []
    for r in range(repeats):
        if scheme == "abab":
            order = list(range(n_variants))
        elif scheme == "rotate":
            order = [(r + i) % n_variants for i in range(n_variants)]
        elif scheme == "shuffle":
            order = [int(i) for i in rng.permutation(n_variants)]
        else:
            raise ValueError(f"unknown interleaving scheme {scheme!r}")
        out.extend((v, r) for v in order)
    return out
