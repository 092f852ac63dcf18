"""What the real H200 runs recorded (tests/data/gpu/proof, README there): hipscope reads
them back and its figures agree with what was measured independently."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
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


# ---- the launch-rate ceiling of the hw-queues estimate (issue 12 section 5)
def _streams_trace(call_ns: int, gap_ns: int, kernel_ns: int, steps: int = 6,
                   streams: int = 8, chain: int = 4):
    """One host thread issues, per step, ``chain`` launches on each of ``streams``
    streams, stream after stream (each call ``call_ns`` long, ``gap_ns`` apart); the GPU
    runs the kernels one at a time in launch order (one hardware queue); the step ends
    with a cudaStreamSynchronize once the last kernel is done. Returns the trace and,
    per step, (start, end, host time from the first launch call's start to the last
    one's end)."""
    from hipscope.model import Trace
    from hipscope.model.table import build_table
    api: dict[str, list] = {"name": [], "start": [], "end": []}
    kern: dict[str, list] = {"start": [], "end": [], "stream": [], "api_index": []}
    marks, t, gpu = [], 1_000_000, 0
    for _ in range(steps):
        s0, issue0 = t, t + 2_000
        t = issue0
        for s in range(1, streams + 1):
            for _ in range(chain):
                kern["api_index"].append(len(api["name"]))
                api["name"].append("cudaLaunchKernel")
                api["start"].append(t)
                api["end"].append(t + call_ns)
                gpu = max(t + call_ns + 1_000, gpu)
                kern["start"].append(gpu)
                kern["end"].append(gpu + kernel_ns)
                kern["stream"].append(s)
                gpu += kernel_ns
                t += call_ns + gap_ns
        issue1 = t - gap_ns
        api["name"].append("cudaStreamSynchronize")
        api["start"].append(t)
        api["end"].append(max(t, gpu) + 1_000)
        t = max(t, gpu) + 2_000
        marks.append((s0, t, issue1 - issue0))
    na, nk = len(api["name"]), len(kern["start"])
    api_t = build_table("api", {
        "name": api["name"], "domain": ["cuda_runtime"] * na,
        "start": np.array(api["start"], np.int64), "end": np.array(api["end"], np.int64),
        "pid": np.full(na, 7, np.int32), "tid": np.full(na, 70, np.int64),
        "correlation_id": np.arange(1, na + 1)})
    kernels = build_table("kernels", {
        "name": ["k"] * nk, "device": np.zeros(nk, np.int16),
        "start": np.array(kern["start"], np.int64), "end": np.array(kern["end"], np.int64),
        "stream": np.array(kern["stream"], np.int32), "pid": np.full(nk, 7, np.int32),
        "tid": np.full(nk, 70, np.int64),
        "correlation_id": np.array(kern["api_index"]) + 1,
        "api_index": np.array(kern["api_index"], np.int32)})
    markers = build_table("markers", {
        "name": [f"step {j}" for j in range(steps)], "domain": ["user_annotation"] * steps,
        "start": np.array([m[0] for m in marks], np.int64),
        "end": np.array([m[1] for m in marks], np.int64),
        "depth": np.zeros(steps, np.int16), "pid": np.full(steps, 7, np.int32),
        "tid": np.full(steps, 70, np.int64)})
    devices = build_table("devices", {"index": np.zeros(1, np.int16),
                                      "name": ["NVIDIA H200"], "vendor": ["NVIDIA"]})
    trace = Trace(kernels=kernels, api=api_t, devices=devices, markers=markers,
                  meta={"format": "test", "pids": [7], "env": {KNOB: "1"}})
    return trace, marks


def _hw_estimate(trace):
    (p,) = propose(trace, only=["hw-queues"])
    return p, p.estimate


def test_launch_bound_streams_get_no_gain_from_more_queues():
    """32 short kernels a step, the host busy issuing them the whole step (the
    connections proof's shape): the old estimate said 'step -> about 0'."""
    trace, marks = _streams_trace(call_ns=10_000, gap_ns=4_000, kernel_ns=5_000)
    p, est = _hw_estimate(trace)
    assert p.title.startswith(f"Raise {KNOB} from 1 to at least 8")
    steady = marks[1:]                                   # the first step is warm-up
    issue = sum(m[2] for m in steady)
    assert est.basis == "steps" and est.window_ns == sum(m[1] - m[0] for m in steady)
    # the steps cannot get shorter than the host's time issuing their launches
    assert est.window_ns - est.gain_ns >= issue
    assert est.fraction < 0.03                         # the step's 2 us ends, no more


def test_long_narrow_kernels_keep_their_overlap_gain_down_to_the_launch_time():
    """32 kernels of 100 us a step, issued in 14 us each: overlap could save most of
    the step, and the estimate stops at the host's issue time."""
    trace, marks = _streams_trace(call_ns=10_000, gap_ns=4_000, kernel_ns=100_000)
    p, est = _hw_estimate(trace)
    steady = marks[1:]
    issue = sum(m[2] for m in steady)
    assert est.window_ns - est.gain_ns == issue          # the ceiling is what binds
    assert p.evidence.figures["launch_floor_ns"] == steady[0][2]
    assert est.fraction > 0.8
    assert "hw-queues" in [q.id for q in propose(trace)]


def test_connections_trace_estimate_is_now_within_what_was_measured(tmp_path):
    """This morning's launch-bound 8-stream program: 3.56 ms -> about 1.36 ms before the
    ceiling, while 8 vs 1 connections measured 1.14 [0.82, 1.58]."""
    st = json.loads((CONN / "status.json").read_text())
    recorded = Path(st["trace_inputs"][0])
    run = tmp_path / recorded.parent.parent.name
    (run / "prof").mkdir(parents=True)
    for name in ("spec.json", "status.json"):
        (run / name).write_bytes((CONN / name).read_bytes())
    (run / "prof" / recorded.name).write_bytes(gzip.decompress(
        (CONN / "trace.json.gz").read_bytes()))
    hw = next(p for p in propose(open_trace(run)) if p.id == "hw-queues")
    assert hw.title.startswith(f"Raise {KNOB} from 1 to at least 9")
    predicted = 1 - hw.estimate.fraction
    assert predicted > 0.85                              # was 0.38
    c8 = json.loads((CONN / "sweep.json").read_text())["comparisons"][f"{KNOB}=8"]
    assert c8["ci_low"] < predicted < c8["ci_high"]
    own = _own_timings()
    assert predicted == pytest.approx(own["8"] / own["1"], abs=0.05)


# ---- issue 12 section 5 on the H200 (tests/data/gpu/run_section5.sh; section5/README.md;
# docs/tuning.md "Section 5 on the H200"): every figure the doc states, from plain json
S5 = DATA / "gpu" / "section5"
WORKLOADS = {"decode": ("decode_graph.py", "graph-capture", "cuda-graph=on"),
             "streams": ("streams_narrow.py", "hw-queues", f"{KNOB}=9"),
             "pageable": ("pageable_copies.py", "pinned-memory", "pinned=on"),
             "sync": ("sync_step.py", "remove-syncs", "no-sync=on")}


def _s5(key: str, name: str):
    return json.loads((S5 / key / name).read_text())


def _predicted(p: dict) -> float:
    """A recorded proposal's estimate as step after / step before."""
    e = p["estimate"]
    return 1 - e["gain_ns"] / e["window_ns"]


def _medians(sweep: dict) -> list[float]:
    """Each arm's median own (HIPSCOPE_RESULT) time over its kept runs."""
    import statistics
    return [statistics.median(r["measurement"]["wall_s"] for r in sweep["runs"]
                              if r["variant"] == i and not r["warmup"])
            for i in range(len(sweep["variants"]))]


def _rebuilt_run(src: Path, trace_gz: Path, tmp: Path) -> Path:
    """A recorded run folder rebuilt under ``tmp`` (spec, status, the gunzipped trace)."""
    recorded = Path(json.loads((src / "status.json").read_text())["trace_inputs"][0])
    run = tmp / recorded.parent.parent.name
    (run / "prof").mkdir(parents=True)
    for name in ("spec.json", "status.json"):
        (run / name).write_bytes((src / name).read_bytes())
    (run / "prof" / recorded.name).write_bytes(gzip.decompress(trace_gz.read_bytes()))
    return run


def test_section5_runs_recorded_their_programs_and_env():
    for key, (prog, _, _) in WORKLOADS.items():
        spec = _s5(key, "run/spec.json")
        assert spec["command"][1] == f"tests/data/gpu/{prog}"
        assert spec["profiler"]["name"] == "torch"
        assert spec["env"] == ({KNOB: "1"} if key == "streams" else {})
        assert _s5(key, "run/status.json")["state"] == "finished"
        with gzip.open(S5 / key / "trace.json.gz") as fh:
            ev = json.load(fh)["traceEvents"]
        assert sum(1 for e in ev if e.get("cat") == "kernel") > 100


def test_section5_first_proposals_are_the_rules_the_doc_names():
    for key, (_, rule, _) in WORKLOADS.items():
        assert _s5(key, "proposals.json")[0]["rule"] == rule
    hw = _s5("streams", "proposals.json")[0]
    assert hw["title"].startswith(f"Raise {KNOB} from 1 to at least 9")
    assert hw["experiment"]["env"] == {KNOB: "9"}
    assert _s5("streams", "sweep_spec.json")["knobs"][0]["values"] == ["9"]


def test_section5_sweeps_found_every_change_better_and_every_control_no_difference():
    measured = {"decode": 0.157, "streams": 0.170, "pageable": 0.369, "sync": 0.791}
    for key, (_, _, variant) in WORKLOADS.items():
        d = _s5(key, "sweep.json")
        assert d["source"] == "program" and d["stopped"] == "decided" and d["rounds"] == 4
        c = d["comparisons"][variant]
        assert c["verdict"] == "better" and c["ci_high"] < 1
        assert c["ratio"] == pytest.approx(measured[key], abs=0.0005)
        ctl = d["control"]
        assert ctl["verdict"] == "no difference" and ctl["ci_low"] < 1 < ctl["ci_high"]
        base, change, _ = _medians(d)
        assert c["ci_low"] < change / base < c["ci_high"]     # own timing agrees


def test_section5_recorded_estimates_sit_where_the_doc_says():
    iv = {k: _s5(k, "sweep.json")["comparisons"][v[2]] for k, v in WORKLOADS.items()}
    pred = {k: _predicted(_s5(k, "proposals.json")[0]) for k in WORKLOADS}
    doc = {"decode": 0.087, "streams": 0.0, "pageable": 0.620, "sync": 0.778}
    assert pred == pytest.approx(doc, abs=0.001)          # "about 0": the window, capped
    assert pred["decode"] < iv["decode"]["ci_low"]        # gain overstated
    assert pred["streams"] < iv["streams"]["ci_low"]
    assert pred["pageable"] > iv["pageable"]["ci_high"]   # conservative (assumed 2x)
    assert 0 < iv["sync"]["ci_low"] - pred["sync"] < 0.005   # just below


def test_section5_current_tuner_bounds_streams_by_launches_and_probe_fixes_pinned(tmp_path):
    """The launch-rate bound on the streams run (598 us -> about 327 us), and the
    pinned-memory estimate with the morning's probe speed-up inside the A/B interval."""
    run = _rebuilt_run(S5 / "streams" / "run", S5 / "streams" / "trace.json.gz", tmp_path)
    hw = next(p for p in propose(open_trace(run)) if p.id == "hw-queues")
    assert hw.title.startswith(f"Raise {KNOB} from 1 to at least 9")
    assert 1 - hw.estimate.fraction == pytest.approx(0.547, abs=0.005)
    assert hw.evidence.figures["launch_floor_ns"] == pytest.approx(342_000, rel=0.01)
    assert 1 - hw.estimate.fraction > _s5("streams", "sweep.json")["comparisons"][
        f"{KNOB}=9"]["ci_high"]                           # the host-range window: below
    probe = json.loads((PROOF / "probe.json").read_text())["copies"]["pinned_speedup"]
    run = _rebuilt_run(S5 / "pageable" / "run", S5 / "pageable" / "trace.json.gz", tmp_path)
    pin = next(p for p in propose(open_trace(run), probes={"pinned_speedup": probe})
               if p.id == "pinned-memory")
    c = _s5("pageable", "sweep.json")["comparisons"]["pinned=on"]
    assert c["ci_low"] < 1 - pin.estimate.fraction < c["ci_high"]
    assert 1 - pin.estimate.fraction == pytest.approx(0.365, abs=0.005)


def test_section5_no_aa_sweep_claimed_a_difference():
    def claims(d: dict) -> bool:
        cs = list(d["comparisons"].values()) + ([d["control"]] if d["control"] else [])
        return any(c["verdict"] != "no difference" for c in cs)
    aa = [json.loads(p.read_text()) for p in sorted((S5 / "aa").glob("aa_*[0-9].json"))]
    torch_aa = [json.loads(p.read_text())
                for p in sorted((S5 / "aa_torch").glob("aa_torch_*[0-9].json"))]
    assert len(aa) == 10 and len(torch_aa) == 6
    for d in aa + torch_aa:                               # the same program in every arm
        assert all(not v["args"] and set(v["env"]) <= {"HIPSCOPE_AA_ARM"}
                   for v in d["variants"])
        assert d["source"] == "program" and d["rounds"] >= 4
    assert sum(len(d["comparisons"]) + 1 for d in aa) == 20
    assert sum(map(claims, aa)) == 0 and sum(map(claims, torch_aa)) == 0
    assert not any(claims({"comparisons": {}, "control": _s5(k, "sweep.json")["control"]})
                   for k in WORKLOADS)
