"""The client's half of the rank engine: rank numbers (distributedInfo, else file
names, else order) and the job grid's exact re-binning of the workers' fine bins."""

from __future__ import annotations

import numpy as np

from hipscope.analysis.collectives import RankCollectives
from hipscope.ranks.grid import fine_bins, job_grid, rebin
from hipscope.ranks.overview import rank_numbers
from hipscope.ranks.task import RankResult


def _res(source: str, meta_rank: int | None) -> RankResult:
    return RankResult(source=source, meta_rank=meta_rank, host=None, devices=[], start_ns=0,
                      end_ns=1, kernels=0, gpu_busy_ns=0, step_ns=[], idle={}, comm_ns=0,
                      classes={}, top_ops=[], fine_width=1, fine_first=0, fine_busy=[0],
                      collectives=RankCollectives(), step_bounds=[], step_ops=[{}])


def test_rank_numbers_come_from_distributed_info_then_names_then_order():
    assert rank_numbers([_res("a/x.json", 3), _res("a/y.json", 1)]) == \
        ([3, 1], "distributedInfo", [])
    nums, how, warn = rank_numbers([_res("a/rank_7.json", 0), _res("a/rank-2.json", 0)])
    assert (nums, how) == ([7, 2], "file name") and "repeated" in warn[0]
    assert rank_numbers([_res("a/x.json", None), _res("a/y.json", None)])[:2] == \
        ([0, 1], "order")


def _plain_busy(iv: list[tuple[int, int]], t0: int, t1: int) -> int:
    """Busy ns of disjoint intervals inside [t0, t1), by brute force."""
    return sum(max(0, min(e, t1) - max(s, t0)) for s, e in iv)


def test_rebinning_is_exact_for_every_job_bin():
    rng = np.random.default_rng(7)
    ranks = []
    for r in range(3):
        starts = np.sort(rng.integers(10**6 * r, 10**6 * (r + 2), 200))
        ends = starts + rng.integers(1, 2_000, 200)
        s, e = [int(starts[0])], [int(ends[0])]
        for a, b in zip(starts[1:].tolist(), ends[1:].tolist()):   # union by hand
            if a <= e[-1]:
                e[-1] = max(e[-1], b)
            else:
                s.append(a)
                e.append(b)
        ranks.append((list(zip(s, e)), s[0] - 17, e[-1] + 5))
    fines = [fine_bins(np.array([a for a, _ in iv]), np.array([b for _, b in iv]), t0, t1)
             for iv, t0, t1 in ranks]
    grid = job_grid([(t0, t1) for _, t0, t1 in ranks], [f[0] for f in fines])
    start, width, n = grid
    for (iv, _, _), (w, first, busy) in zip(ranks, fines):
        got = rebin(w, first, busy, grid)
        want = [_plain_busy(iv, start + i * width, start + (i + 1) * width) / width
                for i in range(n)]
        assert np.allclose(got, want, atol=1e-6)


def test_discover_expands_folders_and_globs_once_each(tmp_path):
    import pytest

    from hipscope.parsers import TraceFormatError
    from hipscope.ranks import discover

    for n in ("rank-1.json.gz", "rank-0.json.gz", "notes.txt"):
        (tmp_path / n).write_text("x")
    got = discover([tmp_path, tmp_path / "rank-0.json.gz", str(tmp_path / "rank-*.json.gz")])
    assert got == [tmp_path / "rank-0.json.gz", tmp_path / "rank-1.json.gz"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.db").write_text("x")
    (other / "b.txt").write_text("x")
    assert discover([other]) == [other / "a.db"]
    with pytest.raises(TraceFormatError, match="expected files matching the pattern"):
        discover([str(tmp_path / "nothing-*.json")])


def test_streamed_json_is_the_overview_json_and_arrivals_are_the_files(tmp_path):
    """`hipscope ranks --json` writes the overview one collective at a time: the same
    text as json.dumps(to_json()), and every arrival is the file's kernel start."""
    import io
    import json

    from benchmarks.gen_ranks import write_job
    from hipscope.ranks import analyse_job
    from tests.unit import ranks_expected as ex

    files = write_job(tmp_path / "job", 3, kernels=120, steps=2, straggler=2, collectives=5)
    ov = analyse_job([tmp_path / "job"], workers=0, cache_dir=tmp_path / "cache")
    buf = io.StringIO()
    ov.write_json(buf)
    assert buf.getvalue() == json.dumps(ov.to_json())
    got = json.loads(buf.getvalue())["collectives"]
    want = {r: ex.collectives(ex.load(f)) for r, f in enumerate(files)}
    assert len(got) == 10 == len(want[0])
    for c in got:
        key = (c["name"], c["group"], c["sequence"])
        assert c["arrival_ns"] == {str(r): want[r][key] for r in range(3)}
