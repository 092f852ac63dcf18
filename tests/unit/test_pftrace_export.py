"""The pftrace exporter's bytes: one encoder per table gives the file the single-pass
encoder gave (its digest, taken at commit 576b9aa before the split), whatever the
chunk size, and a file whose packets read back with perfetto's own protobuf classes."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb2

from hipscope.export import pftrace_writer, write_pftrace
from hipscope.model import Trace, build_table

# md5 of write_pftrace(_trace()) by hipscope/export/pftrace_writer.py at 576b9aa
DIGEST_576B9AA = "2f75f6662983fd099c96bdc825aa1789"


def _trace(n: int = 3000, seed: int = 7) -> Trace:
    """Kernels overlapping on their streams (extra lanes), zero-length ones, nulls,
    copies of every direction, API calls of several domains launching them, markers."""
    rng = np.random.default_rng(seed)
    na = n
    a_start = np.sort(rng.integers(0, 10 * n, na))
    api = build_table("api", {
        "name": [f"hip{i % 7}" for i in range(na)],
        "domain": [("HIP_RUNTIME_API", "HSA_CORE_API", "RCCL_API", "other")[i % 4]
                   for i in range(na)],
        "start": a_start, "end": a_start + rng.integers(0, 50, na),
        "pid": [None if i % 97 == 0 else 1 + i % 2 for i in range(na)],
        "tid": [None if i % 89 == 0 else 10 + i % 3 for i in range(na)],
        "correlation_id": np.arange(na)})
    k_start = a_start + rng.integers(5, 40, n)
    kernels = build_table("kernels", {
        "name": [f"kernel_{i % 11}" for i in range(n)],
        "device": (np.arange(n) % 2).astype(np.int16),
        "start": k_start, "end": k_start + rng.integers(0, 80, n),
        "queue": [None if i % 13 == 0 else i % 3 for i in range(n)],
        "stream": [None if i % 17 == 0 else i % 4 for i in range(n)],
        "api_index": [None if i % 5 == 0 else i for i in range(n)],
        "correlation_id": np.arange(n), "grid_x": rng.integers(1, 1 << 20, n),
        "block_x": [None if i % 3 else 256 for i in range(n)],
        "vgpr": rng.integers(0, 512, n), "lds_bytes": rng.integers(0, 1 << 16, n)})
    nc = n // 10
    c_start = np.sort(rng.integers(0, 10 * n, nc))
    copies = build_table("copies", {
        "direction": [("HtoD", "DtoH", "DtoD", "memset")[i % 4] for i in range(nc)],
        "start": c_start, "end": c_start + rng.integers(0, 30, nc),
        "bytes": rng.integers(1, 1 << 30, nc), "api_index": np.arange(nc) * 3 + 1,
        "src_device": [i % 2 for i in range(nc)], "dst_device": [1 - i % 2 for i in range(nc)],
        "device": [i % 2 for i in range(nc)]})
    nm = n // 20
    m_start = np.sort(rng.integers(0, 10 * n, nm))
    markers = build_table("markers", {
        "name": [f"range{i % 5}" for i in range(nm)], "domain": ["roctx"] * nm,
        "start": m_start, "end": m_start + rng.integers(0, 500, nm), "pid": [1] * nm,
        "tid": [10] * nm, "depth": [0] * nm,
        "device": [None if i % 2 else 0 for i in range(nm)]})
    devices = build_table("devices", {"index": np.array([0, 1], np.int16),
                                      "name": ["GPU A", "GPU B"]})
    return Trace(kernels=kernels, api=api, copies=copies, markers=markers, devices=devices,
                 meta={"format": "test", "sources": [], "clock": "CLOCK_BOOTTIME"})


def _md5(path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def test_bytes_equal_the_single_pass_encoder(tmp_path):
    out = tmp_path / "t.pftrace"
    write_pftrace(_trace(), out)
    assert _md5(out) == DIGEST_576B9AA


def test_chunk_size_does_not_change_the_bytes(tmp_path, monkeypatch):
    a, b = tmp_path / "a.pftrace", tmp_path / "b.pftrace"
    write_pftrace(_trace(), a)
    monkeypatch.setattr(pftrace_writer, "CHUNK", 777)
    write_pftrace(_trace(), b)
    assert a.read_bytes() == b.read_bytes()


def test_packets_read_with_protobuf(tmp_path):
    out = tmp_path / "t.pftrace"
    src = _trace(600)
    write_pftrace(src, out)
    t = pb2.Trace.FromString(out.read_bytes())
    ev = [p.track_event for p in t.packet if p.HasField("track_event")]
    begins = sum(e.type in (1, 3) for e in ev)
    assert begins == len(src.kernels) + len(src.api) + len(src.copies) + len(src.markers)
    assert sum(e.type == 2 for e in ev) == begins - sum(e.type == 3 for e in ev)
    linked = sum(1 for v in src.kernels.strings("api_index") if v is not None) + len(src.copies)
    assert sum(len(e.terminating_flow_ids) for e in ev) == linked
    assert sum(len(e.flow_ids) for e in ev) == linked


def test_cancel_leaves_no_file(tmp_path):
    from hipscope.model.progress import Cancelled

    out = tmp_path / "t.pftrace"
    with pytest.raises(Cancelled):
        write_pftrace(_trace(300), out, cancelled=lambda: True)
    assert not out.exists() and not list(tmp_path.iterdir())
