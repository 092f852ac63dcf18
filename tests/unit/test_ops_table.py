"""The op table (``hipscope.analysis.ops.ops_table``, ``report --ops table --json``)
against the ops of the raw Kineto JSON: every row's name, thread, duration, parent,
depth, input shapes, External id, sequence number and module path, and the
forward/backward links against Kineto's own ``fwdbwd`` flows."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from hipscope.analysis.ops import OP_TABLE_COLUMNS, ops_table
from hipscope.cli.main import main as cli
from hipscope.parsers import open_trace
from tests.conftest import SAMPLES
from tests.unit.test_ops import OP_CATS, _events, _ns

KINETO = SAMPLES / "kineto"
MI250 = next((KINETO / "amd-mi250-rocm6.2-hta").glob("*.json.gz"))      # with fwdbwd flows
BERT = next((KINETO / "amd-mi300x-bert-tracelens").glob("*.json.gz"))   # with nn.Module frames
H200 = next((KINETO / "nvidia-h200-generated").glob("*.json.gz"))


def _compact(v) -> str | None:
    return None if v is None else json.dumps(v, separators=(",", ":"))


def raw_ops(path: Path) -> list[dict]:
    """The host ops of the file in plain Python, each with its parent (index into the
    list), depth and module path by interval containment per (pid, tid)."""
    evs = [e for e in _events(path) if e.get("ph") == "X" and e.get("cat") in OP_CATS]
    ops = []
    for i, e in enumerate(evs):
        s = _ns(float(e["ts"]))
        a = e.get("args", {})
        ops.append({"i": i, "name": e["name"], "pid": e["pid"], "tid": e["tid"], "ts": s,
                    "end": s + _ns(float(e.get("dur", 0))), "input_dims": a.get("Input Dims"),
                    "external_id": a.get("External id"), "seq": a.get("Sequence number"),
                    "raw_ts": e["ts"]})
    by_thread = defaultdict(list)
    for o in ops:
        by_thread[(o["pid"], o["tid"])].append(o)
    for group in by_thread.values():
        group.sort(key=lambda o: (o["ts"], -o["end"], o["i"]))
        stack: list[dict] = []
        for o in group:
            while stack and stack[-1]["end"] < o["end"]:
                stack.pop()
            o["parent"] = stack[-1] if stack else None
            o["depth"] = len(stack)
            up = o
            mods = []
            while up is not None:
                if up["name"].startswith("nn.Module: "):
                    mods.append(up["name"][len("nn.Module: "):])
                up = up["parent"]
            o["module"] = "/".join(reversed(mods)) or None
            stack.append(o)
    return [o for g in sorted(by_thread, key=str) for o in by_thread[g]]


def _match(path: Path) -> tuple[list[dict], dict[int, dict], list[dict]]:
    """Table rows, raw op per row id (same thread, same order), the raw ops."""
    rows = ops_table(open_trace(path)).to_pylist()
    raw = raw_ops(path)
    mine = defaultdict(list)
    for r in rows:
        mine[(r["pid"], r["tid"])].append(r)
    theirs = defaultdict(list)
    for o in raw:
        theirs[(o["pid"], o["tid"])].append(o)
    assert {k: len(v) for k, v in mine.items()} == {k: len(v) for k, v in theirs.items()}
    return rows, {r["id"]: o for k in mine for r, o in zip(mine[k], theirs[k])}, raw


@pytest.mark.parametrize("path", [MI250, BERT, H200], ids=lambda p: p.parent.name)
def test_every_op_row_agrees_with_the_raw_json(path):
    rows, raw_of, raw = _match(path)
    assert len(rows) == len(raw) and list(rows[0]) == list(OP_TABLE_COLUMNS)
    offsets = set()
    for r in rows:
        o = raw_of[r["id"]]
        assert (r["name"], r["end"] - r["start"], r["depth"]) == (o["name"], o["end"] - o["ts"],
                                                                  o["depth"])
        offsets.add(r["start"] - o["ts"])
        assert (raw_of[r["parent"]] if r["parent"] is not None else None) is o["parent"]
        assert r["input_dims"] == _compact(o["input_dims"])
        assert (r["external_id"], r["sequence_number"]) == (o["external_id"], o["seq"])
        assert r["module"] == o["module"]
    assert len(offsets) == 1          # one clock shift for all (the trace's base time)


def test_backward_ops_link_to_the_forward_op_kineto_drew_the_flow_from():
    rows, raw_of, _ = _match(MI250)
    flows: dict[int, dict] = defaultdict(dict)
    for e in _events(MI250):
        if e.get("cat") == "fwdbwd":
            flows[e["id"]][e["ph"]] = (e["tid"], e["ts"])
    assert len(flows) == 4 and all(set(f) == {"s", "f"} for f in flows.values())
    at = {(raw_of[r["id"]]["tid"], raw_of[r["id"]]["raw_ts"]): r for r in rows}
    for f in flows.values():
        fwd, bwd = at[f["s"]], at[f["f"]]
        assert bwd["fwd_op"] == fwd["id"] and bwd["sequence_number"] == fwd["sequence_number"]
    # the autograd wrapper around each backward op links to the same forward op
    for r in rows:
        if r["name"].startswith("autograd::engine::evaluate_function: ") and \
                r["sequence_number"] is not None:
            inner = next(c for c in rows if c["parent"] == r["id"])
            assert r["fwd_op"] == inner["fwd_op"] is not None
    linked = [r for r in rows if r["fwd_op"] is not None]
    assert len(linked) == 8 and all(r["tid"] != rows[r["fwd_op"]]["tid"] for r in linked)


def test_report_ops_table_prints_the_rows_only_when_asked(capsys):
    assert cli(["report", "--ops", "--json", "--no-cache", str(H200)]) == 0
    assert "op_table" not in json.loads(capsys.readouterr().out)
    assert cli(["report", "--ops", "table", "--json", "--no-cache", str(H200)]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["op_table"] == ops_table(open_trace(H200)).to_pylist()
    assert len(rep["op_table"]) == len(raw_ops(H200)) == rep["op_table_rows"]
    # GPU time per row sums to the per-name report
    per_name: dict[str, int] = defaultdict(int)
    for r in rep["op_table"]:
        per_name[r["name"]] += r["gpu_ns"]
    assert {r["name"]: r["gpu_ns"] for r in rep["ops"]} == {
        n: v for n, v in per_name.items() if v}


def test_rank_column_of_a_multi_rank_folder(capsys):
    folder = KINETO / "multirank-sampled-hta"
    t = ops_table(open_trace(folder))
    got = defaultdict(set)
    for pid, rank in zip(t.column("pid").to_pylist(), t.column("rank").to_pylist()):
        got[rank].add(pid)
    want = {}
    for f in sorted(folder.glob("*.json.gz")):
        doc = json.loads(__import__("gzip").open(f).read())
        want[doc["distributedInfo"]["rank"]] = {
            e["pid"] for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") in OP_CATS}
    assert dict(got) == want
