"""The plain wire-format pieces of the pftrace reader (hipscope/parsers/pftrace/wire.py):
its field numbers are perfetto_trace.proto's, its TrackDescriptor decoder reads what
protobuf reads (or hands the descriptor to protobuf), and opening a pftrace on the
column path imports no protobuf."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb2

from hipscope.export import write_pftrace
from hipscope.parsers.pftrace import PftraceReader, _protobuf_good, _wire_good, fast, wire
from hipscope.parsers.pftrace.proto import scan_packets
from hipscope.parsers.pftrace.walk import track_descriptor_of

from .pftrace_synth import make_rocprof_like
from .test_pftrace_c import FIXTURES, REAL

TD = pb2.TrackDescriptor.DESCRIPTOR


def test_field_numbers_are_the_protos():
    pkt = pb2.TracePacket.DESCRIPTOR
    oneof = sorted(f.number for f in pkt.oneofs_by_name["data"].fields)
    assert list(wire.DATA_ONEOF_FIELDS) == oneof
    sniffed = ("track_event", "track_descriptor", "interned_data", "clock_snapshot",
               "trace_config", "trace_packet_defaults", "process_tree", "trace_stats")
    assert wire.SNIFF_FIELDS == {pkt.fields_by_name[n].number for n in sniffed}
    f = TD.fields_by_name
    assert {n: f[n].number for n in ("uuid", "parent_uuid", "description", "process",
                                     "thread", "counter")} == \
        {"uuid": 1, "parent_uuid": 5, "description": 14, "process": 3, "thread": 4,
         "counter": 8}
    assert sorted(x.number for x in TD.oneofs_by_name["static_or_dynamic_name"].fields) == \
        sorted(wire._TD_NAMES)
    messages = {x.number for x in TD.fields if x.message_type is not None}
    assert messages == {3, 4, 8} | wire._TD_UNREAD  # every other message: declined
    p, t = pb2.ProcessDescriptor.DESCRIPTOR.fields_by_name, \
        pb2.ThreadDescriptor.DESCRIPTOR.fields_by_name
    assert (p["pid"].number, p["process_name"].number) == (1, 6)
    assert (t["pid"].number, t["tid"].number, t["thread_name"].number) == (1, 2, 5)


def _tracks_by_protobuf(raw: bytes) -> dict | None:
    tracks: dict = {}
    try:
        track_descriptor_of(pb2.TrackDescriptor.FromString(raw), tracks)
    except Exception:  # noqa: BLE001 - DecodeError
        return None
    return tracks


def assert_descriptor_as_protobuf(raw: bytes) -> bool:
    """The wire decoder gives protobuf's tracks or None (never other tracks, never a
    descriptor protobuf cannot decode); whether it read it itself."""
    td = wire.track_descriptor(raw, 0, len(raw))
    want = _tracks_by_protobuf(raw)
    if td is None:
        return False
    assert want is not None, raw
    got: dict = {}
    wire.add_track(td, got)
    assert got == want, raw
    return True


def _descriptors(path: Path) -> list[bytes]:
    data = path.read_bytes()
    ranges, _, _ = scan_packets(data)
    out = []
    for a, b in ranges:
        pkt = pb2.TracePacket.FromString(data[a:b])
        if pkt.HasField("track_descriptor"):
            out.append(pkt.track_descriptor.SerializeToString())
    return out


def _exported(tmp_path: Path) -> list[Path]:
    from hipscope.parsers import open_trace

    out = tmp_path / "export.pftrace"
    write_pftrace(open_trace(FIXTURES[0], use_cache=False), out)
    sdk = tmp_path / "sdk.pftrace"
    make_rocprof_like(sdk, 20)
    return [out, sdk]


def test_descriptors_of_every_fixture_read_as_protobuf_reads_them(tmp_path):
    paths = FIXTURES + REAL + _exported(tmp_path)
    for path in paths:
        descs = _descriptors(path)
        assert descs, path
        assert all(assert_descriptor_as_protobuf(d) for d in descs), path


_text = st.sampled_from(["", "x", "COMPUTE GPU [0] QUEUE [2]", "THREAD 1 (77)", "é€"])
_int = st.integers(-(1 << 31), (1 << 31) - 1)


@st.composite
def _descriptor(draw) -> bytes:
    td = pb2.TrackDescriptor()
    if draw(st.booleans()):
        td.uuid = draw(st.integers(0, (1 << 64) - 1))
    if draw(st.booleans()):
        td.parent_uuid = draw(st.integers(0, (1 << 64) - 1))
    nm = draw(st.sampled_from([None, "name", "static_name", "atrace_name"]))
    if nm:
        setattr(td, nm, draw(_text))
    if draw(st.booleans()):
        td.description = draw(_text)
    if draw(st.booleans()):
        td.process.pid = draw(_int)
        if draw(st.booleans()):
            td.process.process_name = draw(_text)
    if draw(st.booleans()):
        td.thread.pid, td.thread.tid = draw(_int), draw(st.integers(-(1 << 63), 1 << 40))
        if draw(st.booleans()):
            td.thread.thread_name = draw(_text)
    if draw(st.booleans()):
        td.counter.unit_multiplier = draw(st.integers(0, 9))
    if draw(st.integers(0, 5)) == 0:
        td.chrome_process.host_app_package_name = "a"
    raw = td.SerializeToString()
    extra = pb2.TrackDescriptor()  # a second occurrence of some fields: protobuf merges
    if draw(st.booleans()):
        extra.process.process_name = draw(_text)
    if draw(st.booleans()):
        extra.static_name = draw(_text)
    return raw + extra.SerializeToString()


@settings(max_examples=300, deadline=None, derandomize=True)
@given(raw=_descriptor())
def test_generated_descriptors_read_as_protobuf_reads_them(raw):
    assert_descriptor_as_protobuf(raw)


def test_mutated_descriptors_never_read_otherwise_than_protobuf(tmp_path):
    rng = random.Random(14)
    descs = [d for p in FIXTURES + REAL + _exported(tmp_path) for d in _descriptors(p)]
    read = 0
    for _ in range(3000):
        raw = bytearray(rng.choice(descs))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(raw))
            if rng.random() < 0.7:
                raw[at] = rng.randrange(256)
            else:
                del raw[at:at + rng.randint(1, 4)]
        read += assert_descriptor_as_protobuf(bytes(raw))
    assert read > 500  # most mutations are still descriptors it reads itself


def test_the_oneof_bitmap_is_the_descriptors():
    bits = fast.data_oneof()
    got = [n for n in range(1024) if bits[n >> 3] >> (n & 7) & 1]
    assert got == sorted(f.number for f in
                         pb2.TracePacket.DESCRIPTOR.oneofs_by_name["data"].fields)


_NO_PROTOBUF = """
import contextlib, io, sys
from hipscope.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(["report", "--no-cache", "--json", sys.argv[1]])
print(rc, sorted({m.split(".")[0] + "." + m.split(".")[1] if "." in m else m
                  for m in sys.modules if m.startswith(("google.protobuf", "perfetto"))}))
"""


@pytest.mark.skipif(not fast.available(), reason="_pftscan not built")
@pytest.mark.parametrize("path", FIXTURES + REAL[:1], ids=[p.name for p in FIXTURES + REAL[:1]])
def test_the_report_of_a_pftrace_imports_no_protobuf(path):
    from tests.conftest import ROOT

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", _NO_PROTOBUF, str(path)], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.split(maxsplit=1) == ["0", "[]\n"], out.stderr


def test_sniff_reads_the_wire_format_as_protobuf_does(tmp_path):
    r = PftraceReader()
    paths = FIXTURES + REAL + _exported(tmp_path)
    for path in paths:
        head = path.read_bytes()[:1 << 16]
        ranges, _, _ = scan_packets(head)
        assert _wire_good(head, ranges) == _protobuf_good(head, ranges[:64]), path
        assert r.sniff(path) >= 0.9


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.stat().st_size < 64 << 20
                  and "__pycache__" not in p.parts)


def test_every_sample_and_fixture_sniffs_as_with_protobuf(monkeypatch):
    """The wire-format sniff claims no file the protobuf check turns down (an XPlane
    ``.pb`` is wire format too) and scores every file as before."""
    from tests.conftest import DATA, SAMPLES

    r = PftraceReader()
    paths = _files(DATA) + _files(SAMPLES)
    wire_says = {p: r.sniff(p) for p in paths}
    import hipscope.parsers.pftrace as pft

    monkeypatch.setattr(pft, "_wire_good", lambda head, ranges: None)
    assert {p: r.sniff(p) for p in paths} == wire_says
    assert any(s >= 0.9 for s in wire_says.values())
