"""`hipscope report` as other tools consume it: one JSON object, exit codes, errors."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from hipscope.cli.main import demo_trace_path, main
from tests.conftest import ROOT, SAMPLES

REPORT_KEYS = {"format", "kernel_count", "devices", "span_ns", "gpu_busy_fraction",
               "top_kernels", "queue_delay_ns", "copies", "warnings"}


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hipscope", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def test_report_json_is_one_object_with_the_documented_keys():
    proc = run_cli("report", "--json", str(demo_trace_path()))
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)            # exactly one JSON document
    assert REPORT_KEYS <= set(rep)
    assert rep["format"] == "kineto"
    raw = json.loads(gzip.open(demo_trace_path()).read())
    n_kernels = sum(1 for e in raw["traceEvents"] if e.get("cat") == "kernel")
    assert rep["kernel_count"] == n_kernels
    for k in rep["top_kernels"]:
        assert {"name", "count", "total_ns", "mean_ns", "p50_ns", "p95_ns"} <= set(k)
        assert k["p50_ns"] <= k["p95_ns"]
    assert 0 < rep["gpu_busy_fraction"] <= 1
    assert rep["queue_delay_ns"]["from_api_end"]["count"] > 0


def test_report_text(capsys):
    assert main(["report", str(demo_trace_path())]) == 0
    out = capsys.readouterr().out
    assert "Format:   kineto" in out and "Kernels:" in out


@pytest.mark.parametrize("content", [b"", b"\x00\x01garbage\xff" * 50, b"hello,world\n1,2\n"])
def test_unreadable_input_exits_2_with_one_sentence(tmp_path, content):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    proc = run_cli("report", "--json", str(bad))
    assert proc.returncode == 2
    assert proc.stdout == ""
    err = proc.stderr.strip()
    assert str(bad) in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_missing_path_exits_2(tmp_path):
    proc = run_cli("report", str(tmp_path / "nope.csv"))
    assert proc.returncode == 2 and "nope.csv" in proc.stderr


def test_cache_reopen_gives_the_same_report(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HIPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    path = str(SAMPLES / "legacy-rocprof" / "spatter-kernel-stats" / "results.csv")
    assert main(["report", "--json", path]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(["report", "--json", path]) == 0
    second = json.loads(capsys.readouterr().out)
    assert first == second
    assert any((tmp_path / "cache").iterdir())


def test_list_readers(capsys):
    assert main(["--list-readers"]) == 0
    out = capsys.readouterr().out
    for name in ("rocprofv3-csv", "kineto", "legacy-rocprof"):
        assert name in out


# ------------------------------------------------ every subcommand that opens traces (T1, T2)

KINETO = SAMPLES / "kineto" / "nvidia-h200-generated" / "h200_torch_kineto_trace.json.gz"
ROCPD = ROOT / "tests" / "data" / "rocpd" / "4242_results.db"


def _corrupt_gzip(tmp_path):
    b = bytearray(KINETO.read_bytes())
    b[40] ^= 0xFF                            # RELIABILITY.md T1: zlib.error while sniffing
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b)
    return bad


def _one_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hipscope: "), proc.stderr
    return lines[0]


@pytest.mark.parametrize("argv", [("report", "--json"), ("compare", str(KINETO)),
                                  ("tune", "--propose")])
def test_each_trace_subcommand_refuses_a_corrupt_gzip_in_one_line(tmp_path, argv):
    bad = _corrupt_gzip(tmp_path)
    assert str(bad) in _one_line(run_cli(*argv, str(bad)))


@pytest.mark.parametrize("argv", [("report", "--json"), ("tune", "--propose")])
def test_merging_different_clocks_is_one_line(argv):
    line = _one_line(run_cli(*argv, str(KINETO), str(ROCPD)))
    assert "different clocks" in line and str(ROCPD) in line


def test_a_schema_error_is_one_line_not_a_traceback(tmp_path):
    """RELIABILITY.md T2 (b): a rocpd file that fails the schema check."""
    db = tmp_path / "4242_results.db"
    b = bytearray(ROCPD.read_bytes())
    b[1548] = 0
    db.write_bytes(b)
    proc = run_cli("report", "--json", str(db))
    if proc.returncode != 0:                 # a reader may also keep what is whole, warned
        assert str(db) in _one_line(proc)
    else:
        assert json.loads(proc.stdout)["warnings"]


@pytest.mark.parametrize("argv", [("report",), ("compare", str(ROCPD))])
def test_unknown_reader_is_one_line(argv):
    line = _one_line(run_cli(*argv, "--reader", "nope", str(ROCPD)))
    assert "no reader named 'nope'" in line and "rocpd" in line
