"""What a first open of a big rocprofv3 CSV runs imports no pandas (issue 14 "first
open": pyarrow's pandas shim costs a fresh process 0.6-0.9 s): the C scanner's name
dictionaries, the report's analyses, a timeline's empty tables and the reopen from the
cache all stay off it."""

from __future__ import annotations

import os
import subprocess
import sys

from benchmarks.gen_rocprofv3_csv import write_kernel_trace
from tests.conftest import ROOT

_FIRST_OPEN = """
import sys
from hipscope.parsers import open_trace
from hipscope.analysis.report import build_report
from hipscope.analysis import lod
for _ in range(2):                              # a first open, then from the cache
    t = open_trace(sys.argv[1], use_cache=True)
    assert len(t.kernels) > 10_000 and len(t.api) > 10_000
    build_report(t)
    for name in ("kernels", "api", "copies", "markers"):   # what the timeline asks
        getattr(t, name).numpy("start", fill=0), getattr(t, name).numpy("end", fill=0)
    lod.prepare(t, "queue", "name")
print(t.meta.get("cached"), "pandas" in sys.modules)
"""


def test_a_first_open_of_a_big_csv_set_imports_no_pandas(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    k = run / "7_kernel_trace.csv"
    write_kernel_trace(k, 30_000, seed=3, api_path=run / "7_hip_api_trace.csv")
    assert k.stat().st_size > 4 << 20            # big enough for the C scanner
    env = dict(os.environ, PYTHONPATH=str(ROOT), HIPSCOPE_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", _FIRST_OPEN, str(run)], env=env,
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"], out.stderr
