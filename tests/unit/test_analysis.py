"""Idle breakdown, concurrency and launch statistics on real H200 traces.

The traces in tests/data/gpu were recorded for this purpose (README there). The
expected figures are recomputed here from the raw JSON with plain Python.
"""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from hipscope.analysis.concurrency import concurrency, launch_stats, time_at_least
from hipscope.analysis.idle import CATEGORIES, idle_breakdown, is_sync_call
from hipscope.analysis.report import build_report
from hipscope.parsers import open_trace
from tests.conftest import DATA

GPU = DATA / "gpu"


def raw(name):
    return json.load(gzip.open(GPU / f"{name}.json.gz"))["traceEvents"]


def ns(x):
    return int(round(float(x) * 1000))


def dominant(bd):
    tot = bd.total()
    return max(tot, key=tot.get)


@pytest.mark.parametrize("name,cause", [("launch_bound", "host_wait"),
                                        ("sync_bound", "sync"),
                                        ("graph", "launch_overhead")])
def test_dominant_cause(name, cause):
    bd = idle_breakdown(open_trace(GPU / f"{name}.json.gz"))
    assert dominant(bd) == cause
    tot = bd.total()
    assert tot[cause] > 0.6 * sum(tot.values())


def test_launch_bound_breakdown_by_hand():
    ev = raw("launch_bound")
    kernels = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["args"]["correlation"])
                     for e in ev if e.get("cat") == "kernel")
    launch_end = {e["args"]["correlation"]: ns(e["ts"]) + ns(e["dur"])
                  for e in ev if e.get("cat") == "cuda_runtime"}
    host = launch = other = 0
    run_end = kernels[0][1]
    for s, e, corr in kernels[1:]:
        if s > run_end:                              # a gap [run_end, s)
            sub = min(max(launch_end[corr], run_end), s)
            host += sub - run_end
            if s - sub <= 30_000:
                launch += s - sub
            else:
                other += s - sub
        run_end = max(run_end, e)
    bd = idle_breakdown(open_trace(GPU / "launch_bound.json.gz")).total()
    # the only sync calls in this program are outside the kernel window
    assert bd["sync"] == 0
    assert bd["host_wait"] == pytest.approx(host, abs=2000)
    assert bd["launch_overhead"] == pytest.approx(launch, abs=2000)
    assert bd["other"] == pytest.approx(other, abs=2000)


def test_breakdown_sums_to_idle_time():
    tr = open_trace(GPU / "eager.json.gz")
    bd = idle_breakdown(tr)
    d = bd.devices[0]
    assert sum(d.breakdown.values()) == d.window_ns - d.busy_ns
    assert all(v >= 0 for v in d.breakdown.values())
    assert set(d.breakdown) == set(CATEGORIES)


def test_sync_bound_blocking_copy_counts_as_sync():
    ev = raw("sync_bound")
    htod = [ns(e["dur"]) for e in ev if e.get("cat") == "gpu_memcpy" and "HtoD" in e["name"]]
    bd = idle_breakdown(open_trace(GPU / "sync_bound.json.gz")).total()
    # four of the five 11-ms pageable copies fall between kernels (the first precedes them)
    assert bd["sync"] >= 0.9 * sum(sorted(htod)[:4])


def test_multi_stream_overlap_matches_raw_sweep():
    ev = raw("multi_stream")
    iv = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in ev if e.get("cat") == "kernel"]
    points = sorted([(s, 1) for s, _ in iv] + [(e, -1) for _, e in iv],
                    key=lambda p: (p[0], p[1]))
    level, last, both = 0, None, 0
    for t, d in points:
        if last is not None and level >= 2:
            both += t - last
        level += d
        last = t
    c = concurrency(open_trace(GPU / "multi_stream.json.gz"))
    dev = c["per_device"]["0"]
    assert dev["concurrent_ns"] == both and both > 0
    assert dev["streams"] == 4


def test_time_at_least_simple():
    s, e = np.array([0, 5, 20]), np.array([10, 15, 30])
    assert time_at_least(s, e, 2) == 5
    assert time_at_least(s, e, 3) == 0


@pytest.mark.parametrize("offset", [0, -(10**6), 2**61 + 5])   # the last: lexsort path
def test_time_at_least_equals_a_brute_force_count(offset):
    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(1, 12))
        s = rng.integers(0, 40, n)
        e = s + rng.integers(0, 15, n)          # zero-length and touching intervals too
        for k in (1, 2, 3):
            # unit steps [t, t+1): how many intervals cover each
            cover = np.array([int(((s <= t) & (t < e)).sum()) for t in range(60)])
            expect = int((cover >= k).sum())
            assert time_at_least(s + offset, e + offset, k) == expect, (s, e, k)


def test_launch_stats_launch_bound():
    ls = launch_stats(open_trace(GPU / "launch_bound.json.gz"))
    ev = raw("launch_bound")
    durs = [ns(e["dur"]) for e in ev if e.get("name") == "cudaLaunchKernel"]
    assert ls["launch_overhead_ns"] == pytest.approx(np.median(durs), abs=1)
    # sub-microsecond kernels are all shorter than a ~5 us launch
    assert ls["kernels_shorter_than_launch_fraction"] > 0.99
    assert ls["kernels_per_second"] > 10_000
    assert len(ls["longest_launch_gaps"]) > 0


def test_report_json_has_analysis_keys():
    rep = build_report(open_trace(GPU / "graph.json.gz"))
    assert set(rep["idle_breakdown_ns"]["total"]) == set(CATEGORIES)
    assert rep["queue_delay_ns"]["graph_launch_kernels"] == 4800
    assert "concurrency" in rep and "launch_stats" in rep
    json.dumps(rep, allow_nan=False)


@pytest.mark.parametrize("name,expected", [
    ("cudaDeviceSynchronize", True), ("hipStreamSynchronize", True),
    ("cudaEventSynchronize", True), ("cudaMemcpy", True), ("hipMemcpy", True),
    ("cuMemcpyDtoH_v2", True), ("cudaMemcpyAsync", False), ("hipLaunchKernel", False),
    ("cudaStreamWaitEvent", False)])
def test_sync_call_names(name, expected):
    assert is_sync_call(name) is expected
