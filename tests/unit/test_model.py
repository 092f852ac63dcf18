"""The canonical model: tables, nulls, links, merging, validation, report figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from hipscope.analysis.queue_delay import queue_delays
from hipscope.analysis.report import build_report
from hipscope.analysis.stats import group_stats, union_length
from hipscope.model import (
    SchemaError,
    Trace,
    build_table,
    link_by_correlation,
    merge_traces,
    nullable,
)
from hipscope.parsers._validate import validate

META = {"format": "test", "sources": ["mem"], "clock": "test clock"}


def small_trace(pid: int = 7, host: str = "h") -> Trace:
    api = build_table("api", {
        "name": ["hipLaunchKernel", "hipGraphLaunch", "hipLaunchKernel", "hipMemcpy"],
        "domain": ["HIP_RUNTIME_API"] * 4,
        "start": np.array([0, 100, 200, 300]), "end": np.array([10, 110, 210, 390]),
        "correlation_id": np.array([1, 2, 3, 4]), "pid": np.full(4, pid),
        "tid": np.full(4, 11),
    })
    kc = np.array([1, 2, 2, 3, 99])
    link = link_by_correlation(kc, np.full(5, pid), api.numpy("correlation_id"),
                               api.numpy("pid"))
    kernels = build_table("kernels", {
        "name": ["a", "b", "b", "a", "orphan"], "device": np.zeros(5, dtype=np.int16),
        "start": np.array([20, 120, 130, 205, 400]), "end": np.array([30, 125, 140, 300, 410]),
        "correlation_id": kc, "pid": np.full(5, pid), "api_index": nullable(link),
    })
    copies = build_table("copies", {
        "direction": ["HtoD", "DtoH"], "start": np.array([310, 350]),
        "end": np.array([340, 380]), "bytes": [4096, None], "device": np.zeros(2, np.int16),
    })
    devices = build_table("devices", {"index": [0], "name": ["AMD Instinct MI300X"],
                                      "raw_id": ["Agent 2"], "host": [host]})
    return Trace(kernels=kernels, api=api, copies=copies, devices=devices,
                 meta={**META, "pids": [pid]})


def test_optional_columns_absent_are_null_not_stored():
    t = small_trace()
    assert "grid_x" not in t.kernels.present
    assert not t.kernels.has("grid_x")
    assert t.kernels.column("grid_x").null_count == len(t.kernels)
    assert np.isnan(t.kernels.numpy("grid_x")).all()


def test_names_are_categoricals():
    t = small_trace()
    assert pa.types.is_dictionary(t.kernels.data.schema.field("name").type)
    codes, cats = t.kernels.codes("name")
    assert sorted(cats) == ["a", "b", "orphan"]
    assert [cats[c] for c in codes] == ["a", "b", "b", "a", "orphan"]


def test_link_by_correlation_is_per_pid():
    api_corr, api_pid = np.array([5, 5, 6]), np.array([1, 2, 2])
    got = link_by_correlation(np.array([5, 5, 6, 7]), np.array([2, 1, 1, 2]), api_corr, api_pid)
    assert got.tolist() == [1, 0, -1, -1]


def test_unknown_and_missing_columns_rejected():
    with pytest.raises(SchemaError):
        build_table("kernels", {"name": ["a"], "device": [0], "start": [0], "end": [1],
                                "bogus": [1]})
    with pytest.raises(SchemaError):
        build_table("kernels", {"name": ["a"], "device": [0], "start": [0]})


def test_validate_catches_broken_links_and_devices():
    t = small_trace()
    validate(t)
    bad = Trace(**{**t.tables(), "meta": t.meta,
                   "kernels": build_table("kernels", {
                       "name": ["a"], "device": [3], "start": [0], "end": [1]})})
    with pytest.raises(SchemaError, match="devices"):
        validate(bad)
    bad_end = build_table("kernels", {"name": ["a"], "device": [0], "start": [5], "end": [1]})
    with pytest.raises(SchemaError, match="ends before"):
        validate(Trace(**{**t.tables(), "meta": t.meta, "kernels": bad_end}))


def test_merge_renumbers_links_and_devices():
    a, b = small_trace(pid=7, host="n1"), small_trace(pid=8, host="n2")
    m = merge_traces([a, b])
    validate(m)
    assert len(m.kernels) == 10 and len(m.api) == 8 and len(m.devices) == 2
    api_idx = m.kernels.numpy("api_index")
    # second trace's links point into the second half of the api table, same pid
    linked = ~np.isnan(api_idx)
    k_pid = m.kernels.numpy("pid")
    a_pid = m.api.numpy("pid")
    assert (a_pid[api_idx[linked].astype(int)] == k_pid[linked]).all()
    assert sorted(set(m.kernels.numpy("device").tolist())) == [0, 1]


def test_queue_delay_excludes_graph_launch_kernels():
    t = small_trace()
    d = queue_delays(t)
    # kernels 0 and 3 launched by hipLaunchKernel; 1, 2 by hipGraphLaunch; 4 unlinked
    assert d.kernel_rows.tolist() == [0, 3]
    assert d.graph_rows.tolist() == [1, 2]
    assert d.from_api_start.tolist() == [20, 5]
    assert d.from_api_end.tolist() == [10, -5]   # kernel 3 began before its call returned


def test_report_figures_by_hand():
    t = small_trace()
    rep = build_report(t)
    json.dumps(rep, allow_nan=False)
    assert rep["kernel_count"] == 5
    assert rep["span_ns"] == 410 - 0
    # device 0 kernels: [20,30] [120,125] [130,140] [205,300] [400,410] -> 10+5+10+95+10
    assert rep["gpu_busy_fraction"] == pytest.approx(130 / (410 - 20))
    top = rep["top_kernels"][0]
    assert (top["name"], top["count"], top["total_ns"]) == ("a", 2, 105)
    assert rep["queue_delay_ns"]["from_api_end"] == {"p50": 2, "p95": 9, "max": 10, "count": 2}
    assert rep["queue_delay_ns"]["graph_launch_kernels"] == 2
    hto = {c["direction"]: c for c in rep["copies"]}
    assert hto["HtoD"]["bytes"] == 4096 and hto["DtoH"]["bytes"] is None


@pytest.mark.parametrize("vals", [
    np.random.default_rng(2).integers(1, 10_000, 1000),            # one int64 sort key
    np.random.default_rng(2).integers(-500, 500, 1000),            # negative: lexsort
    np.random.default_rng(2).integers(1, 10_000, 1000) + 2**60,    # too wide: lexsort
    np.random.default_rng(2).random(1000) * 100,                   # floats: lexsort
])
def test_group_stats_matches_numpy(vals):
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 5, 1000).astype(np.int32)
    gs = group_stats(codes, list("abcde"), vals)
    for i, name in enumerate(gs.names):
        v = vals[codes == "abcde".index(name)]
        assert gs.count[i] == len(v)
        assert gs.total[i] == pytest.approx(v.astype(np.float64).sum(), rel=1e-12)
        assert gs.min[i] == pytest.approx(v.min()) and gs.max[i] == pytest.approx(v.max())
        assert gs.p95[i] == pytest.approx(np.quantile(v, 0.95))
        assert gs.p50[i] == pytest.approx(np.median(v))


def test_union_length_overlaps_and_nesting():
    s = np.array([0, 5, 20, 21, 40])
    e = np.array([10, 8, 30, 25, 41])
    assert union_length(s, e) == 10 + 10 + 1


# ---- no pandas on the read path (pyarrow's pandas shim: 0.4-0.8 s per fresh process)
_NO_PANDAS = """
import sys
from hipscope.parsers import open_trace
for p in sys.argv[1:]:
    t = open_trace(p)
    assert len(t.kernels), p
    t.kernels.numpy("start"), t.kernels.codes("name"), t.kernels.valid("queue")
print("pandas" in sys.modules)
"""


def test_reading_a_csv_set_and_a_rocpd_database_does_not_import_pandas():
    from tests.conftest import DATA, ROOT, SAMPLES

    args = [str(SAMPLES / "rocprofv3-csv" / "sdk-docs-2025-08-rocm7.0"),
            str(DATA / "rocpd" / "4242_results.db")]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", _NO_PANDAS, *args], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize("values, mask", [
    (np.array([3, -1, 7], np.int64), None),
    (np.array([3, -1, 7], np.int32), np.array([False, True, False])),
    (np.array([1.5, -2.0, 2.0]), np.array([False, False, True])),
    (np.array([True, False, True, True, False, False, True, False, True]), None),
    (np.array([True, False, True]), np.array([True, False, False])),
    (np.arange(20, dtype=np.int16)[::3], None),                       # strided
    (np.zeros(0, np.int64), None),
])
def test_from_numpy_equals_pa_array(values, mask):
    from hipscope.model.table import from_numpy

    arr = from_numpy(values, mask)
    arr.validate(full=True)
    assert arr.equals(pa.array(values, mask=mask))


@pytest.mark.parametrize("arr", [
    pa.array([1, None, 3], pa.int64()), pa.array([1, 2, 3], pa.int32()),
    pa.array([1.0, None, 3.5]), pa.array([True, None, False, True]),
    pa.array(list(range(20)), pa.int16()).slice(5, 9),                # offset
    pa.array([None, 5, None, 7], pa.int64()).slice(1, 3),
    pa.nulls(4, pa.int64()),
])
def test_to_numpy_and_valid_mask_equal_pyarrow(arr):
    from hipscope.model.table import to_numpy, valid_mask

    fill = False if pa.types.is_boolean(arr.type) else -9
    want = arr.fill_null(pa.scalar(fill, arr.type)).to_numpy(zero_copy_only=False)
    got = to_numpy(arr, fill)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert np.array_equal(valid_mask(arr), arr.is_valid().to_numpy(zero_copy_only=False))


def test_string_array_equals_pa_array():
    from hipscope.model.table import scalar, string_array

    vals = ["a", None, "", "ünïcode", "x" * 300]
    assert string_array(vals).equals(pa.array(vals, pa.string()))
    assert string_array([]).equals(pa.array([], pa.string()))
    assert string_array(["a", 1]) is None                   # not all text: pa.array decides
    assert scalar("x").equals(pa.scalar("x")) and scalar(3, pa.int32()).equals(
        pa.scalar(3, pa.int32()))
