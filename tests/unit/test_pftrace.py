"""pftrace reader (rocprofv3 Perfetto traces) and the Perfetto exporter."""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb2

from hipscope.export import write_pftrace
from hipscope.model import Trace, build_table
from hipscope.parsers import TraceFormatError
from hipscope.parsers._validate import validate
from hipscope.parsers.pftrace import PftraceReader
from tests.conftest import DATA, SAMPLES, ids, sample_dirs

from .pftrace_synth import MAIN_TID, PID, make_rocprof_like

FIXTURE = DATA / "pftrace" / "4242_results.pftrace"
EXPECTED = DATA / "fixtures" / "expected.json"
KINETO = SAMPLES / "kineto" / "nvidia-h200-generated" / "h200_torch_kineto_trace.json.gz"

R = PftraceReader()


def read(path: Path) -> Trace:
    return R.read(Path(path), lambda f: None, lambda: False)


# --------------------------------------------------------------------------- fixture
needs_fixture = pytest.mark.skipif(not FIXTURE.exists() or not EXPECTED.exists(),
                                   reason="pftrace fixture not generated")


@pytest.fixture(scope="module")
def fx():
    exp = json.loads(EXPECTED.read_text())["processes"]["4242"]
    return read(FIXTURE), exp


def _count_by_name(exp: dict) -> Counter:
    """{demangled name: count} from expected.json (two layouts seen while it evolved)."""
    if "kernels_by_name" in exp:
        return Counter({k["name"]: k["count"] for k in exp["kernels_by_name"]})
    return Counter(exp["kernel_count_by_name"])


@needs_fixture
def test_fixture_sniff():
    assert R.sniff(FIXTURE) >= 0.9


@needs_fixture
def test_fixture_kernels(fx):
    tr, exp = fx
    assert len(tr.kernels) == exp["kernel_count"]
    assert Counter(tr.kernels.strings("name")) == _count_by_name(exp)
    assert tr.meta["clock"] == "CLOCK_BOOTTIME"
    assert tr.meta["tool"] == "rocprofv3"
    # devices: the two GPU agents (Agent-1, Agent-2), kernels per agent
    raw = dict(zip(tr.devices.numpy("index").tolist(), tr.devices.strings("raw_id")))
    per_agent = Counter(raw[d] for d in tr.kernels.numpy("device").tolist())
    assert per_agent == {f"Agent-{k}": v for k, v in exp["kernels_by_agent_node_id"].items()}
    assert Counter(tr.kernels.numpy("stream").tolist()) == \
        {int(k): v for k, v in exp["kernels_by_stream_id"].items()}
    # queue annotation = handle - 1 [generatePerfetto.cpp]
    assert Counter((tr.kernels.numpy("queue") + 1).tolist()) == \
        {int(k): v for k, v in exp["kernels_by_queue_id"].items()}
    validate(tr)


@needs_fixture
def test_fixture_midpoint_rewrite(fx):
    """rocprofv3 rewrites overlapping kernels on one queue to meet at the midpoint and
    writes the rewritten values in begin_ns/end_ns too: the file has no originals."""
    tr, exp = fx
    pf = exp["pftrace"]
    rewritten = {(k["name"], k["pftrace_start"], k["pftrace_end"]) for k in
                 pf["rewritten_kernels"]}
    assert rewritten
    got = set(zip(tr.kernels.strings("name"), tr.kernels.numpy("start").tolist(),
                  tr.kernels.numpy("end").tolist()))
    assert rewritten <= got
    # every other kernel keeps the model's times
    rewritten_ids = {k["dispatch_id"] for k in pf["rewritten_kernels"]}
    for k in exp["named_kernels"].values():
        if k["dispatch_id"] in rewritten_ids:
            continue
        assert (k["name"], k["start"], k["end"]) in got
    assert "midpoint" in tr.meta["provenance"]["kernels.start/end"]
    validate(tr)


@needs_fixture
def test_fixture_api_links(fx):
    tr, exp = fx
    assert len(tr.api) == exp["api_call_count"]
    assert Counter(tr.api.strings("domain")) == {"HIP_RUNTIME_API": 55,
                                                 "HIP_COMPILER_API": 3}
    ai = tr.kernels.numpy("api_index", fill=-1)
    assert (ai >= 0).all()
    names = tr.api.strings("name")
    acorr = tr.api.numpy("correlation_id", fill=-1)
    got = Counter((int(c), names[a], int(acorr[a]))
                  for c, a in zip(tr.kernels.numpy("correlation_id").tolist(), ai.tolist()))
    want = Counter((c, fn, c) for _d, c, fn in exp["kernel_api_pairs"])
    assert got == want
    assert tr.meta["api_links"]["kernels_by_flow"] == exp["kernel_count"]
    # graph launch: three kernels on the one hipGraphLaunch row
    g = exp["graph_launch"]
    rows = {names[a] for c, a in zip(tr.kernels.numpy("correlation_id").tolist(), ai.tolist())
            if c == g["corr_id"]}
    assert rows == {"hipGraphLaunch"}
    validate(tr)


@needs_fixture
def test_fixture_copies_markers_counters(fx):
    tr, exp = fx
    mc = exp["memory_copies"]
    assert len(tr.copies) == mc["count"]
    assert int(tr.copies.numpy("bytes").sum()) == mc["total_bytes"]
    dirs = {"MEMORY_COPY_HOST_TO_DEVICE": "HtoD", "MEMORY_COPY_DEVICE_TO_HOST": "DtoH",
            "MEMORY_COPY_DEVICE_TO_DEVICE": "DtoD"}
    assert sorted(zip(tr.copies.strings("direction"), tr.copies.numpy("start").tolist())) == \
        sorted((dirs[r["direction"]], r["start"]) for r in mc["rows"])
    assert (tr.copies.numpy("api_index", fill=-1) >= 0).all()
    mk = exp["markers"]
    assert sorted(zip(tr.markers.strings("name"), tr.markers.numpy("start").tolist(),
                      tr.markers.numpy("end").tolist(), tr.markers.numpy("depth").tolist())) \
        == sorted((r["message"], r["start"], r["end"], r["depth"]) for r in mk["rows"])
    assert len(tr.counters) == exp["counters"]["row_count"]
    assert set(tr.counters.strings("counter")) == set(exp["counters"]["collected"])
    validate(tr)


# --------------------------------------------------------------------------- real samples
REAL_DIRS = sample_dirs("rocprofv3-pftrace")


def _ann_value(a):
    for f in ("uint_value", "int_value", "string_value", "double_value", "bool_value"):
        if a.HasField(f):
            return getattr(a, f)
    return None


def _plain_slices(path: Path) -> list[dict]:
    """Every slice of a .pftrace by plain protobuf decoding (perfetto's own protos):
    interned names per sequence, BEGIN/END paired per track, INSTANT as zero length."""
    t = pb2.Trace()
    t.ParseFromString(path.read_bytes())
    interned: dict = {}
    open_: dict = {}
    out = []
    for pk in t.packet:
        seq = pk.trusted_packet_sequence_id
        if pk.sequence_flags & 1 or seq not in interned:        # incremental state cleared
            interned[seq] = ({}, {}, {})
        cats, names, anns = interned[seq]
        for x in pk.interned_data.event_categories:
            cats[x.iid] = x.name
        for x in pk.interned_data.event_names:
            names[x.iid] = x.name
        for x in pk.interned_data.debug_annotation_names:
            anns[x.iid] = x.name
        if not pk.HasField("track_event"):
            continue
        e = pk.track_event
        if e.type in (1, 3):                                     # SLICE_BEGIN, INSTANT
            rec = {"cat": [cats[i] for i in e.category_iids] or list(e.categories),
                   "name": names[e.name_iid] if e.name_iid else e.name,
                   "start": pk.timestamp, "end": pk.timestamp,
                   "ann": {(anns[a.name_iid] if a.name_iid else a.name): _ann_value(a)
                           for a in e.debug_annotations}}
            if e.type == 1:
                open_.setdefault(e.track_uuid, []).append(rec)
            else:
                out.append(rec)
        elif e.type == 2 and open_.get(e.track_uuid):             # SLICE_END
            rec = open_[e.track_uuid].pop()
            rec["end"] = pk.timestamp
            out.append(rec)
    return out


@pytest.fixture(scope="module", params=REAL_DIRS, ids=ids(REAL_DIRS))
def real(request):
    (path,) = sorted(request.param.glob("*.pftrace"))
    return read(path), _plain_slices(path)


def test_real_sample_kernels(real):
    tr, slices = real
    ks = [s for s in slices if s["cat"][:1] == ["kernel_dispatch"]]
    assert ks and len(tr.kernels) == len(ks)
    assert Counter(tr.kernels.strings("name")) == Counter(s["name"] for s in ks)
    want = sorted((s["ann"].get("begin_ns", s["start"]), s["ann"].get("end_ns", s["end"]))
                  for s in ks)
    assert sorted(zip(tr.kernels.numpy("start").tolist(),
                      tr.kernels.numpy("end").tolist())) == want
    raw = dict(zip(tr.devices.numpy("index").tolist(), tr.devices.strings("raw_id")))
    assert Counter(raw[d] for d in tr.kernels.numpy("device").tolist()) == \
        Counter(s["ann"]["agent"] for s in ks)
    assert tr.meta["clock"] == "CLOCK_BOOTTIME" and not tr.warnings
    validate(tr)


def test_real_sample_api_and_links(real):
    tr, slices = real
    api = [s for s in slices if s["cat"][:1] and s["cat"][0].endswith("_api")
           and s["cat"][0] != "marker_api"]
    assert len(tr.api) == len(api)
    assert Counter(tr.api.strings("name")) == Counter(s["name"] for s in api)
    assert sum((tr.api.numpy("end") - tr.api.numpy("start")).tolist()) == \
        sum(s["end"] - s["start"] for s in api)
    # each kernel links to the HIP call with its correlation id (a launch, or the
    # copy call that ran a blit kernel)
    hip = [s for s in api if s["cat"][0] == "hip_api"]
    by_corr = {s["ann"].get("corr_id"): s["name"] for s in hip}
    assert len(by_corr) == len(hip)
    ai = tr.kernels.numpy("api_index", fill=-1)
    names = tr.api.strings("name")
    got = Counter((int(c), names[a] if a >= 0 else None) for c, a in
                  zip(tr.kernels.numpy("correlation_id").tolist(), ai.tolist()))
    ks = [s for s in slices if s["cat"][:1] == ["kernel_dispatch"]]
    assert got == Counter((s["ann"]["corr_id"], by_corr.get(s["ann"]["corr_id"])) for s in ks)
    validate(tr)


# --------------------------------------------------------------------------- synthetic
def test_sdk_like_trace(tmp_path):
    p = tmp_path / f"{PID}_results.pftrace"
    truth = make_rocprof_like(p, 12)
    assert R.sniff(p) >= 0.9
    tr = read(p)
    assert len(tr.kernels) == 12
    assert len(tr.api) == truth["n_api"]
    got = list(zip(tr.kernels.strings("name"), tr.kernels.numpy("start").tolist(),
                   tr.kernels.numpy("end").tolist(), tr.kernels.numpy("tid").tolist()))
    assert got == [(k["name"], k["start"], k["end"], k["tid"]) for k in truth["kernels"]]
    # launches via flows; API rows on the second thread come from its THREAD track
    ai = tr.kernels.numpy("api_index")
    assert tr.api.numpy("correlation_id")[ai].tolist() == [k["corr"] for k in truth["kernels"]]
    assert set(tr.api.numpy("tid")[ai].tolist()) == {MAIN_TID, 4250}
    # API calls on the main thread used the incremental clock: still BOOTTIME ns
    assert tr.api.numpy("start")[ai].tolist() == [k["start"] - 40 for k in truth["kernels"]]
    c = tr.copies.row(0)
    assert (c["direction"], c["start"], c["end"], c["bytes"]) == (
        "HtoD", truth["copy"]["start"], truth["copy"]["end"], truth["copy"]["bytes"])
    assert tr.api.row(c["api_index"])["name"] == "hipMemcpyAsync"
    assert tr.kernels.numpy("grid_x")[0] == 256 * 1024 and not tr.kernels.has("grid_y")
    assert tr.counters.strings("counter")[0] == "SQWAVES"
    assert tr.markers.row(0)["name"] == truth["marker"]["name"]
    assert "dropped" not in tr.meta and tr.meta["warnings"] == []
    assert tr.meta["counter_track_values_skipped"] == 2  # COPY BYTES counter track
    validate(tr)


def _packet(trace, seq, **kw):
    p = trace.packet.add()
    p.trusted_packet_sequence_id = seq
    for k, v in kw.items():
        setattr(p, k, v)
    return p


def _slice(trace, seq, ts, dur, track, name_iid, cat_iid, ann_iid=None, ann_val=None):
    p = _packet(trace, seq, timestamp=ts, sequence_flags=2)
    te = p.track_event
    te.type, te.track_uuid, te.name_iid = 1, track, name_iid
    te.category_iids.append(cat_iid)
    if ann_iid:
        da = te.debug_annotations.add()
        da.name_iid, da.uint_value = ann_iid, ann_val
    p = _packet(trace, seq, timestamp=ts + dur, sequence_flags=2)
    p.track_event.type, p.track_event.track_uuid = 2, track


def _intern(p, names=(), cats=(), anns=()):
    for iid, s in names:
        p.interned_data.event_names.add(iid=iid, name=s)
    for iid, s in cats:
        p.interned_data.event_categories.add(iid=iid, name=s)
    for iid, s in anns:
        p.interned_data.debug_annotation_names.add(iid=iid, name=s)


def test_incremental_state_two_sequences(tmp_path):
    t = pb2.Trace()
    td = _packet(t, 9).track_descriptor
    td.uuid, td.name = 5, 'STREAM [" 3 "] '
    td = _packet(t, 9).track_descriptor
    td.uuid, td.name = 6, 'STREAM [" 4 "] '
    # sequence 1: iid 1 = kernelA
    p = _packet(t, 1, sequence_flags=1)
    _intern(p, [(1, "kernelA")], [(1, "kernel_dispatch")], [(1, "corr_id")])
    _slice(t, 1, 1000, 10, 5, 1, 1, 1, 11)
    # sequence 2: iid 1 = kernelC (independent tables)
    p = _packet(t, 2, sequence_flags=1)
    _intern(p, [(1, "kernelC")], [(1, "kernel_dispatch")], [(1, "corr_id")])
    _slice(t, 2, 1005, 10, 6, 1, 1, 1, 21)
    # sequence 1 cleared mid-way: iid 1 now means kernelB, annotation iid 1 = queue
    p = _packet(t, 1, sequence_flags=1)
    _intern(p, [(1, "kernelB")], [(1, "kernel_dispatch")], [(1, "queue")])
    _slice(t, 1, 2000, 10, 5, 1, 1, 1, 7)
    # the same, cleared through the legacy incremental_state_cleared bool
    p = _packet(t, 2, incremental_state_cleared=True)
    _intern(p, [(1, "kernelD")], [(1, "kernel_dispatch")])
    _slice(t, 2, 2005, 10, 6, 1, 1)
    path = tmp_path / "seq.pftrace"
    path.write_bytes(t.SerializeToString())
    tr = read(path)
    assert tr.kernels.strings("name") == ["kernelA", "kernelC", "kernelB", "kernelD"]
    assert tr.kernels.numpy("stream").tolist() == [3, 4, 3, 4]
    assert tr.kernels.strings("correlation_id") == [11, 21, None, None]
    assert tr.kernels.strings("queue") == [None, None, 7, None]
    validate(tr)


def test_lost_incremental_state_drops_events(tmp_path):
    t = pb2.Trace()
    p = _packet(t, 1, sequence_flags=1)
    _intern(p, [(1, "kernelA")], [(1, "kernel_dispatch")])
    _slice(t, 1, 1000, 10, 5, 1, 1)
    _packet(t, 1, previous_packet_dropped=1)
    _slice(t, 1, 2000, 10, 5, 1, 1)  # needs state that may be gone: dropped
    path = tmp_path / "lost.pftrace"
    path.write_bytes(t.SerializeToString())
    tr = read(path)
    assert tr.kernels.strings("name") == ["kernelA"]
    assert tr.meta["dropped"]["events after lost incremental state"] == 2
    validate(tr)


# --------------------------------------------------------------------------- round trip
def _kernel_rows(tr: Trace) -> list[tuple]:
    api_names = tr.api.strings("name")
    api_start = tr.api.numpy("start").tolist() if len(tr.api) else []
    rows = []
    for n, s, e, d, st, a in zip(
            tr.kernels.strings("name"), tr.kernels.numpy("start").tolist(),
            tr.kernels.numpy("end").tolist(), tr.kernels.numpy("device").tolist(),
            tr.kernels.strings("stream"), tr.kernels.strings("api_index")):
        rows.append((n, s, e, d, st, None if a is None else (api_names[a], api_start[a])))
    return sorted(rows, key=lambda r: (r[1], r[2], r[0], str(r[4])))


def _round_trip(tr: Trace, tmp_path: Path) -> Trace:
    out = tmp_path / "export.pftrace"
    fractions = []
    write_pftrace(tr, out, progress=fractions.append)
    assert fractions and fractions[-1] == 1.0
    assert R.sniff(out) >= 0.9
    back = read(out)
    validate(back)
    return back


@pytest.mark.skipif(not KINETO.exists(), reason="kineto sample missing")
def test_round_trip_kineto(tmp_path):
    from hipscope.parsers import open_trace

    try:
        src = open_trace(KINETO)
    except TraceFormatError:
        pytest.skip("no kineto reader yet")
    back = _round_trip(src, tmp_path)
    assert len(back.kernels) == len(src.kernels)
    assert _kernel_rows(back) == _kernel_rows(src)
    assert len(back.api) == len(src.api)
    assert len(back.copies) == len(src.copies)
    assert sorted(back.copies.numpy("start").tolist()) == \
        sorted(src.copies.numpy("start").tolist())
    assert len(back.markers) == len(src.markers)
    assert back.meta["clock"] == src.meta["clock"]
    assert back.meta["tool"] == "hipscope (pftrace export)"


@needs_fixture
def test_round_trip_fixture(tmp_path, fx):
    src, _ = fx
    back = _round_trip(src, tmp_path)
    assert _kernel_rows(back) == _kernel_rows(src)
    for col in ("queue", "correlation_id", "grid_x", "block_x", "vgpr", "sgpr", "lds_bytes"):
        assert sorted(back.kernels.strings(col), key=str) == \
            sorted(src.kernels.strings(col), key=str), col
    assert sorted(back.markers.strings("name")) == sorted(src.markers.strings("name"))
    assert back.markers.numpy("depth").tolist() == src.markers.numpy("depth").tolist()
    assert sorted(back.copies.strings("direction")) == sorted(src.copies.strings("direction"))
    assert Counter(back.api.strings("domain")) == Counter(src.api.strings("domain"))


def test_round_trip_overlaps_and_instants(tmp_path):
    """Overlapping kernels on one stream, zero-length kernels, crossing API calls and a
    graph launch (one API row, several kernels) survive the export."""
    api = build_table("api", {
        "name": ["hipGraphLaunch", "hipMemcpy", "crossing"],
        "domain": ["HIP_RUNTIME_API", "HIP_RUNTIME_API", "other"],
        "start": [100, 150, 180], "end": [200, 300, 250], "pid": [1, 1, 1],
        "tid": [2, 2, 2], "correlation_id": [10, 11, 12]})
    kernels = build_table("kernels", {
        "name": ["a", "b", "c", "z"], "device": np.array([0, 0, 0, 1], np.int16),
        "start": [400, 450, 450, 500], "end": [500, 600, 450, 500], "stream": [0, 0, 0, 5],
        "api_index": [0, 0, 0, None], "correlation_id": [10, 10, 10, None]})
    copies = build_table("copies", {"direction": ["HtoD"], "start": [160], "end": [290],
                                    "api_index": [1], "bytes": [64]})
    devices = build_table("devices", {"index": np.array([0, 1], np.int16),
                                      "name": ["GPU A", "GPU B"]})
    src = Trace(kernels=kernels, api=api, copies=copies, devices=devices,
                meta={"format": "test", "sources": [], "clock": "unix epoch"})
    back = _round_trip(src, tmp_path)
    assert _kernel_rows(back) == _kernel_rows(src)
    assert back.copies.row(0)["api_index"] is not None
    assert back.api.row(back.copies.row(0)["api_index"])["name"] == "hipMemcpy"
    assert sorted(back.devices.strings("name")) == ["GPU A", "GPU B"]
    assert back.meta["clock"] == "unix epoch"


# --------------------------------------------------------------------------- bad input
def test_truncated_keeps_whole_packets(tmp_path):
    good = tmp_path / "good.pftrace"
    make_rocprof_like(good, 8)
    raw = good.read_bytes()
    cut = tmp_path / "cut.pftrace"
    cut.write_bytes(raw[: len(raw) - 7])
    tr = read(cut)
    assert tr.meta["dropped"]["packets"] == 1
    assert any("truncated" in w for w in tr.meta["warnings"])
    assert len(tr.kernels) == 8  # the cut packet is a counter value
    cut.write_bytes(raw[: len(raw) // 2])
    tr = read(cut)
    assert 0 < len(tr.api) < 17
    assert tr.meta["dropped"]["packets"] == 1
    validate(tr)


@pytest.mark.parametrize("content,where", [
    (b"", "byte 0"),
    (b"\x0a\x05abc", "packet 0 at byte 0"),
    (b"\x00\x01\x02garbage garbage", "packet 0 at byte 0"),
    (b"\x0a\x02\x08\x01\xff\xff\xff", "packet 1 at byte 4"),
    (b"\x0a\x03\xff\xff\xff", "packet 0 at byte 2"),
])
def test_bad_input(tmp_path, content, where):
    p = tmp_path / "bad.pftrace"
    p.write_bytes(content)
    with pytest.raises(TraceFormatError) as ei:
        read(p)
    assert str(p) in str(ei.value)
    assert where in str(ei.value)


def test_sniff_rejects_other_files(tmp_path):
    txt = tmp_path / "a.pftrace"
    txt.write_text("\nhello world, this is text\n")
    js = tmp_path / "t.json.gz"
    with gzip.open(js, "wt") as fh:
        fh.write('{"traceEvents": []}')
    db = tmp_path / "x.db"
    con = sqlite3.connect(db)
    con.execute("create table t(a)")
    con.commit()
    con.close()
    empty = tmp_path / "e.pftrace"
    empty.write_bytes(b"")
    for p in (txt, js, db, empty):
        assert R.sniff(p) == 0.0, p
    good = tmp_path / "g.bin"
    make_rocprof_like(good, 2)
    gz = tmp_path / "g.pftrace.gz"
    gz.write_bytes(gzip.compress(good.read_bytes()))
    assert 0.5 < R.sniff(good) < R.sniff(gz)  # no .pftrace extension: less sure
    assert R.sniff(gz) >= 0.9
    assert len(read(gz).kernels) == 2
