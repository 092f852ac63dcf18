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
