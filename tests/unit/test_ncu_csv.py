"""Nsight Compute CSV reader (details long form, raw wide form) over the real samples,
plus bad input. Expected figures come from the raw CSV with the csv module."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pytest

from hipscope.parsers import TraceFormatError, find_reader, get_reader
from hipscope.parsers._validate import validate
from tests.conftest import sample_dirs

DIRS = sample_dirs("ncu-csv")
FILES = [f for d in DIRS for f in sorted(d.glob("*.csv"))]
READER = get_reader("ncu-csv")
UNIT_NS = {"ns": 1, "nsecond": 1, "us": 1000, "usecond": 1000, "ms": 10**6, "msecond": 10**6}


def _read(path: Path):
    return READER.read(path, lambda f: None, lambda: False)


def _raw(path: Path) -> tuple[list[str], list[list[str]], int]:
    lines = path.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    return rows[0], rows[1:], start


def _num(s: str) -> float | None:
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return None


def _expected(path: Path):
    """Per kernel ID: name, duration ns, block, grid blocks; numeric counter count; rules."""
    h, rows, _ = _raw(path)
    col = {c: i for i, c in enumerate(h)}
    kern: dict[int, dict] = {}
    n_counters = 0
    rules = 0
    if "Metric Name" in col:
        seen = set()
        for r in rows:
            k = kern.setdefault(int(r[0]), {"name": r[col["Kernel Name"]],
                                            "block": r[col["Block Size"]],
                                            "grid": r[col["Grid Size"]], "pid": r[1],
                                            "stream": r[col["Stream"]]})
            name = r[col["Metric Name"]]
            if not name:
                rules += 1
                continue
            v = _num(r[col["Metric Value"]])
            if v is not None and (int(r[0]), name) not in seen:
                seen.add((int(r[0]), name))
                n_counters += 1
            if name == "Duration" and v is not None:
                k["dur"] = round(v * UNIT_NS[r[col["Metric Unit"]]])
    else:
        units = rows[0]
        assert units[0] == ""
        for r in rows[1:]:
            k = kern.setdefault(int(r[0]), {"name": r[col["Kernel Name"]],
                                            "block": r[col["Block Size"]],
                                            "grid": r[col["Grid Size"]], "pid": r[1],
                                            "stream": r[col["Stream"]]})
            for i in range(len(h)):
                if i <= col["CC"]:
                    continue
                if _num(r[i]) is not None:
                    n_counters += 1
            i = col["gpu__time_duration.sum"]
            k["dur"] = round(_num(r[i]) * UNIT_NS[units[i]])
    return kern, n_counters, rules


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_sample(path: Path):
    assert find_reader(path).name == "ncu-csv"
    tr = _read(path)
    kern, n_counters, rules = _expected(path)
    ids = sorted(kern)
    assert len(tr.kernels) == len(ids) > 0
    assert tr.kernels.numpy("dispatch_id").tolist() == ids
    assert tr.kernels.strings("name") == [kern[i]["name"] for i in ids]
    dur = tr.kernels.numpy("end") - tr.kernels.numpy("start")
    assert dur.tolist() == [kern[i]["dur"] for i in ids]
    # a few named kernels: total GPU time per name
    for name in {kern[i]["name"] for i in ids}:
        assert int(dur[[kern[i]["name"] == name for i in ids]].sum()) == \
            sum(kern[i]["dur"] for i in ids if kern[i]["name"] == name)
    # synthetic back-to-back timeline, documented
    assert tr.meta["synthetic_timeline"] is True
    assert tr.kernels.numpy("start")[0] == 0
    assert (tr.kernels.numpy("start")[1:] == tr.kernels.numpy("end")[:-1]).all()
    assert any("no timestamps" in w for w in tr.warnings)
    assert tr.meta["tool"] == "Nsight Compute" and tr.meta["tool_version"] is None
    # launch geometry: grid in work-items = blocks x block size
    for j, i in enumerate(ids):
        b = [int(x) for x in re.findall(r"\d+", kern[i]["block"])]
        g = [int(x) for x in re.findall(r"\d+", kern[i]["grid"])]
        row = tr.kernels.row(j)
        assert [row["block_x"], row["block_y"], row["block_z"]] == b
        assert [row["grid_x"], row["grid_y"], row["grid_z"]] == [gi * bi for gi, bi in zip(g, b)]
        assert row["pid"] == int(kern[i]["pid"]) and row["stream"] == int(kern[i]["stream"])
    assert len(tr.counters) == n_counters
    assert len(tr.meta.get("rules", [])) == rules
    dev = tr.devices.row(0)
    assert (dev["vendor"], dev["arch"]) == ("NVIDIA", "sm_90")
    assert dev["compute_units"] == 132
    validate(tr)


def test_units_and_thousands():
    path = next(f for f in FILES if f.name == "ncu_details.csv")
    tr = _read(path)
    h, rows, _ = _raw(path)
    col = {c: i for i, c in enumerate(h)}
    r = next(r for r in rows if r[0] == "0" and r[col["Metric Name"]] == "DRAM Frequency")
    names = tr.counters.strings("counter")
    units = tr.counters.strings("unit")
    k = tr.counters.numpy("kernel_index")
    i = next(i for i in range(len(names)) if names[i] == "DRAM Frequency" and k[i] == 0)
    assert r[col["Metric Value"]] == "3,189,379,398.59"
    assert tr.counters.numpy("value")[i] == 3189379398.59
    assert units[i] == r[col["Metric Unit"]] == "hz"


def test_raw_device_name():
    path = next(f for f in FILES if f.name == "ncu_raw.csv")
    tr = _read(path)
    h, rows, _ = _raw(path)
    assert tr.devices.strings("name") == [rows[1][h.index("device__attribute_display_name")]]
    assert tr.devices.numpy("memory_bytes").tolist() == [
        int(rows[1][h.index("device__attribute_total_memory")].replace(",", ""))]
    assert np.isin(["gpu__time_duration.sum"], tr.counters.strings("counter")).all()
    validate(tr)


def test_torn_last_line(tmp_path: Path):
    src = next(f for f in FILES if f.name == "ncu_details.csv").read_bytes()
    p = tmp_path / "ncu.csv"
    p.write_bytes(src.rstrip(b"\n")[:-70])
    tr = _read(p)
    assert tr.meta["dropped"] == {"rows": 1}
    assert any("cut short" in w for w in tr.warnings)
    validate(tr)


@pytest.mark.parametrize("content, where", [
    (b"", None),
    (b"==PROF== Connected to process 1\nhello\n==PROF== Disconnected\n", None),
    (b'"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
     b'"Block Size","Grid Size","Device","CC","gpu__time_duration.sum"\n'
     b'"x","1","a","h","k","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","5"\n', "line 2"),
    (b'"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
     b'"Block Size","Grid Size","Device","CC","gpu__time_duration.sum"\n'
     b'"0","1","a","h","k","1","7"\n', "line 2"),
])
def test_bad_input(tmp_path: Path, content: bytes, where: str | None):
    p = tmp_path / "ncu.csv"
    p.write_bytes(content)
    with pytest.raises(TraceFormatError) as ei:
        _read(p)
    assert str(p) in str(ei.value)
    if where:
        assert where in str(ei.value)


# --------------------------------------------------------------------------- cut short (W2)
DETAILS = next(f for f in FILES if f.name == "ncu_details.csv")


def _whole_lines_file(tmp_path: Path, data: bytes) -> Path:
    """The complete lines of ``data`` (what a reader may keep), as a file."""
    p = tmp_path / "whole.csv"
    p.write_bytes(data[: data.rfind(b"\n") + 1])
    return p


def test_cut_right_after_a_separator(tmp_path: Path):
    """RELIABILITY W2: ``head -c 6076`` less its newline ends right after the metric row's
    last separator; that row could be cut and is dropped with a warning."""
    data = DETAILS.read_bytes()[:6076].rstrip(b"\n")
    assert data.endswith(b'",')
    p = tmp_path / "ncu_details.csv"
    p.write_bytes(data)
    tr = _read(p)
    kern, n_counters, _ = _expected(_whole_lines_file(tmp_path, data))
    line = data.count(b"\n") + 1
    assert any("cut short" in w and f"line {line}" in w for w in tr.warnings)
    assert tr.meta["dropped"] == {"rows": 1}
    assert len(tr.kernels) == len(kern) and len(tr.counters) == n_counters
    validate(tr)


def test_every_cut_of_the_last_row_is_dropped(tmp_path: Path):
    """A cut after each separator (and inside each quoted field) of a metric row and of a
    rule row: the row is dropped with a warning, never read as a whole row."""
    data = DETAILS.read_bytes()
    lines = data.split(b"\n")
    rule = next(i for i, ln in enumerate(lines)
                if ln.count(b'","') == 19 and not ln.startswith(b'"ID"'))
    for i in (8, rule):
        head = b"\n".join(lines[:i]) + b"\n"
        expected = _expected(_whole_lines_file(tmp_path, head))[1]
        for cut in range(1, len(lines[i])):
            p = tmp_path / "ncu.csv"
            p.write_bytes(head + lines[i][:cut])
            tr = _read(p)
            assert tr.meta.get("dropped") == {"rows": 1}, (i, cut)
            assert any("cut short" in w for w in tr.warnings)
            assert len(tr.counters) == expected
        p.write_bytes(head + lines[i])          # the whole rule row without its newline
        if i == rule:
            assert "dropped" not in _read(p).meta


# --------------------------------------------------------------------------- duplicate IDs (W7)
def _rewrite_ids(path: Path, out: Path, ident_too: bool = False) -> None:
    """Every data row's ID set to 0 (and, with ident_too, every identity column set to
    the first data row's), preamble, header and units row untouched."""
    h, rows, start = _raw(path)
    first = next(r for r in rows if r[0])
    n_ident = h.index("CC") + 1
    for r in rows:
        if r[0]:
            r[:n_ident] = first[:n_ident] if ident_too else ["0"] + r[1:n_ident]
    lines = path.read_text().splitlines()[:start]
    with open(out, "w", newline="") as fh:
        fh.write("\n".join(lines) + "\n")
        csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([h] + rows)


@pytest.mark.parametrize("ident_too", [False, True], ids=["ids", "all-identity"])
@pytest.mark.parametrize("name", ["ncu_details.csv", "ncu_raw.csv"])
def test_duplicate_ids_keep_launches_apart(tmp_path: Path, name: str, ident_too: bool):
    src = next(f for f in FILES if f.name == name)
    p = tmp_path / name
    _rewrite_ids(src, p, ident_too)
    kern, n_counters, _ = _expected(src)
    tr = _read(p)
    assert len(tr.kernels) == len(kern) == 6
    assert len(tr.counters) == n_counters
    dur = tr.kernels.numpy("end") - tr.kernels.numpy("start")
    assert dur.tolist() == [kern[i]["dur"] for i in sorted(kern)]
    assert tr.kernels.numpy("dispatch_id").tolist() == [0] * 6
    assert any("IDs are shared by 6 launches" in w for w in tr.warnings)
    h, rows, _ = _raw(src)
    if "Rule Name" in h:        # each rule still names its own launch
        rule_kernels = [sorted(kern).index(int(r[0])) for r in rows
                        if not r[h.index("Metric Name")] and r[h.index("Rule Name")]]
        assert [r["kernel_index"] for r in tr.meta["rules"]] == rule_kernels
    validate(tr)
    assert not any("shared" in w for w in _read(src).warnings)


# --------------------------------------------------------------------------- numbers (T3)
def _set_metric(metric: str, value: str, out: Path) -> int:
    """The first ``metric`` row's Metric Value set to ``value``; returns its line."""
    h, rows, start = _raw(DETAILS)
    col = {c: i for i, c in enumerate(h)}
    j = next(j for j, r in enumerate(rows) if r[col["Metric Name"]] == metric)
    rows[j][col["Metric Value"]] = value
    lines = DETAILS.read_text().splitlines()[:start]
    with open(out, "w", newline="") as fh:
        fh.write("\n".join(lines) + "\n")
        csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([h] + rows)
    return start + 2 + j


@pytest.mark.parametrize("value", ["inf", "-inf", "99,999,999,999,999,999,999,999", "1e308"])
def test_duration_out_of_range(tmp_path: Path, value: str):
    """RELIABILITY T3: an inf or 2**80 Duration was an OverflowError; now that kernel has
    zero length and a warning names the line."""
    p = tmp_path / "ncu.csv"
    line = _set_metric("Duration", value, p)
    kern, n_counters, _ = _expected(DETAILS)
    tr = _read(p)
    dur = (tr.kernels.numpy("end") - tr.kernels.numpy("start")).tolist()
    ids = sorted(kern)
    assert dur == [0] + [kern[i]["dur"] for i in ids[1:]]
    assert any(f"line {line}" in w and str(p) in w for w in tr.warnings)
    finite = value not in ("inf", "-inf")
    assert len(tr.counters) == n_counters - (0 if finite else 1)
    validate(tr)


@pytest.mark.parametrize("metric", ["# SMs", "Registers Per Thread",
                                    "Static Shared Memory Per Block"])
@pytest.mark.parametrize("value", ["inf", "99,999,999,999,999,999,999,999"])
def test_other_metric_out_of_range(tmp_path: Path, metric: str, value: str):
    p = tmp_path / "ncu.csv"
    line = _set_metric(metric, value, p)
    tr = _read(p)
    if value == "inf":
        assert any(f"line {line}" in w and metric in w for w in tr.warnings)
    if metric == "# SMs":
        assert tr.devices.row(0)["compute_units"] is None
    assert tr.kernels.row(0)["registers"] is None or metric != "Registers Per Thread"
    validate(tr)


def test_kernel_id_too_large(tmp_path: Path):
    h, rows, start = _raw(DETAILS)
    rows[3][0] = str(2**64)
    p = tmp_path / "ncu.csv"
    with open(p, "w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([h] + rows)
    with pytest.raises(TraceFormatError, match="line 5") as ei:
        _read(p)
    assert str(p) in str(ei.value) and "ID" in str(ei.value)


@pytest.mark.parametrize("value", ["inf", "99,999,999,999,999,999,999,999"])
def test_raw_page_duration_out_of_range(tmp_path: Path, value: str):
    src = next(f for f in FILES if f.name == "ncu_raw.csv")
    h, rows, start = _raw(src)
    kern, _, _ = _expected(src)
    rows[1][h.index("gpu__time_duration.sum")] = value       # rows[0] is the units row
    p = tmp_path / "ncu_raw.csv"
    with open(p, "w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([h] + rows)
    tr = _read(p)
    dur = (tr.kernels.numpy("end") - tr.kernels.numpy("start")).tolist()
    assert dur == [0] + [kern[i]["dur"] for i in sorted(kern)[1:]]
    assert any("line 3" in w and str(p) in w for w in tr.warnings)
    validate(tr)


def test_durations_whose_sum_passes_int64(tmp_path: Path):
    """Each Duration fits in int64 ns, but laid back-to-back they pass 2**63: the kernels
    that would end past it get zero length with a warning (no overflow, no wrap)."""
    h, rows, _ = _raw(DETAILS)
    col = {c: i for i, c in enumerate(h)}
    for r in rows:
        if r[col["Metric Name"]] == "Duration":
            r[col["Metric Unit"]], r[col["Metric Value"]] = "s", "4,000,000,000"
    p = tmp_path / "ncu.csv"
    with open(p, "w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([h] + rows)
    tr = _read(p)
    dur = (tr.kernels.numpy("end") - tr.kernels.numpy("start")).tolist()
    assert dur == [4 * 10**18] * 2 + [0] * 4
    assert int(tr.kernels.numpy("end").max()) == 8 * 10**18
    assert any("4 kernel durations do not fit in 64-bit ns" in w for w in tr.warnings)
    validate(tr)
