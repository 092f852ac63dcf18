"""Counter matrix, derived metrics, normalisation, ordering, outliers, time grid and
`hipscope report --counters`, checked against the raw sample files read with csv."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from collections import defaultdict

import numpy as np
import pytest

from hipscope.analysis import counters as ca
from hipscope.model import Trace, build_table
from hipscope.model.progress import Cancelled
from hipscope.parsers import open_trace
from tests.conftest import ROOT, SAMPLES, CancelAfter

RPC = SAMPLES / "rocprof-compute"
NCU = SAMPLES / "ncu-csv" / "h200-generated"


def _by_dispatch(m: ca.CounterMatrix, trace: Trace) -> dict[int, int]:
    did = trace.kernels.numpy("dispatch_id")
    return {int(did[kr]): r for r, kr in enumerate(m.kernel_rows)}


# ---- the matrix against the raw files --------------------------------------------------
def test_matrix_matches_rocpd_long_form_pmc_perf():
    path = RPC / "vcopy-MI300X-rocpd"
    raw: dict[tuple[int, str], list[float]] = defaultdict(list)
    with open(path / "pmc_perf.csv", newline="") as f:
        for row in csv.DictReader(f):
            raw[(int(row["Dispatch_ID"]), row["Counter_Name"])].append(float(row["Counter_Value"]))
    trace = open_trace(path)
    m = ca.counter_matrix(trace, derived=False)
    names = {n for _, n in raw}
    dispatches = {d for d, _ in raw}
    assert m.shape == (len(dispatches), len(names))
    assert set(m.column_names()) == names
    rows = _by_dispatch(m, trace)
    cols = {n: j for j, n in enumerate(m.column_names())}
    for (d, n), vals in raw.items():
        assert m.values[rows[d], cols[n]] == pytest.approx(np.mean(vals))
    # per kernel: one kernel name, the mean of its three dispatches
    mk = ca.aggregate_by_kernel(m)
    assert mk.shape == (1, len(names)) and mk.counts.tolist() == [3]
    j = cols["SQ_WAVES"]
    assert mk.values[0, j] == pytest.approx(np.mean(m.values[:, j]))


def _ncu_details_rows():
    text = (NCU / "ncu_details.csv").read_text()
    text = text[text.index('"ID"'):]
    out: dict[tuple[int, str], float] = {}
    for row in csv.DictReader(io.StringIO(text)):
        if not row["Metric Name"]:
            continue
        try:
            out[(int(row["ID"]), row["Metric Name"])] = float(row["Metric Value"].replace(",", ""))
        except ValueError:
            continue                  # non-numeric metric values ("Yes", "SM 9.0")
    return out


def test_matrix_matches_ncu_details_and_keeps_units():
    raw = _ncu_details_rows()
    trace = open_trace(NCU / "ncu_details.csv")
    m = ca.counter_matrix(trace, derived=False)
    rows = _by_dispatch(m, trace)
    cols = {n: j for j, n in enumerate(m.column_names())}
    for (i, n), v in raw.items():
        assert m.values[rows[i], cols[n]] == pytest.approx(v), n
    units = {c.name: c.unit for c in m.columns}
    assert units["Duration"] == "ns" and units["Achieved Occupancy"] == "%"


def test_instances_and_column_selection():
    trace = open_trace(RPC / "vcopy-MI300X-rocpd")
    full = ca.counter_matrix(trace, derived=False)
    no_inst = ca.counter_matrix(trace, derived=False, instances=False)
    n_inst = sum(ca.is_instance_counter(n) for n in full.column_names())
    assert n_inst > 1000 and no_inst.shape[1] == full.shape[1] - n_inst
    sel = ca.select_columns(full, "^tcc_", drop_constant=True, instances=False)
    assert sel.column_names() and all(n.startswith("TCC_") for n in sel.column_names())
    for j in range(sel.shape[1]):
        assert np.nanmax(sel.values[:, j]) > np.nanmin(sel.values[:, j])
    assert ca.select_columns(full, "[unclosed").shape[1] == 0     # bad regex: plain text


# ---- derived metrics on hand numbers -------------------------------------------------------
def _hand_trace(counters: dict[str, list[float]], durations: list[int], units=None,
                meta=None, cus=None, arch="gfx90a") -> Trace:
    n = len(durations)
    start = np.arange(n, dtype=np.int64) * 1_000_000
    kernels = build_table("kernels", {
        "name": [f"k{i % 2}" for i in range(n)], "device": np.zeros(n, np.int16),
        "start": start, "end": start + np.asarray(durations, np.int64),
        "dispatch_id": np.arange(n, dtype=np.int64)})
    names, vals, kidx, us = [], [], [], []
    for name, v in counters.items():
        names += [name] * n
        vals += list(v)
        kidx += list(range(n))
        us += [(units or {}).get(name)] * n
    counters_t = build_table("counters", {"counter": names, "value": np.array(vals, float),
                                          "kernel_index": np.array(kidx, np.int32),
                                          "unit": us})
    devices = build_table("devices", {"index": np.array([0], np.int16), "name": ["test GPU"],
                                      "arch": [arch],
                                      "compute_units": np.array([cus or 0], np.int32)})
    return Trace(kernels=kernels, counters=counters_t, devices=devices, meta=meta or {})


def _derived(m: ca.CounterMatrix, name: str) -> np.ndarray:
    j = m.column_index(name)
    assert m.columns[j].derived and m.columns[j].formula
    return m.values[:, j]


def test_derived_metrics_on_hand_numbers():
    tr = _hand_trace({
        "TCC_HIT_sum": [30, 0], "TCC_MISS_sum": [10, 0],
        "TCC_REQ_sum": [1000, 10],
        "TCC_EA_RDREQ_sum": [100, 0], "TCC_EA_RDREQ_32B_sum": [40, 0],
        "TCC_EA_WRREQ_sum": [50, 10], "TCC_EA_WRREQ_64B_sum": [20, 10],
        "SQ_ACTIVE_INST_VALU": [520, 0], "GRBM_GUI_ACTIVE": [100, 100],
        "SQ_THREAD_CYCLES_VALU": [6400, 0], "SQ_INSTS": [50, 5], "SQ_BUSY_CU_CYCLES": [100, 10],
    }, durations=[1000, 2000], cus=104, meta={"peaks": {"0": {"HBMBw": 1000.0, "L2Bw": 4000.0}}})
    m = ca.counter_matrix(tr)
    np.testing.assert_allclose(_derived(m, "L2 Cache Hit Rate"), [75.0, np.nan])   # 0/0 -> NaN
    np.testing.assert_allclose(_derived(m, "L2 Cache BW"), [128.0, 0.64])           # bytes / ns
    np.testing.assert_allclose(_derived(m, "L2-Fabric Read BW"),
                               [(40 * 32 + 60 * 64) / 1000, 0.0])
    np.testing.assert_allclose(_derived(m, "L2-Fabric Write BW"),
                               [(20 * 64 + 30 * 32) / 1000, 10 * 64 / 2000])
    # gfx90a: one XCD; 100 * 520 / (100 / 1 * 104) = 5 %
    np.testing.assert_allclose(_derived(m, "VALU Utilization"), [5.0, 0.0])
    np.testing.assert_allclose(_derived(m, "VALU Active Threads"), [64 / 5.2, np.nan])
    np.testing.assert_allclose(_derived(m, "IPC"), [0.5, 0.5])
    np.testing.assert_allclose(_derived(m, "Kernel duration"), [1000, 2000])
    cols = {c.name: c for c in m.columns}
    assert cols["L2-Fabric Read BW"].peak == 1000.0 and cols["L2 Cache BW"].peak == 4000.0
    assert cols["L2 Cache Hit Rate"].peak == 100.0 and cols["IPC"].peak is None


def test_derived_metric_needs_its_hardware_constants():
    tr = _hand_trace({"SQ_ACTIVE_INST_VALU": [1, 2], "GRBM_GUI_ACTIVE": [10, 10]},
                     durations=[10, 10], cus=304, arch="gfx942")    # XCD count unknown
    assert "VALU Utilization" not in ca.counter_matrix(tr).column_names()
    tr = _hand_trace({"SQ_ACTIVE_INST_VALU": [80, 8], "GRBM_GUI_ACTIVE": [80, 80]},
                     durations=[10, 10], meta={"sysinfo": {"num_xcd": "8", "cu_per_gpu": "304"}},
                     arch="gfx942")
    np.testing.assert_allclose(_derived(ca.counter_matrix(tr), "VALU Utilization"),
                               [100 * 80 / (10 * 304), 100 * 8 / (10 * 304)])


def test_ncu_bandwidth_formula():
    tr = _hand_trace({"dram__bytes.sum": [4.8e6, 1e6], "gpu__time_duration.sum": [1000, 2000]},
                     durations=[1000, 2000], units={"dram__bytes.sum": "byte"})
    tr = Trace(kernels=tr.kernels, counters=tr.counters, meta={},
               devices=build_table("devices", {"index": np.array([0], np.int16),
                                               "name": ["NVIDIA H200"]}))
    m = ca.counter_matrix(tr)
    np.testing.assert_allclose(_derived(m, "DRAM Bandwidth"), [4800.0, 500.0])
    assert m.columns[m.column_index("DRAM Bandwidth")].peak == ca.PEAK_HBM_GBS["H200"]
    pct = ca.normalise(m, "peak")[:, m.column_index("DRAM Bandwidth")]
    np.testing.assert_allclose(pct, [1.0, 500 / 4800])


def test_real_samples_give_derived_metrics():
    m = ca.counter_matrix(open_trace(RPC / "vcopy-MI300X-rocpd"), instances=False)
    hit = _derived(m, "L2 Cache Hit Rate")
    assert np.all((hit > 0) & (hit < 100))
    bw = _derived(m, "L2-Fabric Read BW")
    assert np.all((bw > 0) & (bw < 5300))        # below the MI300X's HBM peak


# ---- normalisation, ordering, clustering ---------------------------------------------------
def _toy() -> ca.CounterMatrix:
    vals = np.array([[1.0, 10, 5], [2, 20, 5], [3, np.nan, 5], [4, 40, 5]])
    cols = [ca.CounterColumn("a", peak=8.0), ca.CounterColumn("b"), ca.CounterColumn("c")]
    n = len(vals)
    z = np.zeros(n, np.int64)
    return ca.CounterMatrix(vals, cols, list("wxyz"), np.arange(n), np.ones(n, np.int64),
                            "dispatch", z, z + 1, z)


def test_normalisations():
    m = _toy()
    mm = ca.normalise(m, "minmax")
    np.testing.assert_allclose(mm[:, 0], [0, 1 / 3, 2 / 3, 1])
    assert np.isnan(mm[2, 1]) and np.all(mm[:, 2] == 0.5)      # NaN kept; constant -> mid
    zs = ca.normalise(m, "zscore")
    assert zs[:, 0].mean() == pytest.approx(0) and zs[:, 0].std() == pytest.approx(1)
    assert np.all(zs[:, 2] == 0)
    pk = ca.normalise(m, "peak")
    np.testing.assert_allclose(pk[:, 0], [1 / 8, 2 / 8, 3 / 8, 4 / 8])
    assert np.isnan(pk[:, 1]).all()                              # no known peak
    with pytest.raises(ValueError):
        ca.normalise(m, "log")


def test_order_by_column_puts_nan_last():
    m = _toy()
    assert ca.order_by_column(m, 1, descending=True).tolist() == [3, 1, 0, 2]
    assert ca.order_by_column(m, 1, descending=False).tolist() == [0, 1, 3, 2]


def test_clustering_keeps_rows_and_groups_similar_ones():
    rng = np.random.default_rng(1)
    a = rng.normal(0, 0.1, (20, 6))
    b = rng.normal(5, 0.1, (15, 6))
    vals = np.vstack([a, b])[rng.permutation(35)]
    is_b = vals[:, 0] > 2.5
    for max_rows in (600, 10):                   # average linkage, then the PCA fallback
        order = ca.cluster_order(vals, max_rows=max_rows)
        assert sorted(order.tolist()) == list(range(35))
        labels = is_b[order]
        assert np.count_nonzero(labels[1:] != labels[:-1]) == 1   # two contiguous groups


def test_cluster_order_is_cancelled_inside_its_merge_loop():
    vals = np.random.default_rng(2).normal(0, 1, (40, 5))
    stop = CancelAfter(5)
    with pytest.raises(Cancelled):
        ca.cluster_order(vals, cancelled=stop)
    assert stop.calls == 5                        # stopped at the 4th merge of 39
    never = CancelAfter(10**9)
    assert sorted(ca.cluster_order(vals, cancelled=never).tolist()) == list(range(40))
    assert never.calls == 40                      # once up front, once per merge


def test_counter_matrix_is_cancelled():
    tr = open_trace(RPC / "vcopy-MI300X-rocpd")
    full = ca.counter_matrix(tr, cancelled=CancelAfter(10**9))
    for n in range(1, 4):                         # the checks between the pivot's steps
        with pytest.raises(Cancelled):
            ca.counter_matrix(tr, cancelled=CancelAfter(n))
    last = CancelAfter(5)                        # ... and in the derived-metrics loop
    with pytest.raises(Cancelled):
        ca.counter_matrix(tr, cancelled=last)
    assert last.calls == 5 and len(full.columns)


# ---- outliers ------------------------------------------------------------------------------
def test_robust_z():
    z = ca.robust_z(np.array([1.0, 2, 3, 4, 100]))
    assert z[4] == pytest.approx(97 / 1.4826)           # median 3, MAD 1
    z = ca.robust_z(np.array([5.0, 5, 5, 9]))            # MAD 0: mean abs deviation
    assert z[3] == pytest.approx(4 / (1.2533 * 1.0))
    assert np.all(ca.robust_z(np.array([2.0, 2, 2])) == 0)


def test_counter_outliers_find_a_planted_outlier():
    rng = np.random.default_rng(3)
    n = 40
    base = rng.normal(1000, 10, n)
    planted = base.copy()
    planted[17] = 5000
    tr = _hand_trace({"GOOD": base, "PLANTED": planted}, durations=[100] * n)
    out = ca.counter_outliers(tr, top=3, per="dispatch")
    assert out[0]["counter"] == "PLANTED"
    assert out[0]["kernels"][0]["kernel_row"] == 17 and out[0]["kernels"][0]["robust_z"] > 50
    assert len(out[0]["kernels"]) == 3
    good = next(e for e in out if e["counter"] == "GOOD")
    assert good["max_robust_z"] < 5
    assert ca.counter_outliers(_hand_trace({}, durations=[1])) == []


# ---- the time-resolved grid ----------------------------------------------------------------
def test_time_grid_means_overlapping_dispatches():
    vals = np.array([[0.0], [10.0], [4.0]])
    starts = np.array([0, 50, 60], np.int64)
    ends = np.array([40, 100, 70], np.int64)
    m = ca.CounterMatrix(vals, [ca.CounterColumn("x")], ["a", "b", "c"], np.arange(3),
                         np.ones(3, np.int64), "dispatch", starts, ends, np.zeros(3, np.int64))
    g = ca.counter_time_grid(m, 0, 100, 10, method="none")
    row = g.grid[0][0]
    np.testing.assert_allclose(row[:4], 0.0)
    assert np.isnan(row[4])                              # 40-50: nothing runs
    assert row[5] == 10.0 and row[6] == pytest.approx(7.0)   # b and c overlap 60-70
    np.testing.assert_allclose(row[7:], 10.0)
    g2 = ca.counter_time_grid(m, 0, 100, 10, method="minmax")
    assert np.nanmax(g2.grid[0]) <= 1.0


# ---- the CLI -------------------------------------------------------------------------------
def test_report_counters_json_on_rocprof_compute():
    proc = subprocess.run([sys.executable, "-m", "hipscope", "report", "--counters", "--json",
                           str(RPC / "vcopy-MI300X-rocpd")], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    out = rep["counter_outliers"]
    assert out and all({"counter", "unit", "median", "kernels", "max_robust_z"} <= set(e)
                       for e in out)
    zs = [e["max_robust_z"] for e in out]
    assert zs == sorted(zs, reverse=True)
    # the first (cold) dispatch stalls the address unit far more than the two others
    top = next(e for e in out if e["counter"] == "TA_ADDR_STALLED_BY_TC_CYCLES_sum")
    assert top["kernels"][0]["dispatch_id"] == 1


def test_report_counters_text(capsys):
    from hipscope.cli.main import main

    assert main(["report", "--counters", "--no-cache", str(NCU / "ncu_details.csv")]) == 0
    text = capsys.readouterr().out
    assert "Counter outliers" in text and "robust z" in text
