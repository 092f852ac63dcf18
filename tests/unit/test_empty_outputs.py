"""Empty but well-formed outputs (issue 13 item 10): one rule for every reader family,
an empty trace loads (exit 0) with a warning that the profiler recorded no kernels.
Was: an empty legacy results.db exited 2 and failed its folder, the results.json beside
it loaded silently, a rocprof-compute folder without dispatches was refused, a rocprofv3
set, a rocpd database, a rocprofv3 JSON, a Perfetto trace and a Kineto trace without
kernels loaded with no word. Each fixture is a real sample (or real recorded output)
emptied of its rows; the Perfetto one is synthesised like the SDK writes it."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from hipscope.cli.main import main
from hipscope.parsers import find_reader, open_trace
from hipscope.parsers._validate import validate
from tests.conftest import DATA, SAMPLES

NO_KERNELS = "the profiler recorded no kernels"


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for p in dst.rglob("*"):
        p.chmod(0o644 if p.is_file() else 0o755)
    return dst


def _header_only(*files: Path) -> None:
    for f in files:
        lines = f.read_text().splitlines()
        f.write_text(lines[0] + "\n" if lines else "")


def _legacy(tmp: Path) -> Path:
    d = _copy(SAMPLES / "legacy-rocprof" / "spatter-kernel-stats", tmp / "legacy")
    with sqlite3.connect(d / "results.db") as con:
        con.execute("DELETE FROM KERN")
    doc = json.loads((d / "results.json").read_text())
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("ph") in (None, "M")]
    (d / "results.json").write_text(json.dumps(doc))
    _header_only(d / "results.csv")
    (d / "results.stats.csv").unlink()
    return d


def _compute(tmp: Path, name: str) -> Path:
    d = _copy(SAMPLES / "rocprof-compute" / name, tmp / name)
    _header_only(*[f for f in d.glob("*.csv") if f.name not in ("sysinfo.csv", "roofline.csv")])
    return d


def _v3csv(tmp: Path) -> Path:
    d = tmp / "v3"
    d.mkdir()
    for name in ("kernel_trace.csv", "hsa_api_trace.csv", "memory_copy_trace.csv"):
        shutil.copy(SAMPLES / "rocprofv3-csv" / "sdk-docs-2025-08-rocm7.0" / name,
                    d / f"77_{name}")
        _header_only(d / f"77_{name}")
    return d


def _rocpd(tmp: Path) -> Path:
    p = tmp / "4242_results.db"
    shutil.copy(DATA / "rocpd" / "4242_results.db", p)
    with sqlite3.connect(p) as con:
        tables = [n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for t in tables:
            if not t.startswith(("rocpd_info", "rocpd_metadata", "rocpd_string", "sqlite")):
                con.execute(f'DELETE FROM "{t}"')
    return p


def _v3json(tmp: Path) -> Path:
    src = SAMPLES / "rocprofv3-json" / "tracelens-908-mi350" / "908_results.json.gz"
    doc = json.loads(gzip.decompress(src.read_bytes()))
    tool = doc["rocprofiler-sdk-tool"][0]
    tool["kernel_symbols"], tool["code_objects"] = [], []
    tool["buffer_records"] = {k: [] for k in tool["buffer_records"]}
    p = tmp / "908_results.json"
    p.write_text(json.dumps(doc))
    return p


def _ncu_header_only(tmp: Path) -> Path:
    src = SAMPLES / "ncu-csv" / "h200-generated" / "ncu_details.csv"
    lines = src.read_text().splitlines()
    p = tmp / "ncu_header.csv"
    p.write_text("\n".join(ln for ln in lines if not ln.startswith('"0"') and not
                           ln[:3].strip('"').isdigit()) + "\n")
    return p


def _ncu_summary_header(tmp: Path) -> Path:
    lines = (DATA / "ncu" / "ncu_summary_per_kernel.csv").read_text().splitlines()
    p = tmp / "ncu_summary.csv"
    p.write_text("\n".join(lines[:4]) + "\n")
    return p


def _pftrace(tmp: Path) -> Path:
    """A rocprofv3-like Perfetto trace with its tracks but no event (tests/unit/pftrace_synth)."""
    from tests.unit.pftrace_synth import MAIN_TID, PID, PROCESS_UUID, SdkLikeWriter

    w = SdkLikeWriter()
    main_track = PROCESS_UUID ^ 0xABCDEF
    w.descriptor(PROCESS_UUID, pid=PID)
    w.descriptor(main_track, parent=PROCESS_UUID, pid=PID, tid=MAIN_TID)
    w.descriptor(88, name='STREAM [" 0 "] ', parent=PROCESS_UUID)
    w.start_sequence(main_track)
    p = tmp / f"{PID}_results.pftrace"
    w.save(p)
    return p


def _kineto(tmp: Path) -> Path:
    p = tmp / "empty.pt.trace.json"
    p.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [
        {"id": 0, "name": "NVIDIA H200", "computeMajor": 9, "computeMinor": 0}],
        "traceEvents": [], "traceName": "empty"}))
    return p


CASES = {
    "legacy results.db": (lambda t: _legacy(t) / "results.db", "legacy-rocprof"),
    "legacy results.json": (lambda t: _legacy(t) / "results.json", "legacy-rocprof"),
    "legacy results.csv": (lambda t: _legacy(t) / "results.csv", "legacy-rocprof"),
    "legacy folder": (_legacy, "legacy-rocprof"),
    "rocprof-compute rocprofv1": (lambda t: _compute(t, "vcopy-MI200-rocprofv1"),
                                  "rocprof-compute"),
    "rocprof-compute rocpd": (lambda t: _compute(t, "vcopy-MI300X-rocpd"), "rocprof-compute"),
    "rocprofv3 csv folder": (_v3csv, "rocprofv3-csv"),
    "rocprofv3 csv file": (lambda t: _v3csv(t) / "77_kernel_trace.csv", "rocprofv3-csv"),
    "ncu nothing profiled": (lambda t: DATA / "ncu" / "ncu_no_kernels.csv", "ncu-csv"),
    "ncu header only": (_ncu_header_only, "ncu-csv"),
    "ncu summary header only": (_ncu_summary_header, "ncu-csv"),
    "rocpd": (_rocpd, "rocpd"),
    "rocprofv3 json": (_v3json, "rocprofv3-json"),
    "pftrace": (_pftrace, "pftrace"),
    "kineto": (_kineto, "kineto"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_empty_output_loads_with_one_warning(tmp_path: Path, case: str, capsys):
    make, reader = CASES[case]
    path = make(tmp_path)
    assert find_reader(path).name == reader
    tr = open_trace(path)
    assert len(tr.kernels) == 0
    said = [w for w in tr.warnings if NO_KERNELS in w]
    assert len(said) == 1, tr.warnings
    validate(tr)
    assert main(["report", "--no-cache", "--json", str(path)]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["kernel_count"] == 0
    assert sum(NO_KERNELS in w for w in rep["warnings"]) == 1


def test_real_ncu_output_with_no_kernels():
    """ncu 2025.3.1 with a -k filter that matched nothing (recorded on the H200)."""
    text = (DATA / "ncu" / "ncu_no_kernels.csv").read_text()
    assert "==WARNING== No kernels were profiled." in text and '"ID"' not in text
    tr = open_trace(DATA / "ncu" / "ncu_no_kernels.csv")
    assert any("No kernels were profiled" in w for w in tr.warnings)
