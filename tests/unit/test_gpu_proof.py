"""What the real H200 runs recorded (tests/data/gpu/proof, README there): hipscope reads
them back and its figures agree with what was measured independently."""

from __future__ import annotations

import gzip
import json

import pytest

from hipscope.parsers import open_trace
from hipscope.tuner.rules import propose
from tests.conftest import DATA

PROOF = DATA / "gpu" / "proof"


def test_torch_profiler_run_opens_with_the_programs_kernels():
    """`hipscope run --profiler torch` on an 8-step, 2-stream matmul+tanh program."""
    tr = open_trace(PROOF / "torchrun_trace.json.gz")
    raw = json.load(gzip.open(PROOF / "torchrun_trace.json.gz"))["traceEvents"]
    n = sum(1 for e in raw if e.get("cat") == "kernel")
    assert len(tr.kernels) == n == 50
    codes, names = tr.kernels.codes("name")
    gemm = [i for i, s in enumerate(names) if "gemm" in s]
    assert sum(int((codes == i).sum()) for i in gemm) == 16     # 8 steps x 2 streams
    assert tr.device_name(0) == "NVIDIA H200"


def test_ncu_run_report_has_both_kernels_three_times():
    """`hipscope run --profiler ncu` on vadd_streams.cu: 3 x vadd + 3 x scale."""
    rep = json.loads((PROOF / "report_ncurun.json").read_text())
    assert rep["format"] == "ncu-csv" and rep["kernel_count"] == 6
    counts = {k["name"].split("(")[0]: k["count"] for k in rep["top_kernels"]}
    assert counts == {"vadd": 3, "scale": 3}


def test_live_telemetry_was_sampled_from_nvidia_smi():
    lines = (PROOF / "telemetry.csv").read_text().splitlines()
    assert lines[0].startswith("time,gpu,util_pct")
    assert len(lines) > 20 and all(",nvidia-smi," in ln for ln in lines[1:])


def test_tuner_proposes_graph_capture_on_the_workload_baseline():
    tr = open_trace(PROOF / "launch_bound_trace.json.gz")
    props = propose(tr)
    assert props[0].id == "graph-capture"
    assert 0.6 < props[0].estimated_gain_fraction < 0.95


def test_sweep_found_graph_capture_better_with_an_interval_below_one():
    d = json.loads((PROOF / "sweep.json").read_text())
    c = d["comparisons"]
    for name in ("streams=1, graph=on", "streams=4, graph=on"):
        assert c[name]["verdict"] == "better" and c[name]["ci_high"] < 1
    for name in ("streams=1, graph=off", "streams=4, graph=off"):
        assert c[name]["verdict"] != "better"
    assert d["best"] == "streams=4, graph=on"
    assert c["streams=1, graph=on"]["ratio"] == pytest.approx(0.094, abs=0.01)


def test_probe_figures_are_plausible_for_an_h200():
    p = json.loads((PROOF / "probe.json").read_text())
    assert p["gpu"]["name"] == "NVIDIA H200" and not p["errors"]
    assert 0.1 < p["graph"]["per_node_ns"] / 1000 < 2         # µs per graph node
    assert 2 < p["launch"]["api_ns"] / 1000 < 20               # µs per launch call
    assert p["copies"]["pinned_speedup"] > 2
    assert p["streams"]["overlapping_streams"] >= 8
