"""Ops by input shapes (markers' ``input_dims``): `report --ops shapes` rows and
matching by name + shapes. Built traces with figures by hand, then the Kineto reader
(args 'Input Dims') against plain json code over the raw files."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from hipscope.analysis.diff.by_op import compare_ops
from hipscope.analysis.ops import ops_report
from hipscope.cli.main import main as cli
from hipscope.cli.report_ops import normalize_argv
from hipscope.model import Trace, build_table
from hipscope.parsers import open_trace
from tests.conftest import DATA, SAMPLES
from tests.unit.test_ops import CALL_CATS, GPU_CATS, OP_CATS, _events, _ns

BERT = "gaunernst_bert-small-uncased__1016001.json.gz"
AMD_BERT = SAMPLES / "kineto" / "amd-mi300x-bert-tracelens" / BERT
NV_BERT = SAMPLES / "kineto" / "nvidia-h100-bert-tracelens" / BERT
OPS = DATA / "ops"


def _trace(ops: list[tuple[str, str | None, int]]) -> Trace:
    """One thread; op i runs [100 i, 100 i + 50) with input shapes ``dims`` and launches
    one kernel of ``ns`` ns (call at 100 i + 10)."""
    n = len(ops)
    markers = build_table("markers", {
        "name": [o[0] for o in ops], "domain": ["cpu_op"] * n,
        "start": [100 * i for i in range(n)], "end": [100 * i + 50 for i in range(n)],
        "depth": [0] * n, "pid": [1] * n, "tid": [1] * n,
        "input_dims": [o[1] for o in ops]}, n=n)
    api = build_table("api", {
        "name": ["cudaLaunchKernel"] * n, "domain": ["cuda_runtime"] * n,
        "start": [100 * i + 10 for i in range(n)], "end": [100 * i + 15 for i in range(n)],
        "pid": [1] * n, "tid": [1] * n, "correlation_id": list(range(n))}, n=n)
    kernels = build_table("kernels", {
        "name": ["Cijk_x"] * n, "device": [0] * n,
        "start": [10_000 + 1000 * i for i in range(n)],
        "end": [10_000 + 1000 * i + o[2] for i, o in enumerate(ops)],
        "correlation_id": list(range(n)), "api_index": list(range(n))}, n=n)
    return Trace(kernels=kernels, api=api, markers=markers, meta={"format": "test"})


A = _trace([("aten::mm", "[[8,16],[16,4]]", 100), ("aten::mm", "[[2,16],[16,4]]", 30),
            ("aten::mm", "[[8,16],[16,4]]", 120)])
B = _trace([("aten::mm", "[[2,16],[16,4]]", 20), ("aten::mm", "[[8,16],[16,4]]", 90),
            ("aten::mm", "[[8,16],[16,4]]", 80)])


def test_report_by_shapes_splits_an_op_by_its_input_shapes():
    rows = ops_report(A, by_shapes=True)["ops"]
    assert [(r["name"], r["shapes"], r["count"], r["gpu_ns"]) for r in rows] == [
        ("aten::mm", "[[8,16],[16,4]]", 2, 220), ("aten::mm", "[[2,16],[16,4]]", 1, 30)]
    assert [(r["name"], r["count"], r["gpu_ns"]) for r in ops_report(A)["ops"]] == [
        ("aten::mm", 3, 250)]


def test_ops_match_by_name_and_shapes_whatever_their_order():
    ops = compare_ops(A, B)
    assert ops["shapes"] is True and ops["level"] == "op"
    assert ops["coverage"] == {"a": 1.0, "b": 1.0} and ops["matched_ops"] == 3
    # the first [8,16] mm of A against the first [8,16] mm of B (B's 2nd op)
    rows = sorted((r["shapes"], r["a_gpu_ns"], r["b_gpu_ns"]) for r in ops["rows"])
    assert rows == [("[[2,16],[16,4]]", 30, 20), ("[[8,16],[16,4]]", 220, 170)]
    by = ops["by_name"][0]
    assert (by["a_gpu_ns"], by["b_gpu_ns"], by["delta_ns"]) == (250, 190, -60)


def test_ops_argument_takes_shapes_only_as_its_mode():
    assert normalize_argv(["--ops", "t.json"]) == ["--ops=names", "t.json"]
    assert normalize_argv(["--ops", "shapes", "t.json"]) == ["--ops=shapes", "t.json"]
    assert normalize_argv(["t.json", "--ops"]) == ["t.json", "--ops=names"]


# --------------------------------------------------------------------------- read from Kineto


def _independent_by_shapes(path) -> dict[tuple[str, str], int]:
    """GPU ns per (launching op, compact 'Input Dims') by the rule of test_ops.py."""
    evs = [e for e in _events(path) if e.get("ph") == "X"]
    ops = defaultdict(list)
    for i, e in enumerate(evs):
        if e.get("cat") in OP_CATS:
            s = _ns(float(e["ts"]))
            dims = e.get("args", {}).get("Input Dims")
            text = "" if dims is None else json.dumps(dims, separators=(",", ":"))
            ops[(e["pid"], e["tid"])].append((s, s + _ns(float(e.get("dur", 0))), i,
                                              e["name"], text))
    calls = {e["args"]["correlation"]: e for e in evs
             if e.get("cat") in CALL_CATS and "correlation" in e.get("args", {})}
    out: dict[tuple[str, str], int] = defaultdict(int)
    for e in evs:
        call = calls.get(e.get("args", {}).get("correlation")) if e.get("cat") in GPU_CATS \
            else None
        if call is None:
            continue
        t = _ns(float(call["ts"]))
        inside = [o for o in ops[(call["pid"], call["tid"])] if o[0] <= t < o[1]]
        if inside:
            best = max(inside, key=lambda o: (o[0], -o[1], o[2]))
            out[(best[3], best[4])] += _ns(float(e.get("dur", 0)))
    return dict(out)


@pytest.mark.parametrize("path", [NV_BERT, AMD_BERT, OPS / "eager.json.gz"],
                         ids=lambda p: p.parent.name)
def test_report_ops_shapes_reads_input_dims_from_kineto(path, capsys):
    assert cli(["report", "--ops", "shapes", "--json", "--no-cache", str(path)]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["ops_shapes"] is True
    got = {(r["name"], r["shapes"]): r["gpu_ns"] for r in rep["ops"]}
    assert got == _independent_by_shapes(path)


def test_bert_ops_match_by_shapes_across_vendors():
    ops = compare_ops(open_trace(AMD_BERT), open_trace(NV_BERT))
    assert ops["shapes"] is True and ops["level"] == "op"
    assert ops["coverage"]["a"] >= 0.9 and ops["coverage"]["b"] >= 0.9
    lm_head = [r for r in ops["rows"] if r["shapes"] == "[[30522],[141,512],[512,30522],[],[]]"]
    assert [r["name"] for r in lm_head] == ["aten::addmm"]
