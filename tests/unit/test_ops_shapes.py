"""Ops by input shapes (markers' ``input_dims``): `report --ops shapes` rows and
matching by name + shapes. Traces are built here from their tables, figures by hand."""

from __future__ import annotations

from hipscope.analysis.diff.by_op import compare_ops
from hipscope.analysis.ops import ops_report
from hipscope.cli.report_ops import normalize_argv
from hipscope.model import Trace, build_table


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
