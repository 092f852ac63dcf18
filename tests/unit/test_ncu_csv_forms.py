"""Nsight Compute CSV forms recorded with ncu 2025.3.1 on an H200 (tests/data/ncu/,
see tests/data/README.md): the long form of ``--metrics`` (raw metric names, one row
per metric; issue 13 item 3) and ``--print-summary per-kernel|per-gpu`` (item 4).
Expected figures come from the raw CSV read with the csv module."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest

from hipscope.analysis.report import build_report
from hipscope.parsers import TraceFormatError, find_reader, get_reader, open_trace
from hipscope.parsers._validate import validate
from tests.conftest import DATA

NCU = DATA / "ncu"
READER = get_reader("ncu-csv")
UNIT_NS = {"ns": 1, "nsecond": 1, "us": 1000, "usecond": 1000, "ms": 10**6, "msecond": 10**6}
DURATION = ("gpu__time_duration.sum", "Duration", "gpu__time_duration.avg",
            "gpu__time_duration.max", "gpu__time_duration.min")


def _read(path: Path):
    return READER.read(path, lambda f: None, lambda: False)


def _table(path: Path) -> list[dict[str, str]]:
    lines = path.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"')
                 or ln.startswith('"Process ID"'))
    return list(csv.DictReader(lines[start:]))


def _num(s: str) -> float:
    return float(s.replace(",", ""))


def _durations(path: Path) -> dict[int, int]:
    """Per kernel ID: the first duration metric it has (DURATION order), in ns."""
    got: dict[int, dict[str, int]] = defaultdict(dict)
    for r in _table(path):
        if r["Metric Name"] in DURATION:
            got[int(r["ID"])][r["Metric Name"]] = round(_num(r["Metric Value"])
                                                        * UNIT_NS[r["Metric Unit"]])
    return {k: next(v[m] for m in DURATION if m in v) for k, v in got.items()}


LONG = ["ncu_metrics_long.csv", "ncu_metrics_long_avg.csv", "ncu_details_all.csv"]


@pytest.mark.parametrize("name", LONG)
def test_metrics_long_form_durations(name: str):
    """Item 3: ``ncu --csv --metrics gpu__time_duration.sum,...`` is the long form with raw
    metric names; every kernel lasted 0 ns because only ``Duration`` was read."""
    path = NCU / name
    assert find_reader(path).name == "ncu-csv"
    tr = _read(path)
    want = _durations(path)
    ids = sorted(want)
    assert tr.kernels.numpy("dispatch_id").tolist() == ids
    dur = (tr.kernels.numpy("end") - tr.kernels.numpy("start")).tolist()
    assert dur == [want[i] for i in ids]
    assert min(dur) > 0
    assert not any("no duration metric" in w for w in tr.warnings)
    assert build_report(tr)["span_ns"] == sum(want.values())
    validate(tr)


def test_metrics_long_form_registers():
    path = NCU / "ncu_metrics_long.csv"
    regs = {int(r["ID"]): int(r["Metric Value"]) for r in _table(path)
            if r["Metric Name"] == "launch__registers_per_thread"}
    tr = _read(path)
    assert tr.kernels.numpy("registers").tolist() == [regs[i] for i in sorted(regs)]


def test_metrics_long_form_units(tmp_path: Path):
    """A duration printed in usecond (``--print-units auto`` on longer kernels) is scaled."""
    src = NCU / "ncu_metrics_long.csv"
    out = []
    for ln in src.read_text().splitlines(keepends=True):
        if '"gpu__time_duration.sum","ns","' in ln:
            head, value = ln.rstrip("\n").rsplit(',"', 1)
            us = _num(value.rstrip('"')) / 1000
            ln = head.replace('"ns"', '"usecond"') + f',"{us:.3f}"\n'
        out.append(ln)
    p = tmp_path / "ncu_us.csv"
    p.write_text("".join(out))
    want = _durations(p)
    tr = _read(p)
    assert (tr.kernels.numpy("end") - tr.kernels.numpy("start")).tolist() == [
        want[i] for i in sorted(want)]
    assert min(want.values()) > 0


# --------------------------------------------------------------------------- item 4
SUMMARY = ["ncu_summary_per_kernel.csv", "ncu_summary_per_kernel_metrics.csv",
           "ncu_summary_per_gpu_metrics.csv"]


def _summary_expected(path: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for r in _table(path):
        k = out.setdefault(r["Kernel Name"], {"invocations": int(r["Invocations"]),
                                              "metrics": {}})
        k["metrics"][r["Metric Name"]] = (r["Metric Unit"], _num(r["Minimum"]),
                                          _num(r["Maximum"]), _num(r["Average"]))
    return out


@pytest.mark.parametrize("name", SUMMARY)
def test_print_summary_is_read_as_a_summary(name: str):
    """Item 4: ``--print-summary per-kernel`` was refused ("no such line"): it reads as a
    summary (per kernel name: invocations, metric min/max/avg), with no timeline."""
    path = NCU / name
    assert find_reader(path).name == "ncu-csv"
    tr = open_trace(path)
    want = _summary_expected(path)
    assert len(tr.kernels) == 0
    summ = {k["name"]: k for k in tr.meta["kernel_summary"]}
    assert set(summ) == set(want)
    for kname, w in want.items():
        got = summ[kname]
        assert got["invocations"] == w["invocations"]
        assert {m["metric"]: (m["unit"], m["min"], m["max"], m["avg"])
                for m in got["metrics"]} == w["metrics"]
        if "gpu__time_duration.sum" in w["metrics"] or "Duration" in w["metrics"]:
            unit, lo, hi, avg = w["metrics"].get("gpu__time_duration.sum") or \
                w["metrics"]["Duration"]
            d = got["duration_ns"]
            assert (d["min"], d["max"], d["avg"]) == (lo * UNIT_NS[unit], hi * UNIT_NS[unit],
                                                      avg * UNIT_NS[unit])
            assert d["total"] == pytest.approx(avg * UNIT_NS[unit] * w["invocations"])
    assert tr.meta["invocations"] == sum(w["invocations"] for w in want.values())
    assert tr.meta["summary_only"] is True
    assert any("--print-summary" in w and "no timeline" in w for w in tr.warnings)
    assert not any("recorded no kernels" in w for w in tr.warnings)
    assert tr.devices.strings("vendor") == ["NVIDIA"] and tr.devices.strings("arch") == ["sm_90"]
    rep = build_report(tr)
    assert rep["kernel_count"] == 0 and rep["span_ns"] is None
    validate(tr)


def test_print_summary_survives_the_cache(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HIPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    path = NCU / "ncu_summary_per_kernel_metrics.csv"
    first = open_trace(path, use_cache=True)
    again = open_trace(path, use_cache=True)
    assert again.meta.get("cached")
    assert again.meta["kernel_summary"] == first.meta["kernel_summary"]


@pytest.mark.parametrize("edit, where", [
    (lambda r: r[:8] + ["x"] + r[9:], "Invocations"),
    (lambda r: r[:5], "fields like the header"),
])
def test_print_summary_bad_rows_are_one_sentence(tmp_path: Path, edit, where: str):
    lines = (NCU / "ncu_summary_per_kernel_metrics.csv").read_text().splitlines()
    row = next(csv.reader([lines[4]]))
    lines[4] = ",".join(f'"{c}"' for c in edit(row))
    p = tmp_path / "summary.csv"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceFormatError) as ei:
        _read(p)
    msg = str(ei.value)
    assert str(p) in msg and "line 5" in msg and where in msg and "\n" not in msg


@pytest.mark.parametrize("name", LONG + SUMMARY)
def test_both_forms_name_the_profiled_process_and_host(name: str):
    """Raw pages and summaries alike: the process ids, host and process names of the
    rows (plain csv) in the trace's meta."""
    rows = _table(NCU / name)
    meta = _read(NCU / name).meta
    assert meta["pids"] == sorted({int(r["Process ID"]) for r in rows})
    assert meta["process_names"] == sorted({r["Process Name"] for r in rows})
    (host,) = {r["Host Name"] for r in rows}
    assert meta["host"] == host
