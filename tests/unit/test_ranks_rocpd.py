"""Rank numbers from rocpd process info (issue 18): the rank a rocprofv3 database
records in its process's environment, read by the rocpd reader and used by
`hipscope ranks` over the file names' numbers. Databases: tests/data/fixtures/rocpd_ranks.py;
expected figures from plain sqlite3/json over the files."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hipscope.parsers import open_trace
from hipscope.ranks import JobOverview, analyse_job
from tests.data.fixtures import rocpd_ranks as rr

ROOT = Path(__file__).resolve().parents[2]


def _env(path: Path) -> list[dict]:
    with sqlite3.connect(path) as c:
        return [json.loads(e) for (e,) in c.execute("SELECT environment FROM rocpd_info_process")]


def _kernels(path: Path) -> int:
    with sqlite3.connect(path) as c:
        return c.execute("SELECT count(*) FROM rocpd_kernel_dispatch").fetchone()[0]


@pytest.fixture()
def job(tmp_path):
    """Two rank databases whose names say 0 and 1 and whose processes say 3 and 5."""
    d = tmp_path / "job"
    d.mkdir()
    a = rr.build(d / "rank0_results.db", rr.OPENMPI_RANK3)
    b = rr.build(d / "rank1_results.db", rr.TORCHRUN_RANK5, drop_kernels=1)
    return a, b


def test_the_reader_takes_the_launchers_rank_over_slurm_procid(job):
    a, b = job
    (ea,), (eb,) = _env(a), _env(b)
    ta, tb = open_trace(a), open_trace(b)
    assert (ta.meta["rank"], ta.meta["world_size"], ta.meta["rank_variable"]) == \
        (int(ea["OMPI_COMM_WORLD_RANK"]), int(ea["OMPI_COMM_WORLD_SIZE"]),
         "OMPI_COMM_WORLD_RANK")
    assert (tb.meta["rank"], tb.meta["world_size"], tb.meta["rank_variable"]) == \
        (int(eb["RANK"]), int(eb["WORLD_SIZE"]), "RANK")
    assert int(ea["SLURM_PROCID"]) != ta.meta["rank"]   # what %rank% would have named


def test_hipscope_ranks_json_reports_the_process_ranks(job, tmp_path):
    a, b = job
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HIPSCOPE_CACHE_DIR": str(tmp_path / "c")}
    r = subprocess.run([sys.executable, "-m", "hipscope.cli.main", "ranks", str(a.parent),
                        "--workers", "0", "--json"], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    ov = JobOverview.from_json(json.loads(r.stdout))
    want = {int(_env(a)[0]["OMPI_COMM_WORLD_RANK"]): a, int(_env(b)[0]["RANK"]): b}
    assert {x.rank: Path(x.source).name for x in ov.ranks} == \
        {k: v.name for k, v in want.items()}
    assert {x.rank: x.kernels for x in ov.ranks} == {k: _kernels(v) for k, v in want.items()}
    assert {x.rank_from for x in ov.ranks} == {"process"}
    assert ov.failed == [] and not any("rank" in w for w in ov.warnings)


def test_analyse_job_reports_the_process_ranks(job, tmp_path):
    a, b = job
    ov = analyse_job([a, b], workers=0, cache_dir=tmp_path)
    assert [(x.rank, Path(x.source).name, x.rank_from) for x in ov.ranks] == \
        [(3, a.name, "process"), (5, b.name, "process")]
    assert {x.rank: x.kernels for x in ov.ranks} == {3: _kernels(a), 5: _kernels(b)}


def test_a_database_of_several_ranks_gives_none_and_says_so_when_ranks_are_used(tmp_path):
    both = rr.build(tmp_path / "both_results.db", rr.OPENMPI_RANK3,
                    more_processes=((4400, rr.TORCHRUN_RANK5),))
    tr = open_trace(both)
    assert "rank" not in tr.meta
    assert tr.meta["process_ranks"] == [[4300, 3], [4400, 5]]
    assert not any("rank" in str(w) for w in tr.meta.get("warnings", []))   # read alone
    other = rr.build(tmp_path / "other_results.db", rr.TORCHRUN_RANK5)
    ov = analyse_job([both, other], workers=0, cache_dir=tmp_path / "c")
    by_name = {Path(x.source).name: x for x in ov.ranks}
    assert [w for w in by_name[both.name].warnings if "different ranks (3, 5)" in w]
    assert [(x.rank, x.rank_from) for x in ov.ranks] == [(0, "order"), (1, "order")]
    assert any("recorded ranks (rocpd process info) are missing" in w for w in ov.warnings)


def test_an_environment_that_is_not_json_is_warned_and_the_trace_reads(tmp_path):
    db = rr.build(tmp_path / "x_results.db", '{"RANK": "3"')
    tr = open_trace(db)
    assert "rank" not in tr.meta and len(tr.kernels) == _kernels(db)
    got = [str(w) for w in tr.meta["warnings"] if "environment" in str(w)]
    assert len(got) == 1 and str(db) in got[0] and "not a JSON object" in got[0]


def test_merged_rank_databases_have_no_single_rank(job):
    """A folder of rank databases read as one trace (and the two files opened together):
    no single rank claimed; one node's GPUs are kept once (they have a host)."""
    a, b = job
    with sqlite3.connect(a) as c:
        gpus = c.execute("SELECT count(*) FROM rocpd_info_agent WHERE type = 'GPU'").fetchone()[0]
    folder = open_trace(a.parent)
    assert folder.meta.get("rank") is None
    assert folder.meta["process_ranks"] == [[4300, 3], [4300, 5]]
    assert len(folder.devices) == gpus
    both = open_trace([a, b])
    assert "rank" not in both.meta and "rank_variable" not in both.meta
    assert len(both.devices) == gpus


@pytest.mark.parametrize("env, want", [
    ({"PMI_RANK": "6", "PMI_SIZE": "16", "MPI_LOCALRANKID": "2"}, (6, "PMI_RANK", 16)),
    ({"SLURM_PROCID": "7", "SLURM_NTASKS": "8"}, (7, "SLURM_PROCID", 8)),
    ({"RANK": "x", "OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "2"},
     (2, "OMPI_COMM_WORLD_RANK", None)),               # a size not above the rank: none
    ({"MPI_LOCALRANKID": "1", "LOCAL_RANK": "1"}, None),  # node-local ranks only
])
def test_rank_variables_in_their_order(tmp_path, env, want):
    db = rr.build(tmp_path / "r_results.db", {**rr.BASE_ENV, **env})
    m = open_trace(db).meta
    got = (m["rank"], m["rank_variable"], m.get("world_size")) if "rank" in m else None
    assert got == want
