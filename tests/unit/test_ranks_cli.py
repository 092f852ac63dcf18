"""`hipscope ranks` as a user runs it (a real subprocess): the text overview, --json
(only the overview's JSON on stdout), and one sentence with exit 2 for bad input or 1
when no rank could be read."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.gen_ranks import write_job
from hipscope.ranks import JobOverview
from tests.unit import ranks_expected as ex

ROOT = Path(__file__).resolve().parents[2]
OP = "aten::planted_op_cli"


def _cli(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HIPSCOPE_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", "hipscope.cli.main", "ranks", *args],
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    d = tmp_path_factory.mktemp("clijob")
    write_job(d, 3, kernels=90, steps=3, straggler=1, straggler_op=OP)
    return d


def test_json_is_the_overview_and_nothing_else(job, tmp_path):
    r = _cli(str(job / "rank-*.json.gz"), "--workers", "0", "--json", cache=tmp_path)
    assert r.returncode == 0, r.stderr
    ov = JobOverview.from_json(json.loads(r.stdout))
    assert [x.rank for x in ov.ranks] == [0, 1, 2]
    assert {x.rank: x.kernels for x in ov.ranks} == {
        i: ex.kernel_count(ex.load(job / f"rank-{i}.json.gz")) for i in range(3)}
    assert ov.stragglers[0].rank == 1 and ov.stragglers[0].op == OP
    keys = json.loads(r.stdout)
    assert set(keys) >= {"ranks", "collectives", "stragglers", "failed"}
    assert set(keys["collectives"][0]["arrival_ns"]) == {"0", "1", "2"}


def test_text_overview_names_the_straggler(job, tmp_path):
    r = _cli(str(job), "--workers", "0", cache=tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("3 ranks (serial)")
    assert "collectives: 3 matched; worst skew first (top 3)" in out
    strag = out.split("stragglers (the waits they caused, worst first):")[1].splitlines()
    assert strag[2].split()[0] == "1" and strag[2].split()[-1] == OP


@pytest.mark.parametrize("arg", ["/nonexistent/rank-0.json", "/nonexistent/rank-*.json"])
def test_a_path_naming_nothing_is_one_sentence_exit_2(arg, tmp_path):
    r = _cli(arg, "--workers", "0", cache=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and arg in r.stderr and "Traceback" not in r.stderr


def test_no_rank_readable_is_exit_1(tmp_path):
    bad = tmp_path / "rank-0.json"
    bad.write_text('{"traceEvents": [')
    r = _cli(str(bad), "--workers", "0", cache=tmp_path / "c")
    assert r.returncode == 1
    assert "failed: " + str(bad) in r.stdout
    assert r.stderr.strip() == "hipscope: none of the 1 rank files could be read."


def test_ctrl_c_stops_the_tasks_and_the_cluster(tmp_path):
    """SIGINT while a worker is blocked on a FIFO rank: exit 130, one sentence, and the
    embedded cluster's worker processes are gone."""
    from tests.unit.launcher_fixtures import alive, wait_until
    from tests.unit.test_ranks import _readers

    fifo = tmp_path / "rank-0.json.gz"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDWR)       # a writer: the worker's read blocks, never fails
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HIPSCOPE_CACHE_DIR": str(tmp_path)}
    p = subprocess.Popen([sys.executable, "-m", "hipscope.cli.main", "ranks", str(fifo),
                          "--workers", "1"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        worker = wait_until(lambda: _readers(fifo) - {p.pid}, 120, "the worker to block")
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        assert p.returncode == 130 and out == ""
        assert err.strip() == "hipscope: cancelled; the tasks were stopped."
        wait_until(lambda: not any(alive(w) for w in worker), 60, "the worker to exit")
    finally:
        os.close(fd)
        if p.poll() is None:
            p.kill()
            p.wait(30)
        p.stdout.close()                # a failed run leaves no pipe for a later test's GC
        p.stderr.close()
