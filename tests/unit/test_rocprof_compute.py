"""rocprof-compute (Omniperf) workload folders: all four back-end layouts in the samples,
opening a file inside, lossy timestamps, bad input. Expected figures come from the raw
CSVs with the csv module, never from the reader."""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from hipscope.parsers import TraceFormatError, find_reader, get_reader, open_trace
from hipscope.parsers._validate import validate
from tests.conftest import ids, sample_dirs

DIRS = sample_dirs("rocprof-compute")
READER = get_reader("rocprof-compute")

# identity columns of the workload CSVs (everything else is a counter)
ID_COLS = {"Dispatch_ID", "Kernel_Name", "GPU_ID", "Grid_Size", "Workgroup_Size",
           "LDS_Per_Workgroup", "Scratch_Per_Workitem", "Arch_VGPR", "Accum_VGPR", "SGPR",
           "Wave_Size", "wave_size", "obj", "sig", "Correlation_ID", "Kernel_ID", "Queue_ID",
           "PID", "TID", "queue-id", "queue-index", "pid", "tid", "Start_Timestamp",
           "End_Timestamp", "DispatchNs", "CompleteNs", "XCC_Index"}


def _read(path: Path):
    return READER.read(path, lambda f: None, lambda: False)


def _rows(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


def _is_ident(col: str) -> bool:
    m = re.match(r"^(.*)_(\d+)$", col)
    return col in ID_COLS or bool(m and m.group(1) in ID_COLS)


def _long(d: Path) -> bool:
    return "Counter_Name" in _rows(d / "pmc_perf.csv")[0]


def _expected(d: Path):
    """Per dispatch (in pmc_perf.csv order): name, start, end; and the counter count."""
    h, rows = _rows(d / "pmc_perf.csv")
    col = {c: i for i, c in reversed(list(enumerate(h)))}
    if "Counter_Name" in col:
        kernels, seen = {}, set()
        for r in rows:
            key = (r[col["GPU_ID"]], r[col["Dispatch_ID"]])
            kernels.setdefault(key, (r[col["Kernel_Name"]], int(r[col["Start_Timestamp"]]),
                                     int(r[col["End_Timestamp"]])))
            if r[col["Counter_Value"]] != "":
                seen.add((key, r[col["Counter_Name"]]))
        return list(kernels.values()), len(seen)
    kern = [(r[col["Kernel_Name"]], int(round(float(r[col["Start_Timestamp"]]))),
             int(round(float(r[col["End_Timestamp"]])))) for r in rows]
    names: set[str] = set()
    files = [d / "pmc_perf.csv"] + sorted(d.glob("pmc_perf_*.csv")) + sorted(d.glob("SQ_*.csv"))
    for f in files:
        fh, _ = _rows(f)
        for c in fh:
            if _is_ident(c):
                continue
            if c == "SQ_ACCUM_PREV_HIRES" and f.stem.startswith("SQ_"):
                c = f.stem + "_ACCUM"
            names.add(c)
    return kern, len(names) * len(kern)


@pytest.mark.parametrize("d", DIRS, ids=ids(DIRS))
def test_sample(d: Path):
    tr = _read(d)
    kern, n_counters = _expected(d)
    assert len(tr.kernels) == len(kern) > 0
    assert tr.kernels.strings("name") == [k[0] for k in kern]
    assert tr.kernels.numpy("start").tolist() == [k[1] for k in kern]
    assert (tr.kernels.numpy("end") - tr.kernels.numpy("start")).tolist() == \
        [k[2] - k[1] for k in kern]
    assert len(tr.counters) == n_counters
    assert tr.counters.numpy("kernel_index").max() == len(kern) - 1
    # every dispatch has the same counter set here (vcopy, one kernel)
    per_kernel = np.bincount(tr.counters.numpy("kernel_index"))
    assert len(set(per_kernel.tolist())) == 1
    assert tr.meta["serialized_replay"] is True
    assert any("not a real timeline" in w for w in tr.warnings)
    # sysinfo → device and meta
    sh, srows = _rows(d / "sysinfo.csv")
    sysinfo = dict(zip(sh, srows[0]))
    dev = tr.devices.row(0)
    assert (dev["name"], dev["arch"], dev["compute_units"]) == (
        sysinfo["gpu_model"], sysinfo["gpu_arch"], int(sysinfo["cu_per_gpu"]))
    assert tr.meta["rocm_version"] == sysinfo["rocm_version"]
    assert tr.meta["command"] == sysinfo["command"]
    h, rows = _rows(d / "pmc_perf.csv")
    assert set(tr.devices.strings("raw_id")) == {r[h.index("GPU_ID")] for r in rows}
    validate(tr)


@pytest.mark.parametrize("d", DIRS, ids=ids(DIRS))
def test_named_counter_values(d: Path):
    tr = _read(d)
    h, rows = _rows(d / "pmc_perf.csv")
    names = tr.counters.strings("counter")
    vals = tr.counters.numpy("value")
    kidx = tr.counters.numpy("kernel_index")
    got = {(names[i], int(kidx[i])): vals[i] for i in range(len(names))}
    if _long(d):
        col = {c: i for i, c in enumerate(h)}
        order = list(dict.fromkeys((r[col["GPU_ID"]], r[col["Dispatch_ID"]]) for r in rows))
        for r in rows[:50]:
            k = order.index((r[col["GPU_ID"]], r[col["Dispatch_ID"]]))
            assert got[(r[col["Counter_Name"]], k)] == float(r[col["Counter_Value"]])
        return
    for c in ("GRBM_GUI_ACTIVE", "SQ_WAVES", "TCC_HIT[0]", "TCP_TCC_READ_REQ_sum"):
        if c in h:
            for k, r in enumerate(rows):
                assert got[(c, k)] == float(r[h.index(c)])
    for f in sorted(d.glob("SQ_*.csv")):
        fh, frows = _rows(f)
        if "SQ_ACCUM_PREV_HIRES" in fh:
            for k, r in enumerate(frows):
                assert got[(f.stem + "_ACCUM", k)] == float(r[fh.index("SQ_ACCUM_PREV_HIRES")])


def test_v1_dispatch_ns_and_roofline():
    d = next(p for p in DIRS if "rocprofv1" in p.name)
    tr = _read(d)
    h, rows = _rows(d / "timestamps.csv")
    exp = [int(r[h.index("Start_Timestamp")]) - int(r[h.index("DispatchNs")]) for r in rows]
    assert (tr.kernels.numpy("start") - tr.kernels.numpy("dispatch_ns")).tolist() == exp
    assert tr.kernels.numpy("pid").tolist() == [int(r[h.index("pid")]) for r in rows]
    rh, rrows = _rows(d / "roofline.csv")
    peaks = tr.meta["peaks"]
    assert sorted(peaks) == sorted(r[0] for r in rrows)
    assert peaks[rrows[0][0]]["HBMBw"] == float(rrows[0][rh.index("HBMBw")])
    assert tr.meta["clock"] == "HSA system clock"
    assert tr.meta["counter_conflicts"]["GRBM_COUNT"]
    validate(tr)


def test_v2_lossy_timestamps():
    d = next(p for p in DIRS if "rocprofv2" in p.name)
    h, rows = _rows(d / "pmc_perf.csv")
    assert "E+" in rows[0][h.index("Start_Timestamp")]
    tr = _read(d)
    assert tr.meta["lossy_timestamps"] is True
    assert any("lossy" in w for w in tr.warnings)
    assert tr.kernels.numpy("start").tolist() == [
        int(float(r[h.index("Start_Timestamp")])) for r in rows]
    validate(tr)


@pytest.mark.parametrize("d", DIRS, ids=ids(DIRS))
def test_open_file_inside_reads_folder(d: Path):
    whole = _read(d)
    for f in sorted(d.glob("*.csv")):
        assert find_reader(f).name == "rocprof-compute", f
    inner = open_trace(sorted(d.glob("*.csv"))[0])
    assert len(inner.kernels) == len(whole.kernels)
    assert len(inner.counters) == len(whole.counters)
    validate(inner)


def test_workloads_name_folder(tmp_path: Path):
    d = next(p for p in DIRS if "rocpd" in p.name)
    shutil.copytree(d, tmp_path / "vcopy" / "MI300X_A1")
    tr = open_trace(tmp_path / "vcopy")
    assert len(tr.kernels) == 3
    validate(tr)


def test_torn_pass_file_and_bad_input(tmp_path: Path):
    d = next(p for p in DIRS if "rocprofv1" in p.name)
    w = tmp_path / "w"
    shutil.copytree(d, w)
    data = (w / "SQ_LEVEL_WAVES.csv").read_bytes()
    (w / "SQ_LEVEL_WAVES.csv").write_bytes(data[: len(data) - 30])
    tr = _read(w)
    assert any("cut short" in x for x in tr.warnings)
    assert tr.meta["dropped"] == {"SQ_LEVEL_WAVES.csv rows": 1}
    validate(tr)
    # garbage in a counter cell: an error naming the file and the line
    h, rows = _rows(d / "pmc_perf.csv")
    rows[1][20] = "12abc"
    with open(w / "pmc_perf.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([h] + rows)
    with pytest.raises(TraceFormatError) as ei:
        _read(w)
    assert str(w / "pmc_perf.csv") in str(ei.value) and "line 3" in str(ei.value)
    # empty pmc_perf.csv
    (w / "pmc_perf.csv").write_bytes(b"")
    with pytest.raises(TraceFormatError, match="empty"):
        _read(w)
    # wrong header
    (w / "pmc_perf.csv").write_text("a,b,c\n1,2,3\n")
    with pytest.raises(TraceFormatError, match="Kernel_Name"):
        _read(w)
    # not a workload folder
    with pytest.raises(TraceFormatError):
        _read(tmp_path)


# --------------------------------------------------------------------------- cut short (T4, W2)
def _copy(d: Path, dst: Path, name: str, data: bytes) -> Path:
    shutil.copytree(d, dst)
    (dst / name).write_bytes(data)
    return dst


WIDE = [p for p in DIRS if "rocprofv1" in p.name or "rocprofv2" in p.name]


@pytest.mark.parametrize("fraction", [0.8, 0.9])
@pytest.mark.parametrize("d", WIDE, ids=ids(WIDE))
def test_pmc_perf_cut_short(tmp_path: Path, d: Path, fraction: float):
    """RELIABILITY T4: pmc_perf.csv cut at 80 %/90 % raised ArrowIndexError (its pass
    files have more dispatches); now the whole rows are read, with warnings."""
    data = (d / "pmc_perf.csv").read_bytes()
    cut = data[: int(len(data) * fraction)]
    w = _copy(d, tmp_path / "w", "pmc_perf.csv", cut)
    whole = _copy(d, tmp_path / "whole", "pmc_perf.csv", cut[: cut.rfind(b"\n") + 1])
    kern, n_counters = _expected(whole)
    tr = _read(w)
    assert 0 < len(kern) < len(_expected(d)[0])
    assert tr.kernels.strings("name") == [k[0] for k in kern]
    assert tr.kernels.numpy("start").tolist() == [k[1] for k in kern]
    assert len(tr.counters) == n_counters
    assert any("cut short" in x and "pmc_perf.csv" in x for x in tr.warnings)
    assert any("pass files hold dispatches that pmc_perf.csv" in x for x in tr.warnings)
    assert tr.meta["dropped"] == {"pmc_perf.csv rows": 1}
    validate(tr)


def test_last_field_cut_or_after_separator(tmp_path: Path):
    """RELIABILITY W2 for the _csv.py readers: a last row without its newline that ends
    right after a separator, or inside its unquoted last field, may be cut: dropped with
    a warning (it was read as whole, its last counter empty or wrong)."""
    d = next(p for p in DIRS if "rocprofv1" in p.name)
    data = (d / "SQ_LEVEL_WAVES.csv").read_bytes().rstrip(b"\n")
    last = data[data.rfind(b"\n") + 1:]
    sep = last.rfind(b",")
    for k, cut in enumerate([sep + 1, sep + 3, len(last)]):
        w = _copy(d, tmp_path / f"w{k}", "SQ_LEVEL_WAVES.csv",
                  data[: len(data) - len(last) + cut])
        tr = _read(w)
        assert tr.meta["dropped"] == {"SQ_LEVEL_WAVES.csv rows": 1}, cut
        assert any("cut short" in x and "SQ_LEVEL_WAVES.csv" in x for x in tr.warnings)
        h, rows = _rows(d / "SQ_LEVEL_WAVES.csv")
        names = tr.counters.strings("counter")
        kidx = tr.counters.numpy("kernel_index")
        # the last dispatch has none of this pass's counters; the others have them all
        assert not {(names[i], int(kidx[i])) for i in range(len(names))} >= \
            {(h[-1], len(rows) - 1)}
        validate(tr)


# --------------------------------------------------------------------------- timestamps (W12)
@pytest.mark.parametrize("change, reason", [
    ("swap", "End_Timestamp < Start_Timestamp"),
    ("nan-start", "an empty or NaN time"),
    ("nan-dispatch", "an empty or NaN DispatchNs"),
])
def test_timestamps_rows_lost_are_warned(tmp_path: Path, change: str, reason: str):
    """RELIABILITY W12: a timestamps.csv row with End < Start (or NaN) silently left its
    kernel out of the queue-delay figures; now a warning counts it."""
    d = next(p for p in DIRS if "rocprofv1" in p.name)
    h, rows = _rows(d / "timestamps.csv")
    s, e, dn = h.index("Start_Timestamp"), h.index("End_Timestamp"), h.index("DispatchNs")
    if change == "swap":
        rows[0][s], rows[0][e] = rows[0][e], rows[0][s]
    elif change == "nan-start":
        rows[0][s] = "NaN"
    else:
        rows[0][dn] = "nan"
    w = tmp_path / "w"
    shutil.copytree(d, w)
    with open(w / "timestamps.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([h] + rows)
    tr = _read(w)
    dns = tr.kernels.column("dispatch_ns").to_pylist()
    assert dns == [None] + [int(r[dn]) for r in rows[1:]]
    msg = [x for x in tr.warnings if "timestamps.csv" in x and "queue-delay" in x]
    assert len(msg) == 1 and f"1 of {len(rows)} kernels" in msg[0] and reason in msg[0]
    assert "line 2" in msg[0]
    validate(tr)
    assert not any("queue-delay" in x for x in _read(d).warnings)


@pytest.mark.parametrize("d", DIRS, ids=ids(DIRS))
def test_counter_values_not_finite_are_left_out(tmp_path: Path, d: Path):
    """T3's rule here too: an inf (or 1e400) counter value is left out with a warning
    naming the file, line and column, never kept as a figure."""
    h, rows = _rows(d / "pmc_perf.csv")
    kern, n_counters = _expected(d)
    if _long(d):
        c = h.index("Counter_Value")
    else:
        c = next(i for i, x in enumerate(h) if not _is_ident(x))
    rows[0][c], rows[1][c] = "inf", "1e400"
    w = tmp_path / "w"
    shutil.copytree(d, w)
    with open(w / "pmc_perf.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([h] + rows)
    tr = _read(w)
    assert np.isfinite(tr.counters.numpy("value")).all()
    assert len(tr.counters) == n_counters - 2
    msg = [x for x in tr.warnings if "not finite" in x]
    assert len(msg) == 1 and "line 2" in msg[0] and h[c] in msg[0] and "left out 2" in msg[0]
    validate(tr)


def test_pmc_perf_cut_in_its_first_row_or_header(tmp_path: Path):
    """Cut inside the first dispatch row: nothing whole is left, one sentence (was
    pyarrow's "Could not skip initial 1 rows"); cut inside the header: one sentence."""
    d = next(p for p in DIRS if "rocprofv1" in p.name)
    data = (d / "pmc_perf.csv").read_bytes()
    nl = data.index(b"\n")
    for cut, where in ((nl + 40, "line 2"), (nl // 2, "line 1")):
        w = _copy(d, tmp_path / f"w{cut}", "pmc_perf.csv", data[:cut])
        with pytest.raises(TraceFormatError) as ei:
            _read(w)
        assert str(w / "pmc_perf.csv") in str(ei.value) and where in str(ei.value)
