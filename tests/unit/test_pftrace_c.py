"""The C walk of .pftrace files (hipscope/parsers/_pftscan.c) gives the Trace the
protobuf path gives: every table, every column, the meta and its warnings."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb2

from hipscope.export import write_pftrace
from hipscope.model.trace import TABLES
from hipscope.parsers import TraceFormatError
from hipscope.parsers.pftrace import PftraceReader, fast
from tests.conftest import DATA, ids, sample_dirs

from .pftrace_synth import make_rocprof_like

pytestmark = pytest.mark.skipif(not fast.available(), reason="_pftscan not built")

R = PftraceReader()
FIXTURES = sorted((DATA / "pftrace").glob("*.pftrace"))
REAL = [p for d in sample_dirs("rocprofv3-pftrace") for p in sorted(d.glob("*.pftrace"))]


def _read(path: Path, c: bool, monkeypatch):
    monkeypatch.setenv("HIPSCOPE_PFTRACE_C", "1" if c else "0")
    try:
        return R.read(Path(path), lambda f: None, lambda: False)
    except TraceFormatError as exc:
        return exc


def assert_same(a, b) -> None:
    if isinstance(a, TraceFormatError) or isinstance(b, TraceFormatError):
        assert isinstance(a, TraceFormatError) and isinstance(b, TraceFormatError)
        assert str(a) == str(b)
        return
    for name in TABLES:
        x, y = getattr(a, name).data, getattr(b, name).data
        assert x.schema == y.schema, name
        assert x.equals(y), name
    assert a.meta == b.meta


def both(path: Path, monkeypatch, accepted: bool = True):
    """The C and protobuf reads of ``path`` (asserting whether the C walk took it)."""
    monkeypatch.setenv("HIPSCOPE_PFTRACE_C", "1")
    taken = fast.walk(Path(path).read_bytes()) is not None
    assert taken == accepted
    c, p = _read(path, True, monkeypatch), _read(path, False, monkeypatch)
    assert_same(c, p)
    return c


@pytest.mark.parametrize("path", FIXTURES + REAL, ids=ids(FIXTURES + REAL))
def test_fixtures_and_real_samples_equal(path, monkeypatch):
    tr = both(path, monkeypatch)
    assert len(tr.kernels) and len(tr.api)


def test_exported_and_sdk_like_equal(tmp_path, monkeypatch):
    src = _read(FIXTURES[0], False, monkeypatch)
    out = tmp_path / "export.pftrace"
    write_pftrace(src, out)
    tr = both(out, monkeypatch)
    assert len(tr.kernels) == len(src.kernels)
    for group in (False, True):
        p = tmp_path / f"sdk{group}.pftrace"
        make_rocprof_like(p, 30, group_by_queue=group)
        both(p, monkeypatch)


def test_switch_forces_protobuf(monkeypatch):
    monkeypatch.setenv("HIPSCOPE_PFTRACE_C", "0")
    assert not fast.available()
    assert fast.walk(FIXTURES[0].read_bytes()) is None


# --------------------------------------------------------------------------- hand-made
def _pk(t, seq=1, **kw):
    p = t.packet.add()
    p.trusted_packet_sequence_id = seq
    for k, v in kw.items():
        setattr(p, k, v)
    return p


def _event(t, ts, typ, track=7, seq=1, **kw):
    p = _pk(t, seq, timestamp=ts, sequence_flags=2)
    p.track_event.type = typ
    p.track_event.track_uuid = track
    for k, v in kw.items():
        if isinstance(v, list):
            getattr(p.track_event, k).extend(v)
        else:
            setattr(p.track_event, k, v)
    return p


def _write(t, tmp_path, name="t.pftrace") -> Path:
    path = tmp_path / name
    path.write_bytes(t.SerializeToString())
    return path


def test_every_annotation_kind_clocks_and_flows(tmp_path, monkeypatch):
    t = pb2.Trace()
    td = _pk(t, 5).track_descriptor
    td.uuid, td.name = 7, "COMPUTE Agent [2] QUEUE [1] GPU"
    p = _pk(t, sequence_flags=1)
    p.interned_data.event_names.add(iid=1, name="k1")
    p.interned_data.event_categories.add(iid=1, name="kernel_dispatch")
    p.interned_data.event_categories.add(iid=2, name="hip_api")
    for i, n in enumerate(("corr_id", "b", "u", "d", "s", "ptr", "si", "j", "PMC_X"), 1):
        p.interned_data.debug_annotation_names.add(iid=i, name=n)
    p.interned_data.debug_annotation_string_values.add(iid=3, str=b"interned \xff")
    cs = _pk(t).clock_snapshot
    cs.clocks.add(clock_id=6, timestamp=10_000)
    cs.clocks.add(clock_id=3, timestamp=4_000)
    cs.clocks.add(clock_id=64, timestamp=10_000, is_incremental=True, unit_multiplier_ns=2)
    ev = _event(t, 20_000, 1, category_iids=[1], name_iid=1).track_event
    for kw in ({"name_iid": 1, "int_value": -5}, {"name_iid": 2, "bool_value": True},
               {"name_iid": 3, "uint_value": 1 << 63}, {"name_iid": 4, "double_value": 2.5},
               {"name_iid": 5, "string_value": "é"}, {"name_iid": 6, "pointer_value": 9},
               {"name_iid": 7, "string_value_iid": 3}, {"name_iid": 8, "legacy_json_value": "{}"},
               {"name_iid": 9, "int_value": 12}, {"name": "plain", "uint_value": 1},
               {"name_iid": 99, "int_value": 1}):
        ev.debug_annotations.add(**kw)
    ev.terminating_flow_ids.append(42)
    _event(t, 21_000, 2)
    api = _event(t, 15_000, 1, track=8, categories=["hip_api"], name="hipLaunchKernel")
    api.track_event.flow_ids_old.append(42)
    api.track_event.debug_annotations.add(name_iid=1, int_value=-5)
    p = _pk(t, timestamp=16_000, timestamp_clock_id=3)  # another clock, via the snapshot
    p.track_event.type, p.track_event.track_uuid = 2, 8
    p = _pk(t, timestamp=100, timestamp_clock_id=64)  # incremental: 10_100 -> 10_200 ns
    p.track_event.type, p.track_event.track_uuid, p.track_event.name = 3, 8, "hipMark"
    p.track_event.categories.append("hip_api")
    p = _pk(t, timestamp=50, timestamp_clock_id=64)
    p.track_event.type, p.track_event.track_uuid, p.track_event.name = 3, 8, "hipMark2"
    p.track_event.categories.append("hip_api")
    p = _pk(t, seq=3, timestamp=5, timestamp_clock_id=64)  # clock 64 unknown on seq 3
    p.track_event.type = 3
    abs_ev = _pk(t).track_event  # microseconds, no packet timestamp
    abs_ev.type, abs_ev.timestamp_absolute_us, abs_ev.name = 3, 30, "hipAbs"
    abs_ev.track_uuid = 8
    abs_ev.categories.append("hip_api")
    _event(t, 22_000, 4)                    # a counter value
    _event(t, 23_000, 2, track=99)          # an end without a begin
    _event(t, 24_000, 1, name_iid=77)       # a name never interned
    _event(t, 25_000, 1, name_iid=1, category_iids=[1])  # never ends
    tr = both(_write(t, tmp_path), monkeypatch)
    assert len(tr.kernels) == 1 and len(tr.api) == 4
    assert tr.meta["dropped"]["slice ends without a begin"] == 1


def test_declines_what_it_does_not_know(tmp_path, monkeypatch):
    t = pb2.Trace()
    p = _pk(t, sequence_flags=1)
    p.interned_data.event_names.add(iid=1, name="k")
    p.interned_data.event_categories.add(iid=1, name="kernel_dispatch")
    ev = _event(t, 1000, 1, name_iid=1, category_iids=[1]).track_event
    ev.debug_annotations.add(name="nested").nested_value.int_value = 3
    _event(t, 2000, 2)
    both(_write(t, tmp_path), monkeypatch, accepted=False)


def test_framing_problems_equal(tmp_path, monkeypatch):
    data = FIXTURES[0].read_bytes()
    for i, raw in enumerate((data[:-7], data + b"\x12\x00", data + b"\x0a" + b"\xff" * 11,
                             data[:3], b"\x0a\x05ab")):
        path = tmp_path / f"f{i}.pftrace"
        path.write_bytes(raw)
        assert_same(_read(path, True, monkeypatch), _read(path, False, monkeypatch))


# --------------------------------------------------------------------------- generated
_u = st.integers(0, 6)


@st.composite
def _packets(draw):
    t = pb2.Trace()
    for _ in range(draw(st.integers(1, 25))):
        p = t.packet.add()
        p.trusted_packet_sequence_id = draw(st.sampled_from([1, 2]))
        if draw(st.booleans()):
            p.sequence_flags = draw(st.integers(0, 3))
        if draw(st.integers(0, 9)) == 0:
            p.previous_packet_dropped = 1
        if draw(st.integers(0, 9)) == 0:
            p.trace_packet_defaults.timestamp_clock_id = draw(st.sampled_from([3, 6, 64]))
            p.trace_packet_defaults.track_event_defaults.track_uuid = draw(_u)
        for _ in range(draw(st.integers(0, 2))):
            kind = draw(st.sampled_from(["event_names", "event_categories",
                                         "debug_annotation_names"]))
            nm = draw(st.sampled_from(["k", "kernel_dispatch", "hip_api", "memory_copy",
                                       "corr_id", "agent", "hipscope", "marker_api"]))
            getattr(p.interned_data, kind).add(iid=draw(_u), name=nm)
        what = draw(st.sampled_from(["event"] * 6 + ["snap", "desc", "none"]))
        if what == "snap":
            for cid in draw(st.lists(st.sampled_from([3, 6, 64]), max_size=3)):
                p.clock_snapshot.clocks.add(clock_id=cid, timestamp=draw(st.integers(0, 1e6)),
                                            is_incremental=draw(st.booleans()))
        elif what == "desc":
            p.track_descriptor.uuid = draw(_u)
            p.track_descriptor.name = draw(st.sampled_from(
                ["STREAM [\" 1 \"]", "COMPUTE GPU [0] QUEUE [2]", "THREAD 1 (77)", "x"]))
        elif what == "event":
            _gen_event(draw, p)
    return t.SerializeToString()


def _gen_event(draw, p) -> None:
    if draw(st.booleans()):
        p.timestamp = draw(st.integers(0, 1e6))
        if draw(st.booleans()):
            p.timestamp_clock_id = draw(st.sampled_from([3, 6, 64]))
    ev = p.track_event
    ev.type = draw(st.integers(0, 4))
    if draw(st.booleans()):
        ev.track_uuid = draw(_u)
    if draw(st.booleans()):
        ev.name_iid = draw(_u)
    else:
        ev.name = draw(st.sampled_from(["", "a", "hipMalloc"]))
    ev.category_iids.extend(draw(st.lists(_u, max_size=2)))
    for _ in range(draw(st.integers(0, 3))):
        da = ev.debug_annotations.add(name_iid=draw(_u))
        which = draw(st.sampled_from(["int_value", "uint_value", "string_value",
                                      "double_value", "bool_value"]))
        val = {"int_value": -3, "uint_value": 4, "string_value": "GPU-1",
               "double_value": 0.5, "bool_value": True}[which]
        setattr(da, which, val)
    ev.flow_ids.extend(draw(st.lists(_u, max_size=2)))


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(raw=_packets())
def test_generated_streams_equal(raw, tmp_path, monkeypatch):
    path = tmp_path / "gen.pftrace"
    path.write_bytes(raw)
    assert_same(_read(path, True, monkeypatch), _read(path, False, monkeypatch))


def test_mutated_bytes(tmp_path, monkeypatch):
    """Byte flips, cuts and insertions: only TraceFormatError escapes either path, and
    both give the same trace or the same error."""
    rng = random.Random(14)
    base = FIXTURES[0].read_bytes()
    both_read = c_took = 0
    for i in range(200):
        raw = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            op, at = rng.choice((0, 0, 0, 0, 1, 2)), rng.randrange(len(raw))
            if op == 0:
                raw[at] = rng.randrange(256)
            elif op == 1:
                del raw[at:at + rng.randint(1, 8)]
            else:
                raw[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        path = tmp_path / f"m{i}.pftrace"
        path.write_bytes(bytes(raw))
        monkeypatch.setenv("HIPSCOPE_PFTRACE_C", "1")
        c_took += fast.walk(bytes(raw)) is not None
        c, p = _read(path, True, monkeypatch), _read(path, False, monkeypatch)
        assert_same(c, p)  # the same trace, or the same one-sentence error
        both_read += not isinstance(c, TraceFormatError)
    assert both_read >= 10 and c_took >= 10  # seeded: 17 and 20


def test_progress_and_cancel_inside_the_walk():
    from hipscope.model.progress import Cancelled

    data = FIXTURES[0].read_bytes()
    seen: list[float] = []
    assert fast.walk(data, seen.append) is not None
    assert seen == [0.8]  # one chunk of packets, all of the file
    with pytest.raises(Cancelled):
        fast.walk(data, cancelled=lambda: True)


def test_times_beyond_int64_saturate_on_both_paths(tmp_path, monkeypatch):
    t = pb2.Trace()
    p = _pk(t, sequence_flags=1)
    p.interned_data.event_names.add(iid=1, name="k")
    p.interned_data.event_categories.add(iid=1, name="kernel_dispatch")
    p.interned_data.debug_annotation_names.add(iid=1, name="begin_ns")
    p.interned_data.debug_annotation_names.add(iid=2, name="end_ns")
    ev = _event(t, 1000, 1, name_iid=1, category_iids=[1]).track_event
    ev.debug_annotations.add(name_iid=1, uint_value=(1 << 63) + 5)
    ev.debug_annotations.add(name_iid=2, uint_value=(1 << 64) - 1)
    _event(t, 2000, 2)
    tr = both(_write(t, tmp_path), monkeypatch)
    assert tr.kernels.numpy("start").tolist() == [(1 << 63) - 1]


def test_annotation_columns_helper_equals_python(tmp_path, monkeypatch):
    """_pftscan.ann_ints (kernel/API integer annotations read in C) gives the columns
    the Python loop gives, also for values that are not ints."""
    from hipscope.parsers.pftrace import columns

    t = pb2.Trace()
    p = _pk(t, sequence_flags=1)
    p.interned_data.event_names.add(iid=1, name="k")
    p.interned_data.event_categories.add(iid=1, name="kernel_dispatch")
    for i, n in enumerate(("queue", "stream_ID", "pid", "tid", "grid_size"), 1):
        p.interned_data.debug_annotation_names.add(iid=i, name=n)
    for ts, vals in ((1000, {"double_value": 2.0}), (3000, {"string_value": "0x10"}),
                     (5000, {"bool_value": True}), (7000, {"legacy_json_value": "{}"})):
        ev = _event(t, ts, 1, name_iid=1, category_iids=[1]).track_event
        for iid in range(1, 6):
            ev.debug_annotations.add(name_iid=iid, **vals)
        _event(t, ts + 500, 2)
    path = _write(t, tmp_path)
    with_c = both(path, monkeypatch)
    monkeypatch.setattr(columns, "_pftscan", None)
    assert_same(_read(path, True, monkeypatch), with_c)
    assert with_c.kernels.strings("queue") == [2, 16, 1, None]
    for path in FIXTURES + REAL:
        monkeypatch.setattr(columns, "_pftscan", fast._pftscan)
        a = _read(path, True, monkeypatch)
        monkeypatch.setattr(columns, "_pftscan", None)
        assert_same(a, _read(path, True, monkeypatch))


def test_graph_launch_with_many_flows(tmp_path, monkeypatch):
    """One API call launching 300 kernels: its slice carries 300 flow ids."""
    import numpy as np

    from hipscope.model import Trace, build_table

    n = 300
    api = build_table("api", {"name": ["hipGraphLaunch"], "domain": ["HIP_RUNTIME_API"],
                              "start": [10], "end": [20], "pid": [1], "tid": [1]})
    kernels = build_table("kernels", {
        "name": [f"k{i % 3}" for i in range(n)], "device": np.zeros(n, np.int16),
        "start": 100 + 10 * np.arange(n), "end": 105 + 10 * np.arange(n),
        "api_index": [0] * n})
    out = tmp_path / "graph.pftrace"
    write_pftrace(Trace(kernels=kernels, api=api, meta={"format": "test", "sources": []}),
                  out)
    tr = both(out, monkeypatch)
    assert tr.kernels.numpy("api_index").tolist() == [0] * n
