"""The finer rows of ``compare --by op`` (``ops.rows``): one per matched pair of ops,
summed by module path, name and both runs' input shapes. Two ranks of one job whose
ops match by name and order but not by shape (rank-specific embedding tables): the
pair is one row, not an A-only row beside a B-only row."""

from __future__ import annotations

import json

import pytest

from tests.conftest import SAMPLES
from tests.unit.test_ops import independent_ops

RANKS = SAMPLES / "kineto" / "multirank-sampled-hta"
A, B = RANKS / "sampled_rank-0.json.gz", RANKS / "sampled_rank-1.json.gz"


@pytest.fixture(scope="module")
def ops():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "hipscope.cli.main", "compare", "--json",
                          "--no-cache", "--by", "op", str(A), str(B)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["ops"]


def test_each_row_holds_matched_pairs(ops):
    assert ops["level"] == "op" and ops["rows"]
    assert all(r["a_count"] == r["b_count"] >= 1 for r in ops["rows"])
    # shapes differ between the ranks for some matched ops: both are shown
    differ = [r for r in ops["rows"] if r["shapes"] != r["b_shapes"]]
    assert any(r["name"] == "nccl:all_to_all" for r in differ)


def test_rows_sum_to_the_matched_share_of_each_runs_gpu_time(ops):
    for side, path in (("a", A), ("b", B)):
        gpu, _, lost = independent_ops(path)
        assert lost == 0
        total = sum(gpu.values())
        got = sum(r[f"{side}_gpu_ns"] for r in ops["rows"])
        assert got == pytest.approx(ops["coverage"][side] * total, abs=1)

