"""Ops: the launching op of every kernel/copy and `hipscope report --ops`.

The expected figures come from an independent attribution written with plain json code
over the raw Kineto file, by the rule of issue 17: the launching op of a GPU event is
the innermost host op (cpu_op, python_function, user_annotation) on its launch call's
thread whose interval holds the call's start; the call is the runtime event with the
same args.correlation; events without such a call are unattributed. Ops of identical
intervals (whole-µs traces): the later one in the file is the inner one.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from hipscope.analysis.ops import (
    ATTRIBUTED,
    NO_CALL,
    NO_OP,
    attribute,
    build_forest,
    enclosing_parent,
    ops_report,
)
from hipscope.cli.main import main as cli
from hipscope.parsers import open_trace
from tests.conftest import DATA, SAMPLES

KINETO = sorted((SAMPLES / "kineto").glob("*/*.json*"))
GPU_DATA = sorted((DATA / "gpu").glob("*.json.gz")) + sorted((DATA / "ops").glob("*.json.gz"))
OP_CATS = ("cpu_op", "python_function", "user_annotation")
CALL_CATS = ("cuda_runtime", "cuda_driver")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def _ns(us: float) -> int:
    """µs as printed -> ns (whole µs exact, the fraction rounded to the ns)."""
    whole = math.floor(us)
    return int(whole) * 1000 + round((us - whole) * 1000)


def _events(path: Path) -> list[dict]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)["traceEvents"]


def independent_calls(path: Path) -> tuple[dict[str, int], dict[str, int]]:
    """(calls per op name, their summed CPU ns): an op inside an op of the same name
    on its thread (aten::sum in aten::sum) is part of that call, not another one."""
    groups = defaultdict(list)
    for i, e in enumerate(e for e in _events(path) if e.get("ph") == "X"):
        if e.get("cat") in OP_CATS:
            s = _ns(float(e["ts"]))
            groups[(e["pid"], e["tid"], e["name"])].append((s, -(s + _ns(float(e["dur"]))), i))
    count: dict[str, int] = defaultdict(int)
    cpu: dict[str, int] = defaultdict(int)
    for (_, _, name), ops in groups.items():
        outer_end = None
        for s, neg_end, _ in sorted(ops):
            if outer_end is not None and -neg_end <= outer_end:
                continue                              # inside the last outer call
            outer_end = -neg_end
            count[name] += 1
            cpu[name] += -neg_end - s
    return dict(count), dict(cpu)


def independent_ops(path: Path) -> tuple[dict[str, int], dict[str, int], int]:
    """(GPU ns per launching-op name, calls per name (independent_calls), unattributed
    GPU ns)."""
    evs = [e for e in _events(path) if e.get("ph") == "X"]
    ops = defaultdict(list)
    for i, e in enumerate(evs):
        if e.get("cat") in OP_CATS:
            s = _ns(float(e["ts"]))
            ops[(e["pid"], e["tid"])].append((s, s + _ns(float(e.get("dur", 0))), i, e["name"]))
    count, _ = independent_calls(path)
    calls = {e["args"]["correlation"]: e for e in evs
             if e.get("cat") in CALL_CATS and "correlation" in e.get("args", {})}
    gpu: dict[str, int] = defaultdict(int)
    lost = 0
    for e in evs:
        if e.get("cat") not in GPU_CATS:
            continue
        dur = _ns(float(e.get("dur", 0)))
        call = calls.get(e.get("args", {}).get("correlation"))
        t = _ns(float(call["ts"])) if call else None
        inside = [o for o in ops[(call["pid"], call["tid"])] if o[0] <= t < o[1]] if call else []
        if not inside:
            lost += dur
            continue
        # latest start, then shortest, then the later in the file (the profiler writes
        # an op before the ops it calls: aten::matmul, then aten::mm of the same µs)
        best = max(inside, key=lambda o: (o[0], -o[1], o[2]))
        gpu[best[3]] += dur
    return dict(gpu), dict(count), lost


@pytest.mark.parametrize("path", KINETO + GPU_DATA, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_report_ops_gpu_time_per_op_equals_independent_attribution(path, capsys):
    assert cli(["report", "--ops", "--json", "--no-cache", str(path)]) == 0
    rep = json.loads(capsys.readouterr().out)
    gpu, count, lost = independent_ops(path)
    _, cpu = independent_calls(path)
    assert {r["name"]: r["gpu_ns"] for r in rep["ops"]} == {n: v for n, v in gpu.items()}
    assert {r["name"]: r["count"] for r in rep["ops"]} == {n: count[n] for n in gpu}
    assert {r["name"]: r["cpu_ns"] for r in rep["ops"]} == {n: cpu[n] for n in gpu}
    assert rep["ops_unattributed_gpu_ns"] == lost
    for r in rep["ops"]:
        assert sum(r["classes"].values()) == r["gpu_ns"]
        assert r["kernels_per_call"] == pytest.approx(r["kernels"] / r["count"])


def test_an_op_inside_an_op_of_its_name_is_one_call(capsys):
    """event_sync: aten::sum (39 µs) encloses aten::sum (34 µs), which launches the
    reduction: one call of 39 µs CPU with one kernel, not two calls of 73 µs."""
    path = SAMPLES / "kineto" / "nvidia-a100-event-sync-hta" / "event_sync_trace.json.gz"
    sums = [e for e in _events(path) if e.get("name") == "aten::sum"]
    assert [e["dur"] for e in sums] == [39, 34] and sums[0]["ts"] < sums[1]["ts"]
    assert cli(["report", "--ops", "--json", "--no-cache", str(path)]) == 0
    row = next(r for r in json.loads(capsys.readouterr().out)["ops"]
               if r["name"] == "aten::sum")
    assert (row["count"], row["cpu_ns"], row["kernels"], row["kernels_per_call"]) == \
        (1, 39_000, 1, 1.0)


def test_graph_replayed_kernels_belong_to_the_graph_launch_op():
    """tests/data/gpu/graph.json.gz: 5 steps x 20 cudaGraphLaunch, each replaying
    48 kernels and 12 memsets; every one belongs to the step annotation around it."""
    trace = open_trace(GPU_DATA[[p.name for p in GPU_DATA].index("graph.json.gz")])
    att = attribute(trace)
    assert (att.kernel_status == ATTRIBUTED).all() and (att.copy_status == ATTRIBUTED).all()
    names = [att.forest.name_of(i) for i in np.concatenate([att.kernel_op, att.copy_op])]
    per_step = {n: names.count(n) for n in set(names)}
    assert per_step == {f"step {i}": 20 * (48 + 12) for i in range(5)}


def _graph_replayed(path: Path) -> int:
    """GPU events of the file whose launch call (by correlation) is a graph launch."""
    evs = [e for e in _events(path) if e.get("ph") == "X"]
    graph = {e["args"]["correlation"] for e in evs if e.get("cat") in CALL_CATS
             and "GraphLaunch" in e["name"] and "correlation" in e.get("args", {})}
    return sum(1 for e in evs if e.get("cat") in GPU_CATS
               and e.get("args", {}).get("correlation") in graph)


@pytest.mark.parametrize("name", ["graph.json.gz", "eager.json.gz", "cudagraphs.json.gz"])
def test_graph_replayed_work_is_marked_as_graph_launch(name, capsys):
    path = next(p for p in GPU_DATA if p.name == name and (p.parent.name == "ops") ==
                (name == "cudagraphs.json.gz"))
    assert cli(["report", "--ops", "--json", "--no-cache", str(path)]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert sum(r["graph_kernels"] for r in rep["ops"]) == _graph_replayed(path)
    assert cli(["report", "--ops", "--no-cache", str(path)]) == 0
    tagged = "[graph launch]" in capsys.readouterr().out
    assert tagged == (name != "eager.json.gz")
    if name == "graph.json.gz":     # 20 graph launches of 60 nodes in each step
        assert {r["name"]: r["graph_kernels"] for r in rep["ops"]} == {
            f"step {i}": 1200 for i in range(5)}


# --------------------------------------------------------------------------- synthetic


def _x(cat, name, ts, dur, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 7, "tid": tid, "ts": ts, "dur": dur,
            "args": args}


def _kernel(ts, corr, dur=2.0):
    return {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"correlation": corr, "device": 0, "stream": 7}}


@pytest.fixture()
def small(tmp_path) -> Path:
    events = [
        _x("user_annotation", "ProfilerStep#1", 0, 300),
        _x("python_function", "nn.Module: Net_0", 5, 100),
        _x("python_function", "nn.Module: Linear_0", 8, 40),
        _x("cpu_op", "aten::mm", 10, 20),
        _x("cuda_runtime", "cudaLaunchKernel", 12, 3, correlation=1),
        _x("cpu_op", "aten::relu", 30, 5),
        _x("cuda_runtime", "cudaLaunchKernel", 35, 3, correlation=2),   # at relu's end
        _x("cuda_runtime", "cudaLaunchKernel", 400, 3, correlation=3),  # outside all ops
        _x("cuda_runtime", "cudaLaunchKernel", 50, 3, tid=2, correlation=5),  # op-less thread
        _kernel(1000, 1), _kernel(1010, 2), _kernel(1020, 3), _kernel(1030, 4),
        _kernel(1040, 5),
    ]
    p = tmp_path / "small.pt.trace.json"
    p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return p


def test_launching_op_is_innermost_containing_op_and_unattributed_are_counted(small):
    trace = open_trace(small, use_cache=False)
    att = attribute(trace)
    f = att.forest
    order = np.argsort(trace.kernels.numpy("start"))
    ops = [f.name_of(i) if i >= 0 else None for i in att.kernel_op[order]]
    # a call starting exactly at an op's end is outside it (half-open intervals)
    assert ops == ["aten::mm", "nn.Module: Linear_0", None, None, None]
    assert att.kernel_status[order].tolist() == [ATTRIBUTED, ATTRIBUTED, NO_OP, NO_CALL, NO_OP]
    mm = int(att.kernel_op[order][0])
    assert f.module_path(mm) == "Net_0/Linear_0"
    assert f.name_of(int(f.root[mm])) == "ProfilerStep#1"
    assert f.name_of(int(f.visible_parent[mm])) == "nn.Module: Linear_0"
    rep = ops_report(trace)
    assert rep["ops_unattributed"] == {"no_launch_call": {"count": 1, "gpu_ns": 2000},
                                       "outside_ops": {"count": 2, "gpu_ns": 4000}}
    assert rep["ops_unattributed_gpu_ns"] == 6000 and rep["ops_attributed_gpu_ns"] == 4000


def test_report_ops_text_names_the_ops_and_the_unattributed(small, capsys):
    assert cli(["report", "--ops", "--no-cache", str(small)]) == 0
    out = capsys.readouterr().out
    assert "aten::mm" in out and "nn.Module: Linear_0" in out
    assert "1 without a recorded launch call, 2 launched outside every op" in out


def test_trace_without_ops_reports_every_kernel_unattributed():
    """amd-mi210-gpu-only: kernels and runtime calls, no cpu_op at all."""
    path = next(p for p in KINETO if p.parent.name == "amd-mi210-gpu-only-tracelens")
    trace = open_trace(path)
    rep = ops_report(trace)
    assert rep["ops"] == [] and rep["ops_count"] == 0
    raw = sum(_ns(float(e["dur"])) for e in _events(path)
              if e.get("ph") == "X" and e.get("cat") in GPU_CATS)
    assert rep["ops_unattributed_gpu_ns"] == raw
    assert len(build_forest(trace)) == 0


def test_enclosing_parent_of_nested_and_crossing_ranges():
    # sorted by (thread, start, -end): [0,10) holds [1,5) holds [2,3); [4,12) crosses
    # [0,10)'s end: its enclosing op is none; thread 1 starts afresh
    thread = np.array([0, 0, 0, 0, 1])
    end = np.array([10, 5, 3, 12, 4])
    assert enclosing_parent(thread, end).tolist() == [-1, 0, 1, -1, -1]
    assert NO_CALL != NO_OP


def test_the_analysis_service_computes_the_attribution_once_per_trace(small):
    """report --ops and compare read the trace's one TraceAnalyses result."""
    from hipscope.analysis.context import analyses_of

    trace = open_trace(small, use_cache=False)
    svc = analyses_of(trace)
    first = svc.ops()
    assert svc.ops() is first and svc.computed["ops"] == 1
    assert ops_report(trace, first) == ops_report(trace)
