"""Step detection (analysis.steps) on real Kineto traces; expected steps come from
the raw JSON with plain json/gzip code."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

from hipscope.analysis.steps import find_steps, steady_mask
from hipscope.model import Trace
from hipscope.model.table import build_table
from hipscope.parsers import open_trace
from tests.conftest import DATA, SAMPLES

GPU = DATA / "gpu"


def raw_ranges(path: Path, match) -> list[tuple[str, int]]:
    """(name, duration ns) of the host user annotations whose name ``match``es, by ts."""
    ev = json.load(gzip.open(path))["traceEvents"]
    hits = sorted((e for e in ev if e.get("cat") == "user_annotation" and e.get("ph") == "X"
                   and match(str(e.get("name", "")))), key=lambda e: float(e["ts"]))
    return [(e["name"], int(round(float(e["dur"]) * 1000))) for e in hits]


def profiler_step_files() -> list[Path]:
    """Every real Kineto trace with ProfilerStep# ranges (samples and tests/data)."""
    files = sorted(SAMPLES.glob("kineto/*/*.json.gz")) + sorted(GPU.glob("proof/*.json.gz"))
    out = [f for f in files if raw_ranges(f, lambda n: n.startswith("ProfilerStep#"))]
    assert len(out) >= 5, out
    return out


@pytest.mark.parametrize("path", profiler_step_files(), ids=lambda p: p.parent.name)
def test_profiler_steps_of_real_kineto_traces(path):
    want = raw_ranges(path, lambda n: re.fullmatch(r"ProfilerStep#\d+", n) is not None)
    st = find_steps(open_trace([path], use_cache=False))
    assert st is not None and st.name == "ProfilerStep#N"
    assert st.source == "ProfilerStep markers"
    assert len(st) == len(want)
    assert np.all(np.abs((st.end - st.start) - [d for _, d in want]) <= 1)
    assert np.all(np.diff(st.start) > 0)


@pytest.mark.parametrize("name", ["launch_bound", "sync_bound", "multi_stream", "eager",
                                  "graph"])
def test_repeated_step_ranges_of_the_h200_traces(name):
    """record_traces.py wraps each iteration in record_function(f"step {s}")."""
    want = raw_ranges(GPU / f"{name}.json.gz", lambda n: re.fullmatch(r"step \d+", n))
    st = find_steps(open_trace([GPU / f"{name}.json.gz"], use_cache=False))
    assert st is not None and st.name == "step N" and "repeated top-level range" in st.source
    assert [n for n, _ in want] == [f"step {i}" for i in range(len(st))]
    assert np.all(np.abs((st.end - st.start) - [d for _, d in want]) <= 1)
    assert st.steady.tolist() == [False] + [True] * (len(st) - 1)   # first: warm-up
    assert abs(st.median_ns - np.median([d for _, d in want][1:])) <= 1


def test_warm_up_step_of_the_mi250_trace_is_left_out():
    path = next((SAMPLES / "kineto" / "amd-mi250-rocm6.2-hta").glob("*.json.gz"))
    want = raw_ranges(path, lambda n: n.startswith("ProfilerStep#"))
    assert len(want) == 2 and want[0][1] > 1.5 * np.median([d for _, d in want])
    st = find_steps(open_trace([path], use_cache=False))
    assert st.steady.tolist() == [False, True]


@pytest.mark.parametrize("folder", ["amd-mi210-gpu-only-tracelens",
                                    "amd-mi300x-rocm7.2-triton-tracelens",
                                    "nvidia-a100-simple-add-hta"])
def test_traces_without_repeated_top_level_ranges_have_no_steps(folder):
    f = next((SAMPLES / "kineto" / folder).glob("*.json.gz"))
    ev = json.load(gzip.open(f))["traceEvents"]
    ann = [e for e in ev if e.get("cat") == "user_annotation" and e.get("ph") == "X"]
    # plain check of why: no ProfilerStep, and every name that repeats lies inside a
    # range that occurs once (simple-add: '[param|cuda]' holds them all)
    names = [e["name"] for e in ann]
    assert not any(n.startswith("ProfilerStep#") for n in names)
    for e in ann:
        if names.count(e["name"]) > 1:
            assert any(o is not e and names.count(o["name"]) == 1
                       and o["ts"] <= e["ts"] and o["ts"] + o["dur"] >= e["ts"] + e["dur"]
                       for o in ann)
    assert find_steps(open_trace([f], use_cache=False)) is None


def _markers(rows) -> Trace:
    """rows: (name, domain, start, end, tid, device or None)."""
    n = len(rows)
    cols = {"name": [r[0] for r in rows], "domain": [r[1] for r in rows],
            "start": np.array([r[2] for r in rows], np.int64),
            "end": np.array([r[3] for r in rows], np.int64),
            "depth": np.zeros(n, np.int16), "pid": np.full(n, 1, np.int32),
            "tid": np.array([r[4] for r in rows], np.int64),
            "device": [r[5] for r in rows]}
    return Trace(markers=build_table("markers", cols), meta={"format": "test"})


def test_the_outer_repeated_range_wins_and_gpu_and_op_ranges_are_not_steps():
    rows = []
    for i in range(4):
        t = i * 1000
        rows.append((f"iter {i}", "nvtx", t, t + 900, 5, None))
        rows.append(("forward", "nvtx", t + 10, t + 400, 5, None))      # nested: not a step
        rows.append(("aten::mm", "cpu_op", t, t + 950, 5, None))        # op, not a step
        rows.append((f"ProfilerStep#{i}", "gpu_user_annotation", t, t + 990, 0, 0))  # GPU
    st = find_steps(_markers(rows))
    assert st.name == "iter N" and len(st) == 4
    assert st.start.tolist() == [0, 1000, 2000, 3000]


def test_ten_steps_beat_three_warm_up_ranges_whose_first_is_long():
    # recorded on the H200 (tests/data/gpu/proof-connections): 3 'warmup' ranges, the
    # first paying CUDA and cuBLAS start-up, covered more time than the 10 'step' ranges
    rows = [("warmup", "user_annotation", 0, 40_000, 5, None),
            ("warmup", "user_annotation", 40_000, 41_000, 5, None),
            ("warmup", "user_annotation", 41_000, 42_000, 5, None)]
    rows += [("step", "user_annotation", 50_000 + i * 1000, 50_900 + i * 1000, 5, None)
             for i in range(10)]
    st = find_steps(_markers(rows))
    assert st.name == "step" and len(st) == 10


def test_overlapping_repeats_are_not_steps():
    rows = [(f"req {i}", "roctx", i * 100, i * 100 + 250, 5, None) for i in range(5)]
    assert find_steps(_markers(rows)) is None


def test_steady_mask():
    assert steady_mask(np.array([0, 10]), np.array([10, 20])).tolist() == [True, True]
    # first of 3+ always out; a long leading step (> 1.5 x median) too
    s = np.array([0, 100, 130, 160, 190])
    e = np.array([100, 130, 160, 190, 220])
    assert steady_mask(s, e).tolist() == [False, True, True, True, True]
    s2 = np.array([0, 100, 200, 230, 260])
    e2 = np.array([100, 200, 230, 260, 290])
    assert steady_mask(s2, e2).tolist() == [False, False, True, True, True]


def test_ranks_stepping_at_once_give_one_thread_s_steps():
    """A merged trace of 4 ranks (one thread each) whose ProfilerSteps run at once."""
    rows = [(f"ProfilerStep#{i}", "user_annotation", i * 1000 + r, i * 1000 + r + 900, 10 + r,
             None) for r in range(4) for i in range(3)]
    st = find_steps(_markers(rows))
    assert st is not None and st.name == "ProfilerStep#N" and len(st) == 3
    assert np.all(np.diff(st.start) == 1000)


def _host_ahead(gpu_ns: int, n: int = 6, host_ns: int = 1_000_000) -> Trace:
    """n back-to-back 'step i' ranges of ``host_ns`` on thread 9, each launching one
    kernel; the kernels run one after another, ``gpu_ns`` each, on one stream."""
    start = np.arange(n, dtype=np.int64) * host_ns
    markers = build_table("markers", {
        "name": [f"step {i}" for i in range(n)], "domain": ["user_annotation"] * n,
        "start": start, "end": start + host_ns, "depth": np.zeros(n, np.int16),
        "pid": np.full(n, 1, np.int32), "tid": np.full(n, 9, np.int64)})
    call = start + 100_000
    api = build_table("api", {
        "name": ["cudaLaunchKernel"] * n, "domain": ["cuda_runtime"] * n, "start": call,
        "end": call + 10_000, "pid": np.full(n, 1, np.int32), "tid": np.full(n, 9, np.int64),
        "correlation_id": np.arange(n, dtype=np.int64)})
    ks = np.maximum(call + 20_000, 120_000 + np.arange(n, dtype=np.int64) * gpu_ns)
    kernels = build_table("kernels", {
        "name": ["k"] * n, "device": np.zeros(n, np.int16), "start": ks, "end": ks + gpu_ns,
        "stream": np.zeros(n, np.int32), "correlation_id": np.arange(n, dtype=np.int64),
        "api_index": np.arange(n, dtype=np.int32)})
    return Trace(markers=markers, api=api, kernels=kernels, meta={"format": "test"})


def test_gpu_step_ends_follow_the_kernels_each_step_launched():
    from hipscope.analysis.steps import gpu_step_ends

    tr = _host_ahead(gpu_ns=4_000_000)
    st = find_steps(tr)
    ends = gpu_step_ends(tr, st)
    # by hand: kernel i runs [120 µs + 4 ms i, 120 µs + 4 ms (i + 1))
    assert ends.tolist() == [120_000 + 4_000_000 * (i + 1) for i in range(6)]
    quick = _host_ahead(gpu_ns=300_000)        # kernels end inside their steps
    assert gpu_step_ends(quick, find_steps(quick)).tolist() == find_steps(quick).end.tolist()


def test_the_estimate_says_when_the_gpu_runs_behind_the_hosts_steps():
    from hipscope.tuner.context import TraceContext
    from hipscope.tuner.estimate import Pieces, estimate

    for gpu_ns, lags in ((4_000_000, True), (300_000, False)):
        ctx = TraceContext(_host_ahead(gpu_ns))
        est = estimate(ctx, Pieces.of([]))
        assert est.basis == "steps" and est.step_ns == 1_000_000
        assert est.gpu_lags is lags
        assert ("the GPU's step is 4.00 ms" in est.text()) is lags, est.text()


def _raw_gpu_step(path: Path) -> tuple[float, float]:
    """(median host step, median GPU step) of a recorded torch trace, by plain json:
    'step#N' ranges; for each, the last end of the kernels whose launch call (same
    correlation id) starts inside it; the GPU step is the time between those ends."""
    ev = json.load(gzip.open(path))["traceEvents"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev
                   if e.get("cat") == "user_annotation" and str(e["name"]).startswith("step#"))
    call = {e["args"]["correlation"]: e["ts"] for e in ev
            if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    tails = [b for _, b in steps]
    for e in ev:
        if e.get("cat") == "kernel" and e["args"].get("correlation") in call:
            t = call[e["args"]["correlation"]]
            for i, (a, b) in enumerate(steps):
                if a <= t < b:
                    tails[i] = max(tails[i], e["ts"] + e["dur"])
    host = [b - a for a, b in steps][1:]              # the first is warm-up
    gpu = np.diff(tails)
    return float(np.median(host)), float(np.median(gpu))


def test_the_recorded_h200_streams_run_is_flagged_and_the_others_are_not():
    """section5/streams: host steps 0.60 ms, GPU step ~2.4 ms (own timing 2.42 ms)."""
    from hipscope.tuner.context import TraceContext
    from hipscope.tuner.estimate import gpu_step_ns, steps_of

    for name, lags in (("streams", True), ("decode", False), ("sync", False),
                       ("pageable", False)):
        path = DATA / "gpu" / "section5" / name / "trace.json.gz"
        host_us, gpu_us = _raw_gpu_step(path)
        ctx = TraceContext(open_trace(path))
        st = steps_of(ctx)
        assert abs(st.median_ns / 1e3 - host_us) <= 0.02 * host_us
        assert abs(gpu_step_ns(ctx, st) / 1e3 - gpu_us) <= 0.02 * gpu_us
        assert (gpu_us > 1.25 * host_us) is lags, (name, host_us, gpu_us)
