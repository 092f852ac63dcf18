"""The hipscope program exits without a last collection of every object (cli/main.py
``entry``), and numpy's unique is replaced on the readers' hot paths by a count table
(hipscope/model/table.py ``distinct``)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from hipscope.model.table import distinct
from tests.conftest import ROOT, SAMPLES

CSV = SAMPLES / "rocprofv3-csv" / "sdk-docs-2025-08-rocm7.0" / "kernel_trace.csv"


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                   np.uint64])
def test_distinct_is_numpys_unique(dtype):
    rng = np.random.default_rng(7)
    info = np.iinfo(dtype)
    for lo, hi, n in [(0, 9, 1000), (int(info.min), int(info.min) + 300, 500),
                      (int(info.max) - 300, int(info.max), 500), (0, 0, 10),
                      (int(info.min), int(info.max), 50)]:
        lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
        v = rng.integers(lo, hi, size=n, endpoint=True, dtype=dtype)
        got, want = distinct(v), np.unique(v)
        assert got.dtype == want.dtype and np.array_equal(got, want), (lo, hi)
    assert len(distinct(np.zeros(0, dtype))) == 0


def test_distinct_of_other_values_is_numpys_unique():
    for v in (np.array([2.5, -1.0, 2.5]), np.array(["b", "a", "b"])):
        assert np.array_equal(distinct(v), np.unique(v))


def test_the_program_exits_without_collecting_every_object_first():
    # hipscope (the console script, python -m hipscope and -m hipscope.cli.main) runs
    # main() and then freezes the collector: the kernel takes the memory back at exit
    probe = ("import gc, sys; from hipscope.cli import main as m\n"
             "sys.argv = ['hipscope', 'report', '--json', '--no-cache', " + repr(str(CSV)) + "]\n"
             "try:\n    m.entry()\nexcept SystemExit as e:\n"
             "    print('RC', e.code, gc.get_freeze_count() > 0, file=sys.stderr)")
    got = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert "RC 0 True" in got.stderr
    assert json.loads(got.stdout)["kernel_count"] > 0
    for args in (["-m", "hipscope"], ["-m", "hipscope.cli.main"]):
        run = subprocess.run([sys.executable, *args, "report", "--json", "--no-cache", str(CSV)],
                             cwd=ROOT, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["kernel_count"] > 0


