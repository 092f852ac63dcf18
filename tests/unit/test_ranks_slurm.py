"""The rank engine's --slurm path: dask-jobqueue's SLURMCluster submits the workers as
jobs to the real one-node Slurm cluster the launcher tests use; they read the ranks
from the (here local) shared filesystem."""

from __future__ import annotations

import pytest

from benchmarks.gen_ranks import write_job
from hipscope.ranks import SlurmOptions, analyse_job
from tests.unit import ranks_expected as ex
from tests.unit import slurm_cluster


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    yield from slurm_cluster.one_node_cluster(tmp_path_factory)


def test_workers_as_slurm_jobs(slurm, tmp_path):
    files = write_job(tmp_path / "job", 3, kernels=60, steps=3, straggler=0)
    ov = analyse_job([tmp_path / "job"], cache_dir=tmp_path / "cache",
                     slurm=SlurmOptions(partition="debug", cores=1, memory="1GB",
                                        walltime="00:10:00", jobs=1,
                                        log_directory=str(tmp_path / "logs")))
    assert ov.engine == "slurm:1 jobs" and ov.failed == []
    assert {r.rank: r.kernels for r in ov.ranks} == \
        {ex.load(f)["distributedInfo"]["rank"]: ex.kernel_count(ex.load(f)) for f in files}
    assert ov.stragglers[0].rank == 0
    # the caches were written by the Slurm job's worker, where the client can open them
    assert all(r.cache and r.cache.startswith(str(tmp_path / "cache")) for r in ov.ranks)


def test_slurm_workers_get_the_engines_dask_settings(tmp_path):
    """The job script's exports are read by Dask in the worker's process as the same
    settings the embedded cluster gets (a misspelt variable would be ignored silently)."""
    import json
    import os
    import shlex
    import subprocess
    import sys

    from hipscope.ranks.engine import QUIET_CONFIG, WORKER_ENV, _slurm_kwargs

    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    for line in _slurm_kwargs(SlurmOptions())["job_script_prologue"]:
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = shlex.split(value)[0]
    probe = ("import dask, distributed, json, os, sys; keys = json.loads(sys.argv[1]); "
             "print(json.dumps([[dask.config.get(k) for k in keys], "
             "os.environ.get('MALLOC_ARENA_MAX')]))")
    got = subprocess.run([sys.executable, "-c", probe, json.dumps(list(QUIET_CONFIG))],
                         env=env, capture_output=True, text=True, check=True, cwd=tmp_path)
    values, arena = json.loads(got.stdout)
    assert values == list(QUIET_CONFIG.values())
    assert arena == WORKER_ENV["MALLOC_ARENA_MAX"]
