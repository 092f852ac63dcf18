"""What the real H200 runs recorded (tests/data/gpu/proof, README there): hipscope reads
them back and its figures agree with what was measured independently."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

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


# ---- issue 12: a run started with CUDA_DEVICE_MAX_CONNECTIONS=1 on the H200
# (tests/data/gpu/run_connections_proof.sh; README.md in proof-connections/)
CONN = DATA / "gpu" / "proof-connections"
KNOB = "CUDA_DEVICE_MAX_CONNECTIONS"


def _own_timings() -> dict[str, float]:
    """The program's own CUDA-event step times by connections (depth order), from log.txt."""
    out: dict[str, float] = {}
    lines = (CONN / "log.txt").read_text().splitlines()
    for head, line in zip(lines, lines[1:]):
        if head.startswith("=== own timing, ") and "breadth" not in head \
                and line.startswith("HIPSCOPE_RESULT "):
            d = json.loads(line[len("HIPSCOPE_RESULT "):])
            out[d["connections"]] = d["wall_s"]
    return out


def test_connections_run_recorded_its_env_of_one_connection():
    spec = json.loads((CONN / "spec.json").read_text())
    assert spec["env"] == {KNOB: "1"} and spec["profiler"]["name"] == "torch"
    assert json.loads((CONN / "status.json").read_text())["state"] == "finished"


def test_connections_proposal_raises_it_from_one_read_from_the_run():
    props = json.loads((CONN / "proposals.json").read_text())
    hw = next(p for p in props if p["rule"] == "hw-queues")
    assert f"Raise {KNOB} from 1 to at least 9" in hw["title"]
    assert "from 8" not in hw["title"]
    assert hw["evidence"]["figures"][KNOB] == 1
    assert "the environment of run" in hw["evidence"]["figures"][f"{KNOB}_from"]
    assert hw["experiment"]["env"] == {KNOB: "9"}


def test_connections_proposal_from_a_rebuilt_run_folder_still_says_from_one(tmp_path):
    """The current tuner on the recorded H200 trace, opened as the (moved) run folder."""
    st = json.loads((CONN / "status.json").read_text())
    recorded = Path(st["trace_inputs"][0])
    run = tmp_path / recorded.parent.parent.name          # a moved run keeps its name
    (run / "prof").mkdir(parents=True)
    for name in ("spec.json", "status.json"):
        (run / name).write_bytes((CONN / name).read_bytes())
    (run / "prof" / recorded.name).write_bytes(gzip.decompress(
        (CONN / "trace.json.gz").read_bytes()))
    props = propose(open_trace(run))
    hw = next(p for p in props if p.id == "hw-queues")
    assert hw.title.startswith(f"Raise {KNOB} from 1 to at least 9")


def test_connections_sweep_control_says_no_difference_and_8_vs_1_is_recorded():
    d = json.loads((CONN / "sweep.json").read_text())
    assert d["source"] == "program" and d["spec"]["control"] is True
    assert d["control"]["verdict"] == "no difference"
    assert d["control"]["ci_low"] < 1 < d["control"]["ci_high"]
    c8 = d["comparisons"][f"{KNOB}=8"]
    # measured on the H200: 8 vs 1 connections 1.14 [0.82, 1.58]: no measurable gain
    assert c8["ratio"] == pytest.approx(1.136, abs=0.005)
    assert (c8["ci_low"], c8["ci_high"]) == pytest.approx((0.817, 1.579), abs=0.005)
    assert c8["verdict"] == "no difference" and d["best"] is None
    runs = d["runs"]
    kept = [r for r in runs if not r["warmup"]]
    assert len(kept) == 4 * d["rounds"]        # baseline, 8, 32 and the control per round


def test_connections_estimate_overstates_what_was_measured():
    """The tuner's step estimate (an upper bound) against the A/B and the own timings."""
    est = json.loads((CONN / "proposals.json").read_text())[0]["estimate"]
    per_step_gain = est["gain_ns"] / est["steps"]          # gain_ns is over the window
    predicted = (est["step_ns"] - per_step_gain) / est["step_ns"]
    assert predicted == pytest.approx(0.38, abs=0.01)     # "3.56 ms -> about 1.36 ms"
    ratio = json.loads((CONN / "sweep.json").read_text())["comparisons"][f"{KNOB}=8"]
    assert ratio["ci_low"] > predicted                    # the A/B rules that gain out
    own = _own_timings()
    assert set(own) == {"1", "8", "32"}
    assert own["8"] / own["1"] == pytest.approx(0.892, abs=0.005)
