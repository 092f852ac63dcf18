"""`hipscope compare --by op`: runs matched through their op trees.

The MI300X and H100 BERT traces (one model, two vendors: hipBLASLt against cuBLAS,
Triton attn_fwd against FlashAttention) compare by op; the H200 eager and CUDA-graph
MLP traces compare at the step annotations. Expected GPU times per op come from the
independent json attribution of test_ops.py.
"""

from __future__ import annotations

import gzip
import json

import pytest

from hipscope.analysis.diff.by_op import compare_ops
from hipscope.cli.main import main as cli
from hipscope.parsers import open_trace
from tests.conftest import DATA, SAMPLES
from tests.unit.test_ops import independent_ops

BERT = "gaunernst_bert-small-uncased__1016001.json.gz"
AMD_BERT = SAMPLES / "kineto" / "amd-mi300x-bert-tracelens" / BERT
NV_BERT = SAMPLES / "kineto" / "nvidia-h100-bert-tracelens" / BERT
EAGER, GRAPH = DATA / "gpu" / "eager.json.gz", DATA / "gpu" / "graph.json.gz"
# one small model on the H200: eager, torch.compile, torch.compile + CUDA graphs
OPS = DATA / "ops"


def _compare(capsys, *args: str) -> dict:
    assert cli(["compare", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def bert_by_op() -> dict:
    return compare_ops(open_trace(AMD_BERT), open_trace(NV_BERT))


def test_amd_and_nvidia_bert_compare_by_op_with_90_percent_matched(capsys):
    obj = _compare(capsys, "--by", "op", str(AMD_BERT), str(NV_BERT))
    ops = obj["ops"]
    assert ops["level"] == "op" and not ops["not_comparable"]
    assert ops["coverage"]["a"] >= 0.9 and ops["coverage"]["b"] >= 0.9
    # a different GPU is a fact, not a refusal
    assert obj["not_comparable"] is False
    assert any(w.startswith("the GPUs differ") for w in obj["warnings"])
    assert not any(w.startswith("not comparable") for w in obj["warnings"])
    # by kernel name they share almost nothing: the old verdict, now a fact
    assert any(w.startswith("by kernel name: the kernel sets barely overlap")
               for w in obj["warnings"])


def test_gpu_time_per_op_name_equals_the_independent_attribution_of_each_run(bert_by_op):
    a, _, _ = independent_ops(AMD_BERT)
    b, _, _ = independent_ops(NV_BERT)
    got = {r["name"]: (r["a_gpu_ns"], r["b_gpu_ns"]) for r in bert_by_op["by_name"]}
    assert got == {n: (a.get(n, 0), b.get(n, 0)) for n in set(a) | set(b)}
    addmm = next(r for r in bert_by_op["by_name"] if r["name"] == "aten::addmm")
    assert addmm["delta_ns"] == b["aten::addmm"] - a["aten::addmm"]
    assert addmm["ratio"] == pytest.approx(b["aten::addmm"] / a["aten::addmm"])


def test_matched_rows_carry_the_module_path_and_classes_sum_to_gpu_time(bert_by_op):
    rows = {(r["path"], r["name"]): r for r in bert_by_op["rows"]}
    att = rows[("BertLMHeadModel_0/BertModel_0/BertEncoder_0/BertLayer_0/BertAttention_0/"
                "BertSdpaSelfAttention_0", "aten::_flash_attention_forward")]
    assert att["a_count"] == att["b_count"] == 1
    classes = {c["class"]: c for c in bert_by_op["classes"]}
    raw_a = sum(e["dur"] for e in json.loads(gzip.open(AMD_BERT).read())["traceEvents"]
                if e.get("cat") == "kernel" and e["name"] == "attn_fwd")
    assert classes["attention"]["a_gpu_ns"] == pytest.approx(raw_a * 1000, abs=4)
    assert sum(c["a_gpu_ns"] for c in classes.values()) == sum(
        r["a_gpu_ns"] for r in bert_by_op["by_name"])


def test_eager_against_cuda_graph_compares_at_the_step_annotations(capsys):
    """The graph run has no aten ops around its kernels (one cudaGraphLaunch per
    forward): the op level cannot cover the eager run, the annotations can."""
    ops = _compare(capsys, str(EAGER), str(GRAPH))["ops"]          # --by auto
    assert ops["level"] == "module"
    assert ops["levels"]["op"]["a"] < 0.5
    assert ops["coverage"] == {"a": 1.0, "b": 1.0}
    assert sorted(r["name"] for r in ops["by_name"]) == [f"step {i}" for i in range(5)]


def test_by_kernel_keeps_the_name_matching_verdict(capsys):
    obj = _compare(capsys, "--by", "kernel", str(AMD_BERT), str(NV_BERT))
    assert "ops" not in obj and obj["not_comparable"] is True


def _trace_file(path, op_name: str, step: str | None = None) -> str:
    events = [
        {"ph": "X", "cat": "cpu_op", "name": op_name, "pid": 1, "tid": 1, "ts": 0, "dur": 50},
    ] + ([{"ph": "X", "cat": "user_annotation", "name": step, "pid": 1, "tid": 1, "ts": 0,
           "dur": 60}] if step else []) + [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 10, "dur": 5, "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 100, "dur": 4,
         "args": {"correlation": 1, "device": 0, "stream": 7}},
    ]
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return str(path)


def test_runs_without_a_common_op_are_not_comparable(tmp_path, capsys):
    a = _trace_file(tmp_path / "a.pt.trace.json", "aten::mm")
    b = _trace_file(tmp_path / "b.pt.trace.json", "aten::bmm")
    obj = _compare(capsys, "--no-cache", a, b)
    assert obj["ops"]["level"] is None and obj["not_comparable"] is True
    assert obj["warnings"][0].startswith("not comparable: no op, module or step")
    assert cli(["compare", "--no-cache", a, b]) == 0
    assert "By op: no op, module or step of A matches one of B" in capsys.readouterr().out


def test_profiler_steps_match_whatever_their_number(tmp_path, capsys):
    """A recorded ProfilerStep#3, B ProfilerStep#10: the steps match first, then the
    op inside them; a different op under the matched step matches at step level."""
    a = _trace_file(tmp_path / "a.pt.trace.json", "aten::mm", "ProfilerStep#3")
    b = _trace_file(tmp_path / "b.pt.trace.json", "aten::mm", "ProfilerStep#10")
    c = _trace_file(tmp_path / "c.pt.trace.json", "aten::bmm", "ProfilerStep#10")
    ops = _compare(capsys, "--no-cache", a, b)["ops"]
    assert ops["level"] == "op" and ops["matched_ops"] == 2
    ops = _compare(capsys, "--no-cache", a, c)["ops"]
    assert ops["level"] == "module" and ops["levels"]["op"] == {"a": 0.0, "b": 0.0}
    assert ops["levels"]["step"] == {"a": 1.0, "b": 1.0}
    assert [r["name"] for r in ops["by_name"]] == ["ProfilerStep#"]


def test_text_names_the_level_and_the_different_gpus_above_the_figures(capsys):
    assert cli(["compare", str(AMD_BERT), str(NV_BERT)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == ("Compared by op: matched ops hold 100% of A's and 100% of B's "
                        "attributed GPU time; different GPUs (A: AMD Instinct MI300X VF, "
                        "B: NVIDIA H100 80GB HBM3)")
    assert "aten::_flash_attention_forward" in "\n".join(lines)
    assert not any(line.startswith("Warning: not comparable") for line in lines)


def test_eager_against_torch_compile_matches_the_extern_gemms_by_op(capsys):
    """Inductor keeps the GEMMs as aten::addmm (without eager's aten::linear around
    them) and fuses the rest into Triton kernels: the addmm calls match by op, their
    share of each run's GPU time is the coverage; the fused kernels stand apart."""
    ops = _compare(capsys, str(OPS / "eager.json.gz"), str(OPS / "compiled.json.gz"))["ops"]
    a, _, _ = independent_ops(OPS / "eager.json.gz")
    b, _, _ = independent_ops(OPS / "compiled.json.gz")
    assert ops["level"] == "op"
    assert ops["coverage"]["a"] == pytest.approx(a["aten::addmm"] / sum(a.values()))
    assert ops["coverage"]["b"] == pytest.approx(b["aten::addmm"] / sum(b.values()))
    by = {r["name"]: r for r in ops["by_name"]}
    assert (by["aten::addmm"]["a_gpu_ns"], by["aten::addmm"]["b_gpu_ns"]) == (
        a["aten::addmm"], b["aten::addmm"])
    assert by["aten::gelu"]["b_count"] == 0 and by["triton_poi_fused_gelu_view_1"]["a_count"] == 0


def test_eager_against_cuda_graphs_compares_at_the_steps(capsys):
    """Under reduce-overhead every kernel is replayed from one graph per step: only the
    ProfilerSteps match, and they hold all of both runs' GPU time."""
    ops = _compare(capsys, str(OPS / "eager.json.gz"), str(OPS / "cudagraphs.json.gz"))["ops"]
    a, _, _ = independent_ops(OPS / "eager.json.gz")
    b, _, _ = independent_ops(OPS / "cudagraphs.json.gz")
    assert ops["level"] == "step" and ops["coverage"] == {"a": 1.0, "b": 1.0}
    assert [(r["name"], r["a_count"], r["a_gpu_ns"], r["b_gpu_ns"]) for r in ops["by_name"]] == [
        ("ProfilerStep#", 2, sum(a.values()), sum(b.values()))]
