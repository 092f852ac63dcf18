"""The C scanner of Kineto JSON (parsers/_kinscan.c, parsers/kineto/native.py) gives
the same trace as the msgspec path, table for table and meta for meta: on every Kineto
fixture and real sample, on generated event lists with odd value types, and it is
really used on the real samples. What it does not read exactly it declines (msgspec
then reads it, with its warnings); damaged bytes never crash it."""

from __future__ import annotations

import gzip
import json
import math
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.gen_kineto import write_kineto_json
from hipscope.parsers import get_reader
from hipscope.parsers.base import TraceFormatError
from hipscope.parsers.kineto import native
from tests.conftest import DATA, SAMPLES

READER = get_reader("kineto")
SCAN = native._kinscan   # built by `pip install -e .` (make test, .ci/run): not skipped
KINETO_SAMPLES = sorted((SAMPLES / "kineto").glob("*/*.json.gz"))
FIXTURES = sorted(DATA.glob("kineto-*/*.json"))
TABLES = ("kernels", "api", "copies", "markers", "counters", "devices", "queues", "streams",
          "samples")


def _id(p: Path) -> str:
    return p.parent.name + "/" + p.name


def _read(path: Path, monkeypatch, scanner: bool):
    """The trace (or the TraceFormatError) of ``path``, with the C scanner or without."""
    with monkeypatch.context() as m:
        m.setattr(native, "_kinscan", SCAN if scanner else None)
        try:
            return READER.read(path, lambda f: None, lambda: False)
        except TraceFormatError as exc:
            return exc


def _assert_same(a, b) -> None:
    if isinstance(b, TraceFormatError):
        assert isinstance(a, TraceFormatError) and str(a) == str(b)
        return
    assert not isinstance(a, TraceFormatError), str(a)
    for name in TABLES:
        x, y = getattr(a, name).data, getattr(b, name).data
        assert x.schema == y.schema, name
        assert x.equals(y), name
    assert a.meta == b.meta


def _both(path: Path, monkeypatch):
    return _read(path, monkeypatch, True), _read(path, monkeypatch, False)


def _json_events(path: Path) -> list:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)["traceEvents"]


@pytest.mark.parametrize("path", KINETO_SAMPLES + FIXTURES, ids=_id)
def test_every_kineto_file_reads_the_same_with_the_scanner(path, monkeypatch, tmp_path):
    plain = tmp_path / path.name.removesuffix(".gz")   # plain files are memory-mapped
    plain.write_bytes(gzip.decompress(path.read_bytes()) if path.suffix == ".gz"
                      else path.read_bytes())
    for p in (path, plain):
        _assert_same(*_both(p, monkeypatch))
        with monkeypatch.context() as m:   # the list cut in two halves, two threads
            m.setattr(native, "SPLIT_BYTES", 256)
            _assert_same(*_both(p, monkeypatch))


@pytest.mark.parametrize("path", KINETO_SAMPLES + FIXTURES, ids=_id)
def test_the_scanner_reads_the_real_samples(path):
    """The fast path does not silently decline: it reads every real file itself."""
    got = native.load_native(path)
    assert got is not None
    assert got[1].n == len(_json_events(path))
    trace = native_trace(path)
    assert trace is not None and trace.meta["events"] == len(_json_events(path))


def native_trace(path: Path):
    from hipscope.parsers.kineto import read_native

    return read_native(path, lambda f: None, lambda: False)


def test_a_generated_trace_reads_the_same_and_natively(tmp_path, monkeypatch):
    p = write_kineto_json(tmp_path / "gen.json", 3000, name_pad=100)
    assert native.load_native(p) is not None
    _assert_same(*_both(p, monkeypatch))
    gz = write_kineto_json(tmp_path / "gen.json.gz", 500)
    assert native.load_native(gz) is not None
    _assert_same(*_both(gz, monkeypatch))


def _trace_file(tmp_path: Path, events: list, top: dict | None = None, indent=None) -> Path:
    p = tmp_path / "t.json"
    p.write_text(json.dumps({**(top or {}), "traceEvents": events}, indent=indent,
                            ensure_ascii=False))
    return p


def test_escaped_and_unicode_names_are_read_natively(tmp_path, monkeypatch):
    names = ['k "quoted" \\ back', "caf\u00e9 \u2603", "emoji \U0001F600", "tab\there", "/slash"]
    evs = [{"ph": "X", "cat": "kernel", "name": n, "pid": 0, "tid": 7, "ts": 10.5 + i,
            "dur": 1.25, "args": {"device": 0, "stream": 7, "correlation": i}}
           for i, n in enumerate(names)]
    names.append('\x1f\x80 after "an escape", caf\u00e9 and more')
    evs.append({**evs[0], "name": names[-1]})
    p = tmp_path / "esc.json"
    for ascii_only in (True, False):   # \u escapes; UTF-8 between escapes
        p.write_text(json.dumps({"traceEvents": evs}, ensure_ascii=ascii_only))
        assert native.load_native(p) is not None
        a, b = _both(p, monkeypatch)
        _assert_same(a, b)
        assert sorted(a.kernels.column("name").to_pylist()) == sorted(names)


@pytest.mark.parametrize("text", [
    b'{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": NaN}]}',
    b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "\\ud800"}]}',
    b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": 5}]}',
    b'{"traceEvents": [{"ph": "X", "cat": "kernel", "args": [1]}]}',
    b'{"traceEvents": [7, {"ph": "X", "cat": "kernel"}]}',
    b'{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "ts": 2}]}',
    b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "a\xffb"}]}',
    b'{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1.5, "dur": 2}',  # cut short
    b'{"traceEvents": [{"ph": "X", "cat": "kernel", "args": {"grid": [1, 2, 3]}}]} x',
    b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "args": {"size": 1e400}}]}',
    b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "args": {"grid": [1, 1e400, 1]}}]}',
])
def test_what_the_scanner_cannot_read_exactly_is_declined(text, tmp_path, monkeypatch):
    p = tmp_path / "odd.json"
    p.write_bytes(text)
    assert native.load_native(p) is None
    _assert_same(*_both(p, monkeypatch))


def test_numbers_out_of_range_where_nothing_decodes_them_are_read(tmp_path, monkeypatch):
    """msgspec skips them (an unknown key, the raw "Input Dims" text): so does the
    scanner, and the figures are the msgspec path's."""
    p = tmp_path / "range.json"
    p.write_bytes(b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "op", "ts": 1,'
                  b' "dur": 2, "pid": 1, "tid": 1, "args": {"zzz": 1e400, "Input Dims":'
                  b' [1e400], "size": 1e-400, "External id": 5}}]}')
    assert native.load_native(p) is not None
    a, b = _both(p, monkeypatch)
    _assert_same(a, b)
    assert len(a.markers) == 1


def test_a_cut_short_file_keeps_the_msgspec_recovery_and_warning(tmp_path, monkeypatch):
    p = write_kineto_json(tmp_path / "gen.json", 400)
    raw = p.read_bytes()
    p.write_bytes(raw[:len(raw) * 2 // 3])
    assert native.load_native(p) is None
    a, b = _both(p, monkeypatch)
    _assert_same(a, b)
    assert any("ends early" in w for w in a.meta["warnings"])


# ------------------------------------------------------------------ generated events

_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "cuda_sync",
         "cpu_op", "user_annotation", "python_function", "gpu_user_annotation", "ac2g", "",
         "Kernel", "Runtime", "Memcpy")
_ints = st.one_of(st.integers(-3, 40), st.integers(-(1 << 63), (1 << 63) - 1),
                  st.integers(1 << 63, 1 << 70))
_odd = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False),
                 st.text(max_size=6), st.sampled_from(["0x1f", "7", " 12 ", "stream 3", "1e3"]),
                 st.lists(st.integers(0, 5), max_size=4))
_value = st.one_of(_ints, _ints, _odd)
_times = st.one_of(st.integers(0, 10**7).map(lambda n: n / 1000), st.integers(0, 10**16),
                   st.floats(0, 1e17, allow_nan=False), _odd)
_xyz = st.one_of(st.lists(st.integers(0, 70000), min_size=3, max_size=3), _value)
_args = st.fixed_dictionaries({}, optional={
    "correlation": _value, "device": _value, "stream": _value, "grid": _xyz, "block": _xyz,
    "registers per thread": _value, "shared memory": _value, "bytes": _value,
    "size": _value, "kind": st.one_of(st.sampled_from(["HtoD", "DtoH", "x"]), _value),
    "name": st.one_of(st.text(max_size=8), _value), "labels": st.sampled_from(["CPU", "GPU 0"]),
    "External id": _value, "Sequence number": _value, "Fwd thread id": _value,
    "Input Dims": st.one_of(st.lists(st.lists(st.integers(0, 9), max_size=3), max_size=3),
                            _value),
    "Input type": st.one_of(st.lists(st.sampled_from(["float", "c10::BFloat16"])), _value),
    "Collective name": st.one_of(st.sampled_from(["allreduce"]), _value),
    "Process Group Name": _value, "Process Group Ranks": _value, "Seq": _value,
    "other": _value})
_event = st.fixed_dictionaries(
    {"ph": st.sampled_from(["X", "X", "X", "M", "s", "f", "i"]), "cat": st.sampled_from(_CATS)},
    optional={"name": st.one_of(st.sampled_from(["cudaLaunchKernel", "hipLaunchKernel",
                                                 "Memcpy HtoD", "thread_name",
                                                 "process_labels", "k\u00e9"]),
                                st.text(max_size=10)),
              "pid": st.one_of(st.integers(0, 3), _value),
              "tid": st.one_of(st.integers(0, 9), _value), "ts": _times, "dur": _times,
              "id": _value, "bp": st.sampled_from(["e", 1]),
              "args": st.one_of(_args, _args, st.none())})
_top = st.fixed_dictionaries({}, optional={
    "baseTimeNanoseconds": st.one_of(st.integers(0, 1 << 62), _value),
    "deviceProperties": st.lists(st.fixed_dictionaries({"id": st.integers(0, 3),
                                                        "name": st.sampled_from(["NVIDIA H200",
                                                                                 "AMD MI300X"]),
                                                        "warpSize": st.sampled_from([32, 64])}),
                                 max_size=2),
    "hip_runtime_version": st.integers(0, 10**8), "cuda_runtime_version": st.integers(0, 13000)})


@settings(max_examples=70, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(events=st.lists(_event, max_size=25), top=_top, indent=st.sampled_from([None, 1]),
       split=st.sampled_from([1 << 40, 64]))
def test_generated_events_read_the_same(events, top, indent, split, tmp_path, monkeypatch):
    p = _trace_file(tmp_path, events, top, indent)
    with monkeypatch.context() as m:
        m.setattr(native, "SPLIT_BYTES", split)
        _assert_same(*_both(p, monkeypatch))


def test_the_halves_of_a_split_list_join_up(tmp_path):
    """Two threads read halves; the columns equal a one-thread scan's, by row."""
    p = write_kineto_json(tmp_path / "gen.json", 2000, name_pad=50)
    raw = p.read_bytes()
    one, two = SCAN.scan(raw, 1 << 40), SCAN.scan(raw, 1024)
    assert one[0] == two[0] == len(_json_events(p))
    for f in ("ph", "cat", "name"):
        s1, s2 = one[3], two[3]
        ids1 = memoryview(one[5][f]).cast("i").tolist()
        ids2 = memoryview(two[5][f]).cast("i").tolist()
        assert [s1[i] for i in ids1] == [s2[i] for i in ids2]
    for key in ("correlation", "grid", "External id"):
        assert memoryview(one[6][key][0]).cast("i").tolist() == \
            memoryview(two[6][key][0]).cast("i").tolist()


def test_plain_generated_events_are_read_natively(tmp_path):
    """Events of ordinary types (ints, 3-decimal floats, strings) take the fast path."""
    rng = random.Random(5)
    evs = [{"ph": "X", "cat": rng.choice(_CATS[:10]), "name": f"n{rng.randrange(9)}",
            "pid": rng.randrange(3), "tid": rng.randrange(5),
            "ts": rng.randrange(10**9) / 1000, "dur": rng.randrange(10**5) / 1000,
            "args": {"correlation": i, "device": 0, "grid": [4, 1, 1], "block": [64, 1, 1],
                     "Input Dims": [[2, 3]], "External id": i}} for i in range(200)]
    p = _trace_file(tmp_path, evs, {"baseTimeNanoseconds": 1 << 60}, indent=2)
    got = native.load_native(p)
    assert got is not None and got[1].n == 200
    trace = native_trace(p)
    assert trace is not None
    assert len(trace.kernels) == sum(e["cat"] == "kernel" for e in evs)


def test_times_convert_exactly_as_the_msgspec_path(tmp_path, monkeypatch):
    """More decimals than three, absolute epoch µs, integers past 2^53, exponents."""
    ts = [1694039959123456.789, 1694039959123456, 12.3456789, 5e-4, 1.5e3, 2**60, 0.0005,
          123456789012.0015, -3.25]
    evs = [{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": t,
            "dur": 1.0015} for t in ts]
    p = _trace_file(tmp_path, evs)
    assert native.load_native(p) is not None
    a, b = _both(p, monkeypatch)
    _assert_same(a, b)
    start = a.markers.column("start").to_pylist()
    assert start[0] == math.floor(ts[0]) * 1000 + round((ts[0] - math.floor(ts[0])) * 1000)


# ------------------------------------------------------------------ damaged bytes

def _mutations(raw: bytes, rng: random.Random, n: int):
    tokens = [b'"', b"\\", b"{", b"}", b"[", b"]", b",", b":", b"0", b"-", b"e", b"\xff",
              b"\x00", b"\n", b"\\u", b"null", b"1e999", b"NaN"]
    for _ in range(n):
        b = bytearray(raw)
        for _k in range(rng.randrange(1, 4)):
            i = rng.randrange(len(b))
            op = rng.randrange(4)
            if op == 0:
                b[i] = rng.randrange(256)
            elif op == 1:
                b[i:i] = rng.choice(tokens)
            elif op == 2:
                del b[i:i + rng.randrange(1, 40)]
            else:
                del b[i:]
                break
        yield bytes(b)


def test_damaged_bytes_never_crash_the_scanner(tmp_path):
    raw = gzip.decompress((SAMPLES / "kineto/nvidia-a100-triton-hta/"
                           "triton_example.json.gz").read_bytes())
    rng = random.Random(14)
    declined = read = 0
    for b in _mutations(raw, rng, 3000):
        res = SCAN.scan(b, rng.choice([64, 1 << 40]))  # in-process: a crash fails all
        if res is None:
            declined += 1
        else:
            read += 1
            assert res[0] >= 0
    assert declined and read


def test_damaged_files_give_a_trace_or_one_format_error(tmp_path, monkeypatch):
    raw = write_kineto_json(tmp_path / "g.json", 60).read_bytes()
    rng = random.Random(7)
    p = tmp_path / "m.json"
    for b in _mutations(raw, rng, 80):
        p.write_bytes(b)
        a, c = _both(p, monkeypatch)
        _assert_same(a, c)
