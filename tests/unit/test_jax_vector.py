"""The column-at-a-time routing of JAX / XLA traces (hipscope/parsers/jax/vector.py) gives
the Trace the event-at-a-time loop gives (``HIPSCOPE_JAX_ROWS=1``, the oracle): on every
fixture, the XSpace protobuf, a scaled trace, and generated events with odd values (ids
as strings, bools, NaN, negative durations, unknown phases, unhashable pids), where a
refusal must be the same sentence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.jax import SOURCE, scaled
from hipscope.parsers import TraceFormatError, get_reader
from hipscope.parsers.jax import vector
from tests.conftest import DATA

from .test_pftrace_c import assert_same

FILES = sorted((DATA / "jax").rglob("*.json.gz")) + sorted((DATA / "jax").rglob("*.pb"))


def read(path: Path, rows: bool, monkeypatch):
    monkeypatch.setenv("HIPSCOPE_JAX_ROWS", "1" if rows else "0")
    reader = get_reader("xplane" if path.name.endswith(".pb") else "jax")
    try:
        return reader.read(path, lambda f: None, lambda: False)
    except TraceFormatError as exc:
        return exc


def both(path: Path, monkeypatch):
    fast = read(path, False, monkeypatch)
    assert_same(fast, read(path, True, monkeypatch))
    return fast


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_fixtures_read_the_same_a_column_at_a_time(path, monkeypatch):
    assert not isinstance(both(path, monkeypatch), TraceFormatError)


def test_a_scaled_gpu_trace_reads_the_same(tmp_path, monkeypatch):
    path = tmp_path / "big.trace.json.gz"
    scaled(SOURCE, path, 5000)
    tr = both(path, monkeypatch)
    assert len(tr.kernels) > 1000 and len(tr.api) and len(tr.copies) and len(tr.markers)


def test_the_column_path_is_taken_on_the_fixture(monkeypatch):
    taken = []
    real = vector.collect_columns
    monkeypatch.setattr(vector, "collect_columns",
                        lambda *a: taken.append(real(*a)) or taken[-1])
    read(DATA / "jax/gpu/gpu2.trace.json.gz", False, monkeypatch)
    assert taken == [True]


_META = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:GPU:0"}},
         {"ph": "M", "pid": 1, "tid": 7, "name": "thread_name",
          "args": {"name": "Stream #7(Kernel)"}},
         {"ph": "M", "pid": 1, "tid": 9, "name": "thread_name", "args": {"name": "XLA Ops"}},
         {"ph": "M", "pid": 1, "tid": 5, "name": "thread_name", "args": {"name": "Odd"}},
         {"ph": "M", "pid": 701, "name": "process_name", "args": {"name": "/host:CPU"}},
         {"ph": "M", "pid": 3, "name": "process_name", "args": {"name": "other"}}]
_ODD = st.sampled_from([None, 1, 7, 9, 5, 701, 3, "7", "$$9", " 701", True, 1.0, 2.5, -4,
                        "x", [1], 2**70, "2" * 25])
_NAMES = st.sampled_from(["gemm", "MemcpyH2D", "Memset", "MemoryAlloc", "cuLaunchKernel",
                          "hipLaunchKernel", "hsa_signal", "cudaMemcpy", "$f.py:1 g",
                          "NVTX:step", "op", 3, None])
_ARGS = st.fixed_dictionaries({}, optional={
    "correlation_id": _ODD, "hlo_op": st.sampled_from(["dot.1", 4, None]),
    "hlo_module": st.sampled_from(["jit_f", None]), "device_id": _ODD,
    "kernel_details": st.sampled_from(["regs:32 grid:4,1,1 block:128,1,1", "grid:1,2",
                                       "regs:x", None, 5]),
    "memcpy_details": st.sampled_from(["size:1024", "size:", None]),
    "memset_details": st.sampled_from(["num_bytes:64", None]),
    "cuda_graph_exec_id": st.sampled_from(["3", None])})
_EVENT = st.fixed_dictionaries({"ph": st.sampled_from(["X", "X", "X", "B", "i", ""]),
                                "name": _NAMES, "pid": _ODD, "tid": _ODD},
                               optional={"ts": st.sampled_from([0, 1.5, 1e13, -3, "1", None,
                                                                float("nan"), 2.0005]),
                                         "dur": st.sampled_from([0, 2.25, -1, 1e13, True]),
                                         "args": _ARGS})


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(_EVENT, max_size=40))
def test_generated_events_read_the_same(events, tmp_path, monkeypatch):
    path = tmp_path / "gen.trace.json"
    text = json.dumps({"traceEvents": _META + events + [{}]})
    path.write_text(text)
    both(path, monkeypatch)


@pytest.mark.parametrize("path", [DATA / "jax/gpu/gpu2.trace.json.gz",
                                  DATA / "jax/cpu/vm.xplane.pb"])
def test_the_report_does_not_import_pandas(path):
    from .test_pftrace_cols import assert_report_without_pandas

    assert_report_without_pandas(path)

