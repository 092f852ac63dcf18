"""Kineto JSON decoded a piece at a time (parsers/kineto/decode.py ``decode_chunked``,
the path of big files: memory) gives the same trace as one whole decode: on every real
Kineto sample and on generated files, with pieces small enough that every file is cut
many times; compact JSON is one piece; files a piece of which fails (odd value types, a
text cut short) are decoded whole exactly as before."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from benchmarks.gen_kineto import write_kineto_json
from hipscope.parsers import get_reader
from hipscope.parsers.kineto import decode, native
from tests.conftest import DATA, SAMPLES

READER = get_reader("kineto")
KINETO_SAMPLES = sorted((SAMPLES / "kineto").glob("*/*.json.gz"))
TABLES = ("kernels", "api", "copies", "markers", "counters", "devices", "queues", "streams",
          "samples")


def _read(path: Path):
    return READER.read(path, lambda f: None, lambda: False)


def _both(path: Path, monkeypatch, chunk: int = 2048):
    """(trace read in pieces of ``chunk`` bytes, trace decoded whole), by msgspec."""
    monkeypatch.setattr(native, "_kinscan", None)   # the C scanner would read them first
    monkeypatch.setattr(decode, "CHUNK_BYTES", chunk)
    calls = []
    real = decode.decode_chunked
    monkeypatch.setattr(decode, "decode_chunked", lambda buf: calls.append(1) or real(buf))
    cut = _read(path)
    assert calls, "the chunked decoder was not tried"
    monkeypatch.setattr(decode, "decode_chunked", lambda buf: None)
    return cut, _read(path)


def _assert_same(a, b) -> None:
    for name in TABLES:
        x, y = getattr(a, name).data, getattr(b, name).data
        assert x.schema == y.schema, name
        assert x.equals(y), name
    assert a.meta == b.meta


@pytest.mark.parametrize("path", KINETO_SAMPLES, ids=lambda p: p.parent.name + "/" + p.name)
def test_every_kineto_sample_reads_the_same_in_pieces(path, monkeypatch, tmp_path):
    plain = tmp_path / path.name.removesuffix(".gz")  # plain files are memory-mapped
    plain.write_bytes(gzip.decompress(path.read_bytes()))
    for p in (path, plain):
        _assert_same(*_both(p, monkeypatch))


def test_pieces_are_decoded_and_match_the_whole_decode(tmp_path, monkeypatch):
    p = write_kineto_json(tmp_path / "gen.json", 3000)
    monkeypatch.setattr(decode, "CHUNK_BYTES", 4096)
    buf = p.read_bytes()
    top = decode.decode_chunked(buf)
    assert top is not None
    whole = decode._decode_strict(buf)
    assert top == whole
    assert len(top.traceEvents) == len(json.loads(buf)["traceEvents"])
    _assert_same(*_both(p, monkeypatch, chunk=4096))


def test_keys_after_the_events_are_kept(tmp_path, monkeypatch):
    doc = {"schemaVersion": 1, "traceEvents": [
        {"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": i, "dur": 1,
         "args": {"device": 0, "stream": 7, "correlation": i}} for i in range(50)],
        "baseTimeNanoseconds": 1_700_000_000_000_000_000, "traceName": "t"}
    p = tmp_path / "t.json"
    p.write_text(json.dumps(doc, indent=2))
    monkeypatch.setattr(decode, "CHUNK_BYTES", 256)
    top = decode.decode_chunked(p.read_bytes())
    assert top is not None and len(top.traceEvents) == 50
    assert top.baseTimeNanoseconds == doc["baseTimeNanoseconds"] and top.schemaVersion == 1
    assert top.traceName == "t"


@pytest.mark.parametrize("case", ["compact", "odd_type_late", "cut_short"])
def test_files_that_cannot_be_cut_are_decoded_whole(tmp_path, monkeypatch, case):
    evs = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": i,
            "dur": 1, "args": {"device": 0, "stream": 7, "correlation": i}}
           for i in range(200)]
    if case == "odd_type_late":
        evs[-1]["args"] = ["not", "an", "object"]
    text = json.dumps({"schemaVersion": 1, "traceEvents": evs},
                      indent=None if case == "compact" else 2)
    if case == "cut_short":
        text = text[:-40]
    p = tmp_path / "t.json"
    p.write_text(text)
    monkeypatch.setattr(decode, "CHUNK_BYTES", 512)
    top = decode.decode_chunked(p.read_bytes())
    if case == "compact":  # no line ends to cut at: one piece, the whole list
        assert top == decode._decode_strict(p.read_bytes())
    else:
        assert top is None
    _assert_same(*_both(p, monkeypatch, chunk=512))


@pytest.mark.parametrize("path", [DATA / "kineto-2021" / "tb_plugin_2021_v100.json",
                                  SAMPLES / "kineto" / "nvidia-a100-event-sync-hta" /
                                  "event_sync_trace.json.gz"], ids=["2021", "event-sync"])
def test_the_report_of_a_kineto_trace_does_not_import_pandas(path):
    from .test_pftrace_cols import assert_report_without_pandas

    assert_report_without_pandas(path)
