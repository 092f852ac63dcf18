"""Calibrated A/B statistics of sweeps (hipscope.tuner.abstats; issue 12 section 3).

The calibration tests simulate whole sweeps with realistic noise (log-normal spread,
slow outliers, slow drift, a slow first round) and run the default plan over them;
the replay test drives the real ``run_sweep`` with simulated measurements of the
recorded ``--cuda-graph off|on`` sweep.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.ab_calibration import noisy_sweeps, rates
from hipscope.tuner.abstats import Plan, drift, holm, judge, simulate, t_abs_cdf, t_crit
from hipscope.tuner.stats import compare
from hipscope.tuner.sweep import Knob, Measurement, SweepSpec, run_sweep


def test_student_t_matches_the_printed_tables():
    # two-sided 5 % and 1 % critical values (any statistics table)
    table = {1: (12.706, 63.657), 2: (4.303, 9.925), 5: (2.571, 4.032), 10: (2.228, 3.169),
             29: (2.045, 2.756)}
    for df, (c05, c01) in table.items():
        assert t_crit(np.array([0.05, 0.01]), df) == pytest.approx([c05, c01], abs=2e-3)
        assert 1 - t_abs_cdf(c05, df) == pytest.approx(0.05, abs=1e-4)


def test_holm_steps_down_and_gives_each_comparison_its_level():
    rej, level = holm(np.array([0.01, 0.04, 0.03]), 0.05)
    # sorted 0.01 <= 0.05/3 rejects; 0.03 > 0.05/2 stops the step-down
    assert rej.tolist() == [True, False, False]
    assert level == pytest.approx([0.05 / 3, 0.025, 0.025])
    rej, _ = holm(np.array([0.001, 0.02, 0.04]), 0.05)
    assert rej.tolist() == [True, True, True]          # 0.02 <= 0.025, 0.04 <= 0.05


def test_interval_excludes_one_exactly_when_the_comparison_is_decided():
    rng = np.random.default_rng(5)
    logs = np.log(noisy_sweeps(rng, 400, 3, 12, [1.0, 0.93, 1.0]))[:, 1:]
    j = judge(logs, 0.01)
    excludes = (j["hi"] < 0) | (j["lo"] > 0)
    assert j["rejected"].any() and not j["rejected"].all()
    assert (excludes == j["rejected"]).all()


def test_aa_sweeps_claim_a_difference_at_most_5_percent_of_the_time():
    """1,000 simulated A/A sweeps (baseline, two identical variants, the A/A control),
    default plan: the share with any better/worse claim is the family-wise error."""
    r = rates(sweeps=1000, seed=2026)
    assert r["sweeps"] == 1000
    assert r["aa_family_wise_rate"] <= 0.05
    assert r["aa_control_rate"] <= 0.05
    assert r["false_in_power_sweeps"] <= 0.05


def test_a_true_10_percent_effect_is_found_in_80_percent_of_sweeps():
    r = rates(sweeps=1000, seed=2026)
    assert r["power_10pct"] >= 0.80
    assert r["mean_rounds_power"] <= Plan().max_rounds


def test_a_decisive_effect_stops_at_the_first_look():
    plan = Plan()
    x = noisy_sweeps(np.random.default_rng(1), 200, 3, plan.warmup + plan.max_rounds,
                     [1.0, 0.5, 1.5])
    track = simulate(x, plan)
    assert track.decided.all()                        # 2x and 0.67x effects: all found
    assert (track.rounds == plan.min_rounds).mean() >= 0.5
    assert (track.rounds <= plan.looks()[1]).mean() >= 0.9
    assert track.rounds.mean() < plan.max_rounds / 4


def test_drift_is_detected_and_reported():
    n = 30
    steady = [np.full(n, 1.0), np.full(n, 1.1)]
    assert not drift(steady).detected
    rising = np.linspace(1.0, 1.2, n)
    d = drift([rising, rising * 0.9, rising])
    assert d.detected and 0.1 < d.change < 0.25
    assert "slower" in d.notes[0]


# ------------------------------------------------------------------ the recorded bug
class GraphLoop:
    """Simulated timings of the recorded decode loop: ``--cuda-graph=off`` is the
    baseline's program (no flag = off); ``--cuda-graph=on`` is 0.26x the time. A noisy
    launch-bound loop: 20 % log-normal spread, 5 % slow outliers, a slow first run."""

    def __init__(self, seed: int):
        rng = np.random.default_rng(seed)
        self.seq = {}
        for key, true in (("base", 1.0), ("off", 1.0), ("on", 0.26)):
            x = true * np.exp(rng.normal(0, 0.2, 300)) * np.where(
                rng.random(300) < 0.05, rng.uniform(1.3, 2.5, 300), 1.0)
            x[0] *= 1.5
            self.seq[key] = list(x)

    def __call__(self, env, args) -> Measurement:
        key = args[0].split("=")[1] if args else "base"
        return Measurement(float(self.seq[key].pop(0)), wall_from="program")


def test_identical_cuda_graph_off_arm_is_no_difference_where_the_old_said_better():
    seed = 272
    old = GraphLoop(seed).seq
    # the old statistics: 5 runs a side, one bootstrap interval per variant
    was = compare(old["base"][:5], old["off"][:5])
    assert was.verdict == "better" and was.ratio < 0.8           # the recorded false claim
    spec = SweepSpec(command=["decode.py"], knobs=[Knob("cuda-graph", ["off", "on"], "arg")])
    res = run_sweep(spec, GraphLoop(seed))
    off, on = res.comparisons["cuda-graph=off"], res.comparisons["cuda-graph=on"]
    assert off.verdict == "no difference" and off.ci_low < 1 < off.ci_high
    assert on.verdict == "better" and on.ratio < 0.4 and on.ci_high < 1
    assert res.control.verdict == "no difference"
    assert off.source == "program" and res.best() == "cuda-graph=on"
    assert res.runs[0].warmup and not any(r.warmup for r in res.runs[4:])


def test_time_budget_judges_and_stops_after_the_round_that_passes_it():
    spec = SweepSpec(command=["decode.py"], knobs=[Knob("cuda-graph", ["off", "on"], "arg")],
                     max_seconds=0)
    seen = []
    res = run_sweep(spec, GraphLoop(3), on_run=seen.append)
    assert res.stopped == "time" and res.rounds == 2 and len(res.runs) == 4 * 3
    assert seen == res.runs and [r.warmup for r in seen].count(True) == 4
    assert set(res.comparisons) == {"cuda-graph=off", "cuda-graph=on"}


def test_a_sweep_refuses_to_compare_program_times_with_process_times():
    from hipscope.tuner.sweep import SweepError

    def runner(env, args):
        return Measurement(1.0, wall_from="process" if args else "program")

    spec = SweepSpec(command=["x"], knobs=[Knob("flag", ["1"], "arg")])
    with pytest.raises(SweepError, match="HIPSCOPE_RESULT"):
        run_sweep(spec, runner)


def test_both_ab_result_types_write_each_arms_iqr_and_change_to_json():
    import json
    import statistics

    from hipscope.tuner.abstats import PairedResult
    from hipscope.tuner.stats import Summary

    base, var = [1.00, 1.04, 0.97, 1.02, 0.99, 1.10], [0.70, 0.73, 0.69, 0.71, 0.72, 0.80]
    paired = PairedResult(Summary.of(base), Summary.of(var), 0.71, 0.69, 0.73, 0.95,
                          6, True, "better", True)
    for r in (compare(base, var, resamples=500), paired):
        d = json.loads(json.dumps(r.to_json()))
        for arm, values in (("baseline", base), ("variant", var)):
            q1, med, q3 = statistics.quantiles(values, n=4, method="inclusive")
            assert d[arm]["iqr"] == pytest.approx(q3 - q1)
            assert (d[arm]["n"], d[arm]["median"]) == (len(values), pytest.approx(med))
        assert d["ratio"] == r.ratio and r.change == pytest.approx(d["ratio"] - 1)
        assert d["verdict"] == "better"
