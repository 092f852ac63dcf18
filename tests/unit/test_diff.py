"""Run comparison (hipscope.analysis.diff) and `hipscope compare`, on real traces.

eager/graph: the same 12-layer MLP on an H200, run eagerly and replayed from a CUDA
graph (tests/data/gpu/README.md); the bert pair: one model on an MI300X and an H100.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import numpy as np
import pytest

from hipscope.analysis import diff
from hipscope.analysis.idle import idle_breakdown
from hipscope.model import Trace, build_table
from hipscope.model.progress import Cancelled
from hipscope.parsers import open_trace
from tests.conftest import DATA, ROOT, SAMPLES

EAGER = DATA / "gpu" / "eager.json.gz"
GRAPH = DATA / "gpu" / "graph.json.gz"
BERT = "gaunernst_bert-small-uncased__1016001.json.gz"
AMD_BERT = SAMPLES / "kineto" / "amd-mi300x-bert-tracelens" / BERT
NV_BERT = SAMPLES / "kineto" / "nvidia-h100-bert-tracelens" / BERT


@pytest.fixture(scope="module")
def eager() -> Trace:
    return open_trace(EAGER)


@pytest.fixture(scope="module")
def graph() -> Trace:
    return open_trace(GRAPH)


@pytest.fixture(scope="module")
def eager_vs_graph(eager, graph) -> diff.Comparison:
    return diff.compare(eager, graph)


def raw_span_ns(path) -> float:
    """min ts .. max ts+dur over the duration events of the raw Kineto JSON, in ns.
    Left out: the profiler's own session envelope ('Trace') and its 'overhead' events,
    which are no part of the profiled program."""
    events = json.loads(gzip.open(path).read())["traceEvents"]
    dur = [e for e in events if e.get("ph") == "X" and "dur" in e
           and e.get("cat") not in ("Trace", "overhead")]
    lo = min(float(e["ts"]) for e in dur)
    hi = max(float(e["ts"]) + float(e["dur"]) for e in dur)
    return (hi - lo) * 1000.0


# --------------------------------------------------------------------------- eager vs graph


def test_span_ratio_matches_the_raw_json(eager_vs_graph):
    span = eager_vs_graph.headline["span_ns"]
    ra, rb = raw_span_ns(EAGER), raw_span_ns(GRAPH)
    assert span["a"] == pytest.approx(ra, abs=2) and span["b"] == pytest.approx(rb, abs=2)
    assert span["ratio"] == pytest.approx(rb / ra, rel=1e-6)
    # and close to the independently measured CUDA-event times (87.3 vs 20.5 ms)
    wall = json.loads((DATA / "gpu" / "wall.json").read_text())
    event_ratio = wall["graph"]["cuda_event_ms"] / wall["eager"]["cuda_event_ms"]
    assert span["ratio"] == pytest.approx(event_ratio, rel=0.05)


def test_graph_replay_shrinks_host_wait_and_launch_overhead(eager_vs_graph, eager, graph):
    h = eager_vs_graph.headline
    a = h["idle_host_wait_ns"]["a"] + h["idle_launch_overhead_ns"]["a"]
    b = h["idle_host_wait_ns"]["b"] + h["idle_launch_overhead_ns"]["b"]
    assert b < a / 5
    # the headline carries analysis.idle's figures, not a recount of its own
    assert h["idle_host_wait_ns"]["a"] == idle_breakdown(eager).total()["host_wait"]
    assert h["idle_launch_overhead_ns"]["b"] == idle_breakdown(graph).total()["launch_overhead"]
    assert h["gpu_busy_fraction"]["b"] > h["gpu_busy_fraction"]["a"]
    assert h["graph_launch_kernels"]["b"] == len(graph.kernels)


def test_same_kernels_matched_one_to_one(eager_vs_graph, eager):
    kd = eager_vs_graph.kernels
    assert kd.status == ["matched"] * 4 and not kd.added and not kd.removed
    assert sorted(kd.names) == sorted(set(eager.kernels.strings("name")))
    assert kd.a_count.tolist() == [1200] * 4 and kd.b_count.tolist() == [1200] * 4
    impact = np.abs(kd.delta_total)
    assert (np.diff(impact) <= 0).all()
    assert kd.a_total.sum() == pytest.approx(eager_vs_graph.headline["kernel_time_ns"]["a"])
    assert eager_vs_graph.not_comparable is False and eager_vs_graph.warnings == []


def test_per_instance_matching(eager, graph):
    name = next(n for n in eager.kernels.strings("name") if "sgemm" in n)
    inst = diff.instance_diff(eager, graph, name)
    assert len(inst.a_rows) == len(inst.b_rows) == 1200
    assert inst.a_unmatched == inst.b_unmatched == 0
    k = eager.kernels
    # launch order: the i-th instance is launched after the (i-1)-th
    assert (np.diff(k.numpy("start")[inst.a_rows]) > 0).all()
    dur = k.numpy("end")[inst.a_rows] - k.numpy("start")[inst.a_rows]
    np.testing.assert_array_equal(inst.a_duration, dur)
    np.testing.assert_array_equal(inst.delta, inst.b_duration - inst.a_duration)
    kd = diff.compare(eager, graph).kernels
    assert inst.delta.sum() == pytest.approx(kd.delta_total[kd.names.index(name)])


def test_marker_alignment_on_step_annotation(eager, graph):
    al = diff.align([eager, graph], diff.MarkerRef.parse("step 1"))
    raw = []
    for path in (EAGER, GRAPH):
        ev = json.loads(gzip.open(path).read())["traceEvents"]
        raw.append(next(e for e in ev if e.get("cat") == "gpu_user_annotation"
                        and e["name"] == "step 1"))
    for r, e in zip(al.ranges, raw):
        assert r.span == pytest.approx(e["dur"] * 1000, abs=2)
    # offsets put the step-1 starts at 0 in both traces
    assert [o + s for o, s in zip(al.offsets, al.origins)] == [0, 0]
    assert al.spans[1] < al.spans[0] / 3           # graph replay: ~4 ms vs ~16 ms a step
    host = diff.find_marker(eager, diff.MarkerRef("step 1", 1, "user_annotation"))
    assert host.start < al.ranges[0].start        # the host range begins first
    with pytest.raises(LookupError, match="occurrence 2"):
        diff.find_marker(eager, diff.MarkerRef("step 1", 2))
    starts = diff.align([eager, graph])
    assert starts.origins == [eager.time_range()[0], graph.time_range()[0]]


def test_kernel_instance_alignment(eager, graph):
    name = next(n for n in eager.kernels.strings("name") if "scal_kernel" in n)
    al = diff.align([eager, graph], diff.KernelRef.parse(f"{name}:3"))
    rows = diff.kernel_rows(eager, name, diff.NameNormalizer())
    assert al.origins[0] == eager.kernels.numpy("start")[rows[2]]
    assert al.spans[0] == eager.kernels.numpy("end")[rows[2]] - al.origins[0]


def test_a_trace_against_itself_gives_zero_deltas(eager):
    c = diff.compare(eager, eager, marker=diff.MarkerRef("step 2"))
    for key, row in c.headline.items():
        if row["a"] is None:
            continue
        assert row["delta"] == 0, key
        assert row["ratio"] in (1.0, None) and (row["ratio"] is None) == (row["a"] == 0), key
    kd = c.kernels
    assert (kd.delta_total == 0).all() and (kd.ratio == 1).all()
    assert not kd.added and not kd.removed and c.warnings == []
    assert not any(p["differs"] for p in c.provenance.values())


def test_several_b_each_against_a(eager, graph):
    cs = diff.compare_many(eager, [graph, eager])
    assert cs[0].headline["span_ns"] == diff.compare(eager, graph).headline["span_ns"]
    assert cs[1].headline["span_ns"]["ratio"] == 1.0
    assert cs[0].headline["span_ns"]["a"] == cs[1].headline["span_ns"]["a"]
    seen: list[float] = []
    diff.compare_many(eager, [graph, eager], progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == 1.0
    with pytest.raises(Cancelled):
        diff.compare_many(eager, [graph], cancelled=lambda: True)


# --------------------------------------------------------------------------- AMD vs NVIDIA


def test_amd_vs_nvidia_bert_warns_gpus_differ():
    a, b = open_trace(AMD_BERT), open_trace(NV_BERT)
    c = diff.compare(a, b)
    assert c.not_comparable
    assert any("GPUs differ" in w and "MI300X" in w and "H100" in w for w in c.warnings)
    assert c.provenance["gpu"]["differs"] and c.provenance["vendor"]["differs"]
    kd = c.kernels
    assert kd.added and kd.removed                    # hipBLASLt vs cuBLAS/CUTLASS GEMMs
    assert "attn_fwd" in kd.removed
    assert kd.a_total.sum() == pytest.approx(c.headline["kernel_time_ns"]["a"])
    # stripping template arguments matches more of the PyTorch kernels
    loose = diff.compare(a, b, diff.NameNormalizer().with_templates_stripped()).kernels
    assert loose.status.count("matched") > kd.status.count("matched")
    json.dumps(diff.to_json(c), allow_nan=False)


# --------------------------------------------------------------------------- normalisation


def _trace(names: list[str], durations: list[int], device: str = "AMD Instinct MI300X") -> Trace:
    n = len(names)
    start = np.arange(n, dtype=np.int64) * 10_000
    kernels = build_table("kernels", {
        "name": names, "device": np.zeros(n, np.int16), "start": start,
        "end": start + np.asarray(durations, np.int64)})
    devices = build_table("devices", {"index": [0], "name": [device]})
    return Trace(kernels=kernels, devices=devices, meta={"sources": ["hand-built"]})


@pytest.mark.parametrize("a_name, b_name", [
    ("gemm_kernel_0x1a2b3c", "gemm_kernel_0x99ffee"),
    ("reduce_3fa9c2d17b", "reduce_77aa01b2c4"),
    ("softmax.clone", "softmax"),
    ("softmax.clone.2", "softmax.kd"),
    ("attn_fwd [clone .kd]", "attn_fwd"),
    ("triton_poi_fused_add_0_0d1d2d", "triton_poi_fused_add_0_0d1d2de3de"),
])
def test_default_rules_merge_hash_and_clone_suffixes(a_name, b_name):
    norm = diff.NameNormalizer()
    assert norm(a_name) == norm(b_name)
    c = diff.compare(_trace([a_name, a_name], [100, 100]), _trace([b_name], [300]))
    kd = c.kernels
    assert kd.status == ["matched"] and kd.a_count.tolist() == [2] and kd.b_count.tolist() == [1]
    assert kd.delta_total.tolist() == [100] and kd.ratio.tolist() == [1.5]


@pytest.mark.parametrize("a_name, b_name", [
    ("triton_poi_fused_add_0", "triton_poi_fused_add_1"),      # two different kernels
    ("gemm<float, 4>(float*)", "gemm<half, 4>(half*)"),          # instantiations
    ("Cijk_MT16x16x128_MI16", "Cijk_MT32x64x128_MI16"),          # tile configurations
])
def test_default_rules_keep_different_kernels_apart(a_name, b_name):
    kd = diff.compare(_trace([a_name], [100]), _trace([b_name], [100])).kernels
    assert sorted(kd.status) == ["added", "removed"]
    assert kd.added == [b_name] and kd.removed == [a_name]


def test_template_arguments_only_on_request():
    a, b = _trace(["gemm<float, 4>(float*)"], [100]), _trace(["gemm<half, 8>(float*)"], [50])
    assert sorted(diff.compare(a, b).kernels.status) == ["added", "removed"]
    kd = diff.compare(a, b, diff.NameNormalizer().with_templates_stripped()).kernels
    assert kd.names == ["gemm(float*)"] and kd.status == ["matched"]


def test_rules_file(tmp_path):
    f = tmp_path / "rules.txt"
    f.write_text("# my rules\n@defaults\n_v\\d+$\nfoo => bar\n")
    norm = diff.NameNormalizer.from_file(f)
    assert norm("foo_kernel_v2.kd") == "bar_kernel"
    assert len(norm.rules) == len(diff.DEFAULT_RULES) + 2
    assert diff.NameNormalizer.parse("x_\\d+")("a.clone") == "a.clone"   # no @defaults
    f.write_text("ok\n(unclosed\n")
    with pytest.raises(diff.RulesError, match="line 2"):
        diff.NameNormalizer.from_file(f)


def test_added_and_removed_sorted_by_impact():
    a = _trace(["k1", "k2", "gone"], [100, 1000, 50])
    b = _trace(["k1", "k2", "new"], [100, 400, 5000])
    kd = diff.compare(a, b).kernels
    assert kd.names == ["new", "k2", "gone", "k1"]
    assert kd.status == ["added", "matched", "removed", "matched"]
    assert np.isnan(kd.ratio[0]) and kd.ratio[1] == 0.4
    js = diff.to_json(diff.compare(a, b))
    assert js["kernels"][0] == {**js["kernels"][0], "name": "new", "a_total_ns": 0,
                                "b_total_ns": 5000, "delta_ns": 5000, "ratio": None}


def test_kernel_sets_that_barely_overlap_are_not_comparable():
    a = _trace(["k1", "big_a"], [100, 10_000])
    b = _trace(["k1", "big_b"], [100, 10_000])
    c = diff.compare(a, b)
    assert c.not_comparable and any("barely overlap" in w for w in c.warnings)
    vf = diff.compare(_trace(["k1"], [10]), _trace(["k1"], [10], "AMD Instinct MI300X VF"))
    assert not vf.not_comparable                     # a VF is the same product


# --------------------------------------------------------------------------- CLI


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hipscope", "compare", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_cli_json(eager_vs_graph):
    proc = run_cli(str(EAGER), str(GRAPH), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["span_ns"]["ratio"] == pytest.approx(raw_span_ns(GRAPH) / raw_span_ns(EAGER),
                                                    rel=1e-6)
    assert set(out["gpu_busy_fraction"]) == {"a", "b"}
    assert [k["name"] for k in out["kernels"]] == eager_vs_graph.kernels.names
    for k in out["kernels"]:
        assert {"name", "a_total_ns", "b_total_ns", "delta_ns", "ratio"} <= set(k)
        assert k["delta_ns"] == k["b_total_ns"] - k["a_total_ns"]
    assert out["added"] == [] and out["removed"] == []
    assert {"headline", "provenance", "warnings"} <= set(out)


@pytest.mark.parametrize("a, b, pct, rc", [
    (EAGER, GRAPH, "0", 0),        # graph replay is 4x faster
    (GRAPH, EAGER, "10", 1),       # eager is 320 % slower
    (GRAPH, EAGER, "500", 0),      # ... but not 500 %
    (EAGER, EAGER, "0", 0),        # not slower than itself
])
def test_cli_fail_if_slower(a, b, pct, rc):
    proc = run_cli(str(a), str(b), "--fail-if-slower", pct)
    assert proc.returncode == rc, proc.stderr
    assert "Span" in proc.stdout and "Traceback" not in proc.stderr


def test_cli_align_on_a_marker():
    proc = run_cli(str(GRAPH), str(EAGER), "--align", "step 1", "--json",
                   "--fail-if-slower", "300")
    out = json.loads(proc.stdout)
    al = out["aligned"]
    assert al["label"] == "step 1 #1"
    # step 1 on the GPU alone (eager 16.4 ms vs graph 4.0 ms), from the raw JSON
    raw = [next(e["dur"] for e in json.loads(gzip.open(p).read())["traceEvents"]
                if e.get("cat") == "gpu_user_annotation" and e["name"] == "step 1")
           for p in (GRAPH, EAGER)]
    assert al["ratio"] == pytest.approx(raw[1] / raw[0], rel=1e-6)
    assert al["offset_ns"]["a"] == -al["a"]["start"]
    assert proc.returncode == 1                     # > 300 % slower on step 1
    proc = run_cli(str(GRAPH), str(EAGER), "--align", "step 1", "--fail-if-slower", "400")
    assert proc.returncode == 0 and "Marker range" in proc.stdout


@pytest.mark.parametrize("extra", [[], ["--align", "step 9"], ["--normalize", "RULES"]])
def test_cli_unreadable_input_exits_2(tmp_path, extra):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\x00\x01garbage\xff" * 50)
    rules = tmp_path / "rules.txt"
    rules.write_text("(unclosed\n")
    extra = [str(rules) if x == "RULES" else x for x in extra]
    b = bad if not extra else GRAPH
    proc = run_cli(str(EAGER), str(b), "--fail-if-slower", "0", *extra)
    assert proc.returncode == 2 and proc.stdout == ""
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert {(): str(bad), ("--align",): "step 9", ("--normalize",): "line 1"}[
        tuple(extra[:1])] in err
