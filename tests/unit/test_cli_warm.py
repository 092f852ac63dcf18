"""`hipscope report` imports what the analyses need on a thread while the trace is
read (hipscope/cli/warm.py), and numpy's unique is replaced on the readers' hot paths
by a count table (hipscope/model/table.py ``distinct``)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from hipscope.cli import warm
from hipscope.model.table import distinct
from tests.conftest import ROOT, SAMPLES

CSV = SAMPLES / "rocprofv3-csv" / "sdk-docs-2025-08-rocm7.0" / "kernel_trace.csv"


def test_every_module_warmed_exists():
    # a renamed module would make the warm-up silently useless: each must import
    for name in warm.MODULES:
        __import__(name)


def test_the_report_imports_them_while_it_reads_and_prints_the_same():
    probe = ("import sys, json, io, contextlib; from hipscope.cli import main, warm; "
             "import hipscope.parsers as hp; seen = {}; orig = hp.open_trace\n"
             "def ot(*a, **k):\n"
             "    r = orig(*a, **k); [t.join() for t in __import__('threading').enumerate()"
             " if t.name == 'hipscope-warm-imports']\n"
             "    seen['mods'] = [m for m in warm.MODULES if m in sys.modules]; return r\n"
             "hp.open_trace = ot\n"
             "out = io.StringIO()\n"
             "with contextlib.redirect_stdout(out): rc = main.main(['report', '--json', "
             f"'--no-cache', {str(CSV)!r}])\n"
             "print(json.dumps([rc, seen['mods'], json.loads(out.getvalue())['kernel_count']]))")
    got = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    rc, mods, kernels = json.loads(got.stdout.strip().splitlines()[-1])
    assert rc == 0 and mods == list(warm.MODULES)
    rows = CSV.read_text().splitlines()[1:]
    assert kernels == len([r for r in rows if r.strip()])


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


def test_pyarrow_compute_is_imported_on_first_use():
    probe = ("import sys, hipscope.model, hipscope.parsers.rocprofv3_csv, hipscope.analysis.links\n"
             "before = 'pyarrow.compute' in sys.modules\n"
             "from hipscope.model.lazy import pc\n"
             "import pyarrow as pa\n"
             "s = pc.sum(pa.array([1, 2, 3])).as_py()\n"
             "print(before, s, 'pyarrow.compute' in sys.modules)")
    got = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert got.stdout.split() == ["False", "6", "True"]
