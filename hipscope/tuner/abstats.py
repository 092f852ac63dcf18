"""Calibrated A/B verdicts for sweeps (numpy only, vectorised over simulated sweeps).

Why not one bootstrap interval per variant: with 5 runs a side, a bootstrap of
medians under-covers badly, and a sweep of k variants makes k such claims at once, so
identical programs were declared different (issue 12, section 3). Here:

* **Paired rounds.** A sweep runs every arm once per round (interleaved), so each
  round gives one log-time difference variant - baseline per arm; slow drift
  (clocks, heat, other jobs) hits both sides of a difference alike and cancels.
* **A robust test.** Yuen's trimmed-mean test (10 % trimmed mean of the log
  differences, winsorised variance, Student t with h - 1 degrees of freedom): slow
  outliers fall in the trimmed tails; under the null the differences of exchangeable
  arms are symmetric, which the t reference needs.
* **Holm across the sweep.** The comparisons of one sweep (every variant and the A/A
  control) form one family; Holm's step-down keeps the family-wise error at alpha.
  Each interval is at the Holm level its comparison was tested at, so it excludes 1
  exactly when the verdict is better/worse.
* **Planned looks.** Adaptive repeats: the sweep looks at ``Plan.looks()`` (rounds
  5, 9, 17, 31, 48 by default) and stops once every variant is decided or its
  interval is narrower than ``target_width``; each look spends alpha / looks (a union
  bound), so stopping early when decisive does not inflate the error.

Verdicts: ``better`` / ``worse`` (decided), ``no difference`` (not decided: the
interval, shown with it, bounds any difference; ``precise`` says whether it reached
the target width).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from .stats import ABJson, Summary


@dataclass(frozen=True)
class Plan:
    """How a sweep decides: error rate, rounds, warm-up, target interval width."""
    alpha: float = 0.05          # family-wise, over all comparisons and looks
    min_rounds: int = 5          # first look (rounds after the warm-up)
    max_rounds: int = 48         # run budget: last look
    warmup: int = 1              # rounds run first and discarded
    target_width: float = 0.10   # stop when hi/lo - 1 is below this
    trim: float = 0.1            # 0.2 was liberal at 5-10 rounds (benchmarks/ab_calibration.py)
    growth: float = 1.8

    def __post_init__(self) -> None:
        if not 2 <= self.min_rounds <= self.max_rounds:
            raise ValueError("a sweep needs 2 <= min_rounds <= max_rounds")
        if not 0 < self.alpha < 1 or self.warmup < 0:
            raise ValueError("alpha must lie in (0, 1) and warmup must be >= 0")

    def looks(self) -> list[int]:
        """Rounds (after the warm-up) at which the sweep judges: geometric."""
        out = [self.min_rounds]
        while out[-1] < self.max_rounds:
            out.append(min(self.max_rounds, max(out[-1] + 1, math.ceil(out[-1] * self.growth))))
        return out

    @property
    def look_alpha(self) -> float:
        return self.alpha / len(self.looks())


# ---------------------------------------------------------------- Student t
def t_abs_cdf(t, df: int) -> np.ndarray:
    """P(|T| <= t) for Student t with integer ``df`` (closed form, Abramowitz-Stegun 26.7.3/4)."""
    t = np.abs(np.asarray(t, dtype=np.float64))
    th = np.arctan(t / math.sqrt(df))
    s, c2 = np.sin(th), np.cos(th) ** 2
    if df % 2 == 0:
        term, acc = np.ones_like(t), np.ones_like(t)
        for k in range(1, df // 2):
            term = term * c2 * (2 * k - 1) / (2 * k)
            acc = acc + term
        return np.clip(s * acc, 0.0, 1.0)
    if df == 1:
        return 2 / math.pi * th
    term, acc = np.ones_like(t), np.ones_like(t)
    for k in range(1, (df - 1) // 2):
        term = term * c2 * (2 * k) / (2 * k + 1)
        acc = acc + term
    return np.clip(2 / math.pi * (th + s * np.sqrt(c2) * acc), 0.0, 1.0)


def t_crit(alpha, df: int) -> np.ndarray:
    """Two-sided critical value: P(|T| > x) = ``alpha`` (bisection in log space)."""
    a = np.asarray(alpha, dtype=np.float64)
    lo, hi = np.full(a.shape, -14.0), np.full(a.shape, 20.0)     # log(x)
    for _ in range(80):
        mid = (lo + hi) / 2
        tail = 1.0 - t_abs_cdf(np.exp(mid), df)
        lo, hi = np.where(tail > a, mid, lo), np.where(tail > a, hi, mid)
    return np.exp((lo + hi) / 2)


# ---------------------------------------------------------------- one look
def yuen(d: np.ndarray, trim: float = 0.1) -> tuple[np.ndarray, np.ndarray, int]:
    """Trimmed mean, its standard error and degrees of freedom over the last axis."""
    n = d.shape[-1]
    g = int(trim * n)
    h = n - 2 * g
    s = np.sort(d, axis=-1)
    est = s[..., g:n - g].mean(axis=-1)
    w = np.clip(s, s[..., g:g + 1], s[..., n - g - 1:n - g])
    se = np.sqrt((n - 1) * w.var(axis=-1, ddof=1) / (h * (h - 1)))
    return est, se, h - 1


def holm(p: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(rejected, level) over the last axis: Holm's step-down at family level ``alpha``;
    ``level`` is the per-comparison level each was (or would next be) tested at."""
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    thr = alpha / (m - np.arange(m))
    ok = np.cumprod(np.take_along_axis(p, order, -1) <= thr, axis=-1).astype(bool)
    rej = np.zeros_like(ok)
    np.put_along_axis(rej, order, ok, -1)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(m), order.shape), -1)
    first_open = thr[np.minimum(ok.sum(axis=-1), m - 1)][..., None]
    return rej, np.where(rej, thr[rank], first_open)


def judge(logs: np.ndarray, alpha: float, trim: float = 0.1) -> dict[str, np.ndarray]:
    """One look at ``logs`` (..., rounds, arms; arm 0 the baseline): per comparison
    (arm 1.. vs 0) the log-ratio estimate, its Holm-level interval, p and rejection."""
    d = np.moveaxis(logs[..., 1:] - logs[..., :1], -1, -2)        # (..., m, n)
    est, se, df = yuen(d, trim)
    with np.errstate(divide="ignore", invalid="ignore"):
        tstat = np.where(se > 0, np.abs(est) / np.where(se > 0, se, 1), np.inf)
    p = np.where(se > 0, 1.0 - t_abs_cdf(tstat, df), np.where(est == 0, 1.0, 0.0))
    rej, level = holm(p, alpha)
    half = t_crit(level, df) * se
    return {"est": est, "lo": est - half, "hi": est + half, "p": p, "rejected": rej,
            "level": level}


# ---------------------------------------------------------------- sequential
@dataclass
class Track:
    """State of sequential sweeps (one row per sweep, one column per comparison)."""
    est: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    level: np.ndarray
    decided: np.ndarray
    active: np.ndarray                  # per sweep: still running
    rounds: np.ndarray                  # per sweep: rounds used (after warm-up)
    looks: np.ndarray                   # per sweep: looks taken

    @classmethod
    def new(cls, sweeps: int, m: int) -> Track:
        z = np.zeros((sweeps, m))
        return cls(z.copy(), z.copy(), z.copy(), z.copy(), np.zeros((sweeps, m), bool),
                   np.ones(sweeps, bool), np.zeros(sweeps, int), np.zeros(sweeps, int))


def look(track: Track, logs: np.ndarray, plan: Plan, holds: np.ndarray | None = None,
         final: bool = False) -> None:
    """Judge the active sweeps on ``logs`` (sweeps, rounds, arms) and stop those whose
    comparisons in ``holds`` (default: all) are all decided or narrower than the target;
    ``final`` stops every sweep. Decisions are sticky (a later look cannot undo one)."""
    a = track.active
    j = judge(logs[a], plan.look_alpha, plan.trim)
    fresh = j["rejected"] & ~track.decided[a]
    keep = track.decided[a]
    for k in ("est", "lo", "hi", "level"):
        cur = getattr(track, k)
        cur[a] = np.where(keep, cur[a], j[k])
    track.decided[a] = keep | fresh
    track.rounds[a] = logs.shape[1]
    track.looks[a] += 1
    narrow = (track.hi[a] - track.lo[a]) <= math.log1p(plan.target_width)
    settled = track.decided[a] | narrow
    if holds is not None:
        settled = settled | ~holds
    idx = np.flatnonzero(a)
    track.active[idx[settled.all(axis=1) | final]] = False


def verdicts(track: Track, plan: Plan, lower_is_better: bool = True) -> np.ndarray:
    """better / worse / no difference per sweep and comparison."""
    faster = track.est < 0
    good = faster if lower_is_better else ~faster
    return np.where(track.decided, np.where(good, "better", "worse"), "no difference")


def simulate(times: np.ndarray, plan: Plan, holds: np.ndarray | None = None) -> Track:
    """Run the plan over simulated sweeps ``times`` (sweeps, warmup + max_rounds, arms)
    as :func:`hipscope.tuner.sweep.run_sweep` does, all sweeps at once."""
    logs = np.log(times[:, plan.warmup:, :])
    track = Track.new(times.shape[0], times.shape[2] - 1)
    looks = plan.looks()
    for n in looks:
        if not track.active.any():
            break
        look(track, logs[:, :n], plan, holds, final=n == looks[-1])
    return track


# ---------------------------------------------------------------- results
@dataclass(frozen=True)
class PairedResult(ABJson):
    """One comparison of a sweep: variant / baseline over paired rounds."""
    baseline: Summary
    variant: Summary
    ratio: float                 # exp(trimmed mean of log differences)
    ci_low: float
    ci_high: float
    confidence: float            # 1 - the Holm level the interval was taken at
    rounds: int
    lower_is_better: bool
    verdict: str                 # better | worse | no difference
    precise: bool                # the interval reached the target width
    source: str = "process"      # program (HIPSCOPE_RESULT) | process (wall time)
    method: str = "Yuen trimmed paired t, Holm, planned looks"


def paired_results(track: Track, plan: Plan, arms: list[list[float]], source: str,
                   lower_is_better: bool = True) -> list[PairedResult]:
    """The comparisons of one sweep (row 0 of ``track``); ``arms`` its kept times."""
    v = verdicts(track, plan, lower_is_better)[0]
    out = []
    for k in range(track.est.shape[1]):
        lo, hi = math.exp(track.lo[0, k]), math.exp(track.hi[0, k])
        out.append(PairedResult(Summary.of(arms[0]), Summary.of(arms[k + 1]),
                                math.exp(track.est[0, k]), lo, hi,
                                1.0 - float(track.level[0, k]), int(track.rounds[0]),
                                lower_is_better, str(v[k]),
                                hi / lo - 1 <= plan.target_width, source))
    return out


@dataclass(frozen=True)
class Drift:
    """Slow change of all arms across the rounds (the paired tests cancel it)."""
    change: float                # last third vs first third of the rounds: 0.08 = 8 % slower
    rho: float                   # Spearman correlation of round and time
    detected: bool
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def drift(arms: list[list[float]], threshold: float = 0.03) -> Drift:
    """Drift of kept rounds: each arm normalised by its median (log), averaged per round;
    detected when it changes by ``threshold`` or more and Spearman's test says so (1 %)."""
    x = np.log(np.asarray(arms, dtype=np.float64))               # (arms, rounds)
    r = (x - np.median(x, axis=1, keepdims=True)).mean(axis=0)
    n = len(r)
    if n < 6:
        return Drift(0.0, 0.0, False)
    third = max(2, n // 3)
    change = math.expm1(float(np.median(r[-third:]) - np.median(r[:third])))
    ranks = np.argsort(np.argsort(r, kind="stable"), kind="stable")
    rho = float(np.corrcoef(np.arange(n), ranks)[0, 1]) if np.ptp(ranks) else 0.0
    detected = abs(change) >= threshold and abs(rho) * math.sqrt(n - 1) > 2.576
    note = (f"the runs drifted {abs(change):.0%} {'slower' if change > 0 else 'faster'} "
            f"from the first to the last rounds (Spearman rho {rho:.2f}); the paired "
            "rounds cancel it, but the absolute medians move with it") if detected else None
    return Drift(change, rho, detected, [note] if note else [])
