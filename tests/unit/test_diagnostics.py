"""Diagnostics (issue 13): every warning also comes as ``{code, severity, message,
where}`` with a stable code, through ``open_trace``, the cache and ``report --json``.

Each planted fault is in a copy of a real sample; the expected counts come from plain
csv code over the planted file, never from hipscope's reader.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from hipscope.cli.main import main
from hipscope.model.diagnostic_codes import PATTERNS
from hipscope.model.diagnostics import GENERIC, diagnostics
from hipscope.parsers import open_trace
from tests.conftest import ROOT, SAMPLES

SDK = SAMPLES / "rocprofv3-csv" / "sdk-docs-2025-08-rocm7.0"
KINETO = SAMPLES / "kineto" / "nvidia-h200-generated" / "h200_torch_kineto_trace.json.gz"
NCU = SAMPLES / "ncu-csv" / "h200-generated" / "ncu_details.csv"
CODE = re.compile(r"(?:coded|add_diagnostic|Diagnostic|warn)\(\s*(?:[\w.]+,\s*)?"
                  r'"([a-z_]+\.[a-z_]+)"')


def planted(tmp_path: Path, n: int = 2) -> tuple[Path, int]:
    """A copy of a real kernel trace whose first ``n`` rows end before they start;
    the number of such rows, counted with plain csv."""
    d = tmp_path / "planted"
    d.mkdir()
    with open(SDK / "kernel_trace.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows[:n]:
        r["Start_Timestamp"], r["End_Timestamp"] = r["End_Timestamp"], r["Start_Timestamp"]
    f = d / "kernel_trace.csv"
    with open(f, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]), quoting=csv.QUOTE_NONNUMERIC)
        w.writeheader()
        w.writerows(rows)
    with open(f, newline="") as fh:
        bad = sum(int(r["End_Timestamp"]) < int(r["Start_Timestamp"])
                  for r in csv.DictReader(fh))
    return f, bad


def coded(diags: list[dict], code: str) -> list[dict]:
    return [d for d in diags if d["code"] == code]


def test_end_before_start_is_a_coded_diagnostic_with_its_count(tmp_path):
    f, bad = planted(tmp_path)
    assert bad == 2
    tr = open_trace(f)
    (d,) = coded(diagnostics(tr), "times.end_before_start")
    assert d["severity"] == "warning"
    assert f"dropped {bad} kernels that end before they start" in d["message"]
    assert d["where"] == str(f)
    assert d["message"] in tr.warnings          # the plain warning is still there
    assert tr.meta["diagnostics"] == [x for x in diagnostics(tr) if x["code"] != GENERIC]


def test_cli_json_has_the_diagnostic_and_text_shows_its_code(tmp_path, capsys):
    f, bad = planted(tmp_path)
    assert main(["report", "--json", str(f)]) == 0
    rep = json.loads(capsys.readouterr().out)
    (d,) = coded(rep["diagnostics"], "times.end_before_start")
    assert f"dropped {bad} kernels that end before they start" in d["message"]
    assert [x["message"] for x in rep["diagnostics"]] == rep["warnings"]
    assert all(set(x) == {"code", "severity", "message", "where"} for x in rep["diagnostics"])
    assert main(["report", str(f)]) == 0
    assert f"Warning [times.end_before_start]: {d['message']}" in capsys.readouterr().out


def test_cached_reopen_keeps_the_diagnostics(tmp_path):
    f, _ = planted(tmp_path)
    first = open_trace(f, use_cache=True)
    second = open_trace(f, use_cache=True)
    assert not first.meta.get("cached") and second.meta.get("cached")
    assert coded(diagnostics(second), "times.end_before_start")
    assert diagnostics(second) == diagnostics(first)


def test_plain_warnings_get_their_code_from_the_message_table():
    """The real sdk-docs folder: its reader's plain warnings get their codes from the
    message table (the memory allocations summarised only: an info, naming its file);
    its processes never overlap (separate runs), coded where it is found."""
    tr = open_trace(SDK)
    diags = diagnostics(tr)
    assert [d["message"] for d in diags] == tr.warnings
    alloc = [d for d in diags if "memory allocation events" in d["message"]]
    assert alloc and all(d["code"] == "trace.summarised_only" and d["severity"] == "info"
                         and d["where"] == "memory_allocation_trace.csv" for d in alloc)
    assert not coded(diags, GENERIC)
    assert len(coded(diags, "merge.separate_runs")) == 1


def test_torn_csv_tail_is_input_cut_short(tmp_path):
    f = tmp_path / "kernel_trace.csv"
    data = (SDK / "kernel_trace.csv").read_bytes()
    f.write_bytes(data + data.splitlines(keepends=True)[1][:40])
    (d,) = coded(diagnostics(open_trace(f)), "input.cut_short")
    assert "cut short" in d["message"] and d["where"].startswith(str(f))


def test_truncated_gzip_is_input_truncated(tmp_path):
    raw = KINETO.read_bytes()
    f = tmp_path / "cut.json.gz"
    f.write_bytes(raw[: len(raw) - 16])          # only the gzip trailer is lost
    with gzip.open(KINETO) as fh:
        json.load(fh)                            # the sample itself is whole
    (d,) = coded(diagnostics(open_trace(f)), "input.truncated")
    assert d["where"] == str(f)


def test_serialised_replay_is_an_info_diagnostic():
    (d,) = coded(diagnostics(open_trace(NCU)), "timeline.synthetic")
    assert d["severity"] == "info"


def test_merging_keeps_each_traces_diagnostics(tmp_path):
    f, bad = planted(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    g = other / "kernel_trace.csv"
    shutil.copy(f, g)
    diags = diagnostics(open_trace([f, g]))
    where = sorted(d["where"] for d in coded(diags, "times.end_before_start"))
    assert where == sorted([str(f), str(g)])


def test_documented_codes_are_the_codes_in_use():
    used = {GENERIC}
    for p in (ROOT / "hipscope").rglob("*.py"):
        used |= set(CODE.findall(p.read_text()))
    used |= {code for code, _sev, _pat in PATTERNS}  # plain warnings by message
    doc = (ROOT / "docs" / "readers.md").read_text()
    section = doc.split("## Diagnostic codes", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([a-z_]+\.[a-z_]+)` \|", section, re.M))
    assert "times.end_before_start" in used and "cache.changed_during_read" in used
    assert listed == used


def test_file_changing_during_a_cached_read_is_coded(tmp_path):
    f, _ = planted(tmp_path)
    with open(f, newline="") as fh:
        header, first = list(csv.reader(fh))[:2]
    did = header.index("Dispatch_Id")
    grown = []

    def progress(_fraction: float) -> None:
        """The profiler appends a row while hipscope has the file open."""
        if not grown:
            grown.append(True)
            with open(f, "a", newline="") as fh:
                csv.writer(fh, quoting=csv.QUOTE_NONNUMERIC).writerow(
                    [*first[:did], 10_000, *first[did + 1:]])

    tr = open_trace(f, progress=progress, use_cache=True)
    (d,) = coded(diagnostics(tr), "cache.changed_during_read")
    assert "changed while the trace was read" in d["message"] and d["message"] in tr.warnings


def test_a_pipe_is_named_in_its_diagnostics(tmp_path):
    """A pipe is read from a temporary copy: its diagnostics name the pipe, like its
    warnings, and never the copy."""
    raw = KINETO.read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(raw[: len(raw) - 16])
    with subprocess.Popen(["cat", str(cut)], stdout=subprocess.PIPE) as cat:
        proc = subprocess.run([sys.executable, "-m", "hipscope", "report", "--json",
                               "/dev/stdin"], stdin=cat.stdout, capture_output=True,
                              text=True, cwd=ROOT, timeout=120, check=False,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    (d,) = coded(rep["diagnostics"], "input.truncated")
    assert d["where"] == "/dev/stdin" and d["message"].startswith("/dev/stdin: ")
    assert d["message"] in rep["warnings"]
    assert "hipscope-pipe-" not in json.dumps(rep["diagnostics"])
