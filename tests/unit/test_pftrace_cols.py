"""The column walk of .pftrace files (``_pftscan.walk(..., columns=True)`` and the numpy
tables of hipscope/parsers/pftrace/colbuild.py) gives the Trace the record walk and the
protobuf path give, and declines (to the record walk) what it cannot reproduce."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb2

from hipscope.export import write_pftrace
from hipscope.parsers import TraceFormatError
from hipscope.parsers.pftrace import PftraceReader, colread, fast

from .pftrace_synth import make_rocprof_like
from .test_pftrace_c import FIXTURES, REAL, _event, _packets, _pk, _write, assert_same

pytestmark = pytest.mark.skipif(not fast.available(), reason="_pftscan not built")
R = PftraceReader()


def _read(path: Path, mode: str, monkeypatch):
    """mode: "cols" (the column walk), "records" (the C record walk), "protobuf"."""
    monkeypatch.setenv("HIPSCOPE_PFTRACE_C", "0" if mode == "protobuf" else "1")
    monkeypatch.setenv("HIPSCOPE_PFTRACE_COLUMNS", "1" if mode == "cols" else "0")
    try:
        return R.read(Path(path), lambda f: None, lambda: False)
    except TraceFormatError as exc:
        return exc


def taken(path: Path, monkeypatch) -> bool:
    """Whether the column path reads the file itself (no fallback)."""
    monkeypatch.setenv("HIPSCOPE_PFTRACE_C", "1")
    monkeypatch.setenv("HIPSCOPE_PFTRACE_COLUMNS", "1")
    return colread.read_columns("pftrace", Path(path), [Path(path).read_bytes()], [], {},
                                lambda f: None, lambda: False) is not None


def three(path: Path, monkeypatch, columns: bool = True):
    assert taken(path, monkeypatch) == columns
    c = _read(path, "cols", monkeypatch)
    assert_same(c, _read(path, "records", monkeypatch))
    assert_same(c, _read(path, "protobuf", monkeypatch))
    return c


@pytest.mark.parametrize("path", FIXTURES + REAL, ids=[p.name for p in FIXTURES + REAL])
def test_fixtures_and_real_samples_through_columns(path, monkeypatch):
    tr = three(path, monkeypatch)
    assert len(tr.kernels) and len(tr.api)


def test_exported_and_sdk_like_through_columns(tmp_path, monkeypatch):
    src = _read(FIXTURES[0], "protobuf", monkeypatch)
    out = tmp_path / "export.pftrace"
    write_pftrace(src, out)
    tr = three(out, monkeypatch)
    assert len(tr.kernels) == len(src.kernels) and len(tr.copies) == len(src.copies)
    for group in (False, True):
        p = tmp_path / f"sdk{group}.pftrace"
        make_rocprof_like(p, 30, group_by_queue=group)
        three(p, monkeypatch)


def _one_kernel(tmp_path, anns: list[dict]) -> Path:
    t = pb2.Trace()
    p = _pk(t, sequence_flags=1)
    p.interned_data.event_names.add(iid=1, name="k")
    p.interned_data.event_categories.add(iid=1, name="kernel_dispatch")
    for i, n in enumerate(("begin_ns", "end_ns", "queue", "PMC_A"), 1):
        p.interned_data.debug_annotation_names.add(iid=i, name=n)
    ev = _event(t, 1000, 1, name_iid=1, category_iids=[1]).track_event
    for kw in anns:
        ev.debug_annotations.add(**kw)
    _event(t, 2000, 2)
    return _write(t, tmp_path)


def test_declines_what_numpy_cannot_reproduce(tmp_path, monkeypatch):
    """A name given twice on a slice (the dict keeps the last, where the first was) and
    integers beyond int64 (the records saturate or null them) go to the record walk."""
    for anns in ([{"name_iid": 4, "int_value": 1}, {"name_iid": 4, "string_value": "x"}],
                 [{"name_iid": 3, "int_value": 1}, {"name_iid": 3, "int_value": 2}],
                 [{"name_iid": 1, "uint_value": 1 << 63}, {"name_iid": 2, "uint_value": 5}]):
        tr = three(_one_kernel(tmp_path, anns), monkeypatch, columns=False)
        assert len(tr.kernels) == 1


def _raw_annotation_kernel(tmp_path, raw: bytes) -> Path:
    """``_one_kernel`` whose begin event carries one more debug annotation given as raw
    bytes (shapes protobuf would never write: fields repeated or out of order)."""
    path = _one_kernel(tmp_path, [{"name_iid": 1, "uint_value": 10}])
    t = pb2.Trace.FromString(path.read_bytes())
    out = bytearray()
    for i, pkt in enumerate(t.packet):
        if i != 1:
            out += pb2.Trace(packet=[pkt]).SerializeToString()
            continue
        ev = pkt.track_event.SerializeToString() + b"\x22" + bytes([len(raw)]) + raw
        pkt.ClearField("track_event")
        body = pkt.SerializeToString() + b"\x5a" + bytes([len(ev)]) + ev
        out += b"\x0a" + bytes([len(body)]) + body
    path.write_bytes(bytes(out))
    return path


@pytest.mark.parametrize("raw", [
    b"\x08\x02\x18\x05", b"\x08\x03\x20\x7f", b"\x08\x03\x10\x01",     # the fast shape
    b"\x08\x03\x20" + b"\xff" * 9 + b"\x01",                               # int -1
    b"\x18\x05\x08\x02",                                # value before name
    b"\x08\x02\x18\x05\x18\x06", b"\x08\x02\x18\x05\x08\x03",          # a field twice
    b"\x08\x02\x18", b"\x08" + b"\x81" * 9 + b"\x02\x18\x05",             # malformed
    b"\x08\x02\x28\x05", b"\x08\x02\x31" + b"\x00" * 8,                  # other values
], ids=["uint", "int", "bool", "int-1", "value-first", "value-twice", "name-twice",
        "cut-short", "varint-over-64-bits", "field-5", "double"])
def test_raw_annotation_shapes_read_as_protobuf_reads_them(raw, tmp_path, monkeypatch):
    path = _raw_annotation_kernel(tmp_path, raw)
    got = _read(path, "cols", monkeypatch)
    assert_same(got, _read(path, "protobuf", monkeypatch))
    assert_same(_read(path, "records", monkeypatch), _read(path, "protobuf", monkeypatch))


def test_annotation_kinds_to_integers(tmp_path, monkeypatch):
    """``ann_as_int`` on arrays: doubles round half to even, strings parse with base 0,
    bools count, non-finite doubles and other strings are null; PMC values stay floats."""
    for val, want in (({"double_value": 2.5}, 2), ({"double_value": 3.5}, 4),
                      ({"string_value": " 0x1f "}, 31), ({"bool_value": True}, 1),
                      ({"double_value": float("nan")}, None), ({"string_value": "q"}, None)):
        path = _one_kernel(tmp_path, [{"name_iid": 3, **val},
                                      {"name_iid": 4, "uint_value": (1 << 64) - 1}])
        tr = three(path, monkeypatch)
        assert tr.kernels.strings("queue") == [want]
        assert tr.counters.numpy("value").tolist() == [float((1 << 64) - 1)]


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(raw=_packets())
def test_generated_streams_through_columns(raw, tmp_path, monkeypatch):
    path = tmp_path / "gen.pftrace"
    path.write_bytes(raw)
    c = _read(path, "cols", monkeypatch)
    assert_same(c, _read(path, "records", monkeypatch))
    assert_same(c, _read(path, "protobuf", monkeypatch))


def test_mutated_bytes_through_columns(tmp_path, monkeypatch):
    rng = random.Random(15)
    base = FIXTURES[0].read_bytes()
    took = 0
    for i in range(150):
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
        try:
            took += taken(path, monkeypatch)
        except TraceFormatError:
            pass
        c = _read(path, "cols", monkeypatch)
        assert_same(c, _read(path, "records", monkeypatch))
        assert_same(c, _read(path, "protobuf", monkeypatch))
    assert took >= 10


def test_progress_and_cancel_inside_the_column_walk():
    from hipscope.model.progress import Cancelled
    from hipscope.parsers.pftrace.colwalk import walk_columns

    data = FIXTURES[0].read_bytes()
    seen: list[float] = []
    assert walk_columns(data, seen.append) is not None
    assert seen == [0.8]  # one chunk of packets, all of the file
    with pytest.raises(Cancelled):
        walk_columns(data, cancelled=lambda: True)


def test_a_file_of_several_chunks_reads_as_protobuf_reads_it(tmp_path, monkeypatch):
    """Past one chunk of packets (65,536) the next chunk is decoded on a worker thread
    while the walk takes the current one: 180 copies of the fixture (138,780 packets,
    three chunks; each copy clears the incremental state) read as protobuf reads them,
    with a progress tick per chunk and cancellation between chunks."""
    from hipscope.model.progress import Cancelled
    from hipscope.parsers.pftrace.colwalk import walk_columns

    data = FIXTURES[0].read_bytes() * 180
    path = tmp_path / "many.pftrace"
    path.write_bytes(data)
    seen: list[float] = []
    assert walk_columns(data, seen.append) is not None
    assert len(seen) == 3 and seen == sorted(seen) and seen[-1] == 0.8
    one = _read(FIXTURES[0], "protobuf", monkeypatch)
    tr = _read(path, "cols", monkeypatch)
    assert len(tr.kernels) == 180 * len(one.kernels)
    assert_same(tr, _read(path, "protobuf", monkeypatch))
    assert_same(_read(path, "records", monkeypatch), tr)
    calls: list[float] = []
    with pytest.raises(Cancelled):
        walk_columns(data, calls.append, cancelled=lambda: len(calls) >= 1)
    assert len(calls) == 1


def test_same_text_as_name_and_interned_value(tmp_path, monkeypatch):
    """Interned annotation values decode with errors="replace", names strictly: the
    same text from both is one string (the name's column is found)."""
    t = pb2.Trace()
    _pk(t, sequence_flags=1).interned_data.debug_annotation_string_values.add(
        iid=1, str=b"queue")  # the value's text first, then the name's
    p = _pk(t)
    p.interned_data.event_names.add(iid=1, name="k")
    p.interned_data.event_categories.add(iid=1, name="kernel_dispatch")
    p.interned_data.debug_annotation_names.add(iid=3, name="queue")
    p.interned_data.debug_annotation_names.add(iid=4, name="note")
    ev = _event(t, 1000, 1, name_iid=1, category_iids=[1]).track_event
    ev.debug_annotations.add(name_iid=4, string_value_iid=1)
    ev.debug_annotations.add(name_iid=3, int_value=7)
    _event(t, 2000, 2)
    tr = three(_write(t, tmp_path), monkeypatch)
    assert tr.kernels.strings("queue") == [7]


_NO_PANDAS = """
import contextlib, io, sys
from hipscope.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(["report", "--no-cache", "--json", sys.argv[1]])
print(rc, "pandas" in sys.modules)
"""


def assert_report_without_pandas(path: Path) -> None:
    """``hipscope report --no-cache --json path`` in a fresh process exits 0 without
    importing pandas (pyarrow's conversions of Python and numpy values, ``pa.array``,
    ``pa.scalar``, ``to_numpy(zero_copy_only=False)``, import it: ~1 s of every open)."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", _NO_PANDAS, str(path)], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.split() == ["0", "False"], out.stderr


@pytest.mark.parametrize("path", FIXTURES + REAL[:1], ids=[p.name for p in FIXTURES + REAL[:1]])
def test_the_report_of_a_pftrace_does_not_import_pandas(path):
    assert_report_without_pandas(path)
