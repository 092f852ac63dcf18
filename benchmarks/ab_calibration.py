"""Calibration of the sweep statistics: `python -m benchmarks.ab_calibration [--json]`.

Simulates whole sweeps with realistic run-time noise (:func:`noisy_sweeps`) and runs
the default :class:`hipscope.tuner.abstats.Plan` over them exactly as ``run_sweep``
does (warm-up discarded, interleaved rounds, planned looks, Holm, A/A control):

* ``aa_family_wise_rate``: share of A/A sweeps (every arm the same program) in which any
  comparison, the control included, was called better or worse (must be <= 0.05);
* ``power_10pct``: share of sweeps in which a variant truly 10 % faster was called
  better (must be >= 0.80), ``false_in_power_sweeps`` the share in which one of the
  identical arms was called different there;
* ``mean_rounds_*``: rounds used (after the warm-up), of a budget of ``max_rounds``.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from hipscope.tuner.abstats import Plan, simulate, verdicts

#: the noise of a launch-bound GPU loop on a shared machine
SIGMA = 0.10           # log-normal spread of one run (about 10 %)
OUTLIER_P = 0.03       # share of runs hit by something slow (page faults, another job)
OUTLIER_X = (1.3, 2.5)  # how much slower those are
DRIFT = 0.15           # slow drift across a sweep: up to +-15 %, linear plus a slow wave
WARMUP_X = 1.5         # the first round is this much slower (caches, JIT, clocks)


def noisy_sweeps(rng: np.random.Generator, sweeps: int, arms: int, rounds: int,
                 effects=None, sigma: float = SIGMA) -> np.ndarray:
    """Run times (sweeps, rounds, arms) of interleaved sweeps: arm a's true time is
    ``effects[a]`` (default 1.0 for every arm); runs in round order, arm order
    within a round, drift over the whole sweep's run index."""
    eff = np.ones(arms) if effects is None else np.asarray(effects, dtype=np.float64)
    t = (np.arange(rounds)[:, None] * arms + np.arange(arms)[None, :]) / (rounds * arms)
    slope = rng.uniform(-DRIFT, DRIFT, (sweeps, 1, 1))
    wave = rng.uniform(0, 0.5 * DRIFT, (sweeps, 1, 1)) * np.sin(
        2 * np.pi * (t[None] + rng.uniform(0, 1, (sweeps, 1, 1))))
    noise = rng.normal(0.0, sigma, (sweeps, rounds, arms))
    slow = np.where(rng.random((sweeps, rounds, arms)) < OUTLIER_P,
                    rng.uniform(*OUTLIER_X, (sweeps, rounds, arms)), 1.0)
    x = eff * np.exp(slope * t[None] + wave + noise) * slow
    x[:, 0, :] *= WARMUP_X
    return x


def rates(sweeps: int = 2000, seed: int = 12, plan: Plan | None = None) -> dict:
    """The A/A family-wise rate and the power for a 10 % effect (see the docstring).
    Arms: baseline, two variants, the A/A control (a sweep of one knob of two values)."""
    plan = plan or Plan()
    rng = np.random.default_rng(seed)
    rounds = plan.warmup + plan.max_rounds
    holds = np.array([True, True, False])          # the control does not hold the sweep
    aa = simulate(noisy_sweeps(rng, sweeps, 4, rounds), plan, holds)
    v_aa = verdicts(aa, plan)
    pw = simulate(noisy_sweeps(rng, sweeps, 4, rounds, [1.0, 0.9, 1.0, 1.0]), plan, holds)
    v_pw = verdicts(pw, plan)
    return {"sweeps": sweeps, "seed": seed, "max_rounds": plan.max_rounds,
            "looks": plan.looks(), "alpha": plan.alpha,
            "aa_family_wise_rate": float((v_aa != "no difference").any(axis=1).mean()),
            "aa_control_rate": float((v_aa[:, 2] != "no difference").mean()),
            "power_10pct": float((v_pw[:, 0] == "better").mean()),
            "false_in_power_sweeps": float((v_pw[:, 1:] != "no difference").any(axis=1).mean()),
            "mean_rounds_aa": float(aa.rounds.mean()), "mean_rounds_power": float(pw.rounds.mean())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--sweeps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=12)
    a = ap.parse_args(argv)
    r = rates(a.sweeps, a.seed)
    if a.json:
        json.dump(r, sys.stdout)
        sys.stdout.write("\n")
    else:
        for k, v in r.items():
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
