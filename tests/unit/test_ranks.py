"""The rank engine with real parts: a LocalCluster of 2 worker processes (one per
module, shared by address, plus the embedded default once), `dask scheduler` and
`dask worker` started as separate processes, a worker killed mid-analysis, a bad rank
file among good ones, the cache a second run and the GUI's open read from. Expected
figures come from plain json/gzip code over the files (tests/unit/ranks_expected.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from benchmarks.gen_ranks import write_job
from hipscope.model.progress import Cancelled
from hipscope.parsers import open_trace
from hipscope.ranks import JobOverview, analyse_job
from hipscope.ranks.task import RankResult, analyse_rank
from tests.unit import ranks_expected as ex
from tests.unit.launcher_fixtures import free_port, wait_until

PLANTED = "aten::planted_straggler_op"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster():
    """2 worker processes; a task whose worker dies is retried once
    (``allowed-failures`` 1, so that "reported" needs only two deaths)."""
    import dask
    from distributed import LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         host="127.0.0.1", dashboard_address=":0") as c:
        yield c


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """Four ranks; rank 2 runs the planted op each step."""
    d = tmp_path_factory.mktemp("job")
    write_job(d, 4, kernels=200, steps=4, straggler=2, straggler_op=PLANTED)
    return d


def _check_against_json(ov: JobOverview, files: list[Path]) -> None:
    by_rank = {r.rank: r for r in ov.ranks}
    docs = {ex.load(f)["distributedInfo"]["rank"]: ex.load(f) for f in files}
    assert sorted(by_rank) == sorted(docs)
    for rank, doc in docs.items():
        assert by_rank[rank].kernels == ex.kernel_count(doc)
        assert by_rank[rank].gpu_busy_ns == ex.busy_ns(doc)
        assert by_rank[rank].rank_from == "distributedInfo"
    want = {r: ex.collectives(d) for r, d in docs.items()}
    assert len(ov.collectives) == len(want[min(want)])
    for c in ov.collectives:
        a = {r: want[r][(c.name, c.group, c.sequence)] for r in want}
        assert c.arrival_ns == a
        assert c.skew_ns == max(a.values()) - min(a.values())
        assert c.wait_ns == sum(max(a.values()) - v for v in a.values())


def test_hta_sample_on_two_worker_processes(cluster, tmp_path):
    ov = analyse_job([ex.HTA], scheduler=cluster.scheduler_address, cache_dir=tmp_path)
    assert ov.failed == [] and ov.engine == cluster.scheduler_address
    _check_against_json(ov, sorted(ex.HTA.glob("*.json.gz")))
    assert [len(r.util_bins) for r in ov.ranks] == [len(ov.ranks[0].util_bins)] * 2
    # the grid's bins hold the busy time (exact re-binning of the workers' fine bins)
    for r in ov.ranks:
        assert abs(sum(r.util_bins) * ov.grid_bin_ns - r.gpu_busy_ns) <= len(r.util_bins)


def test_embedded_cluster_names_the_planted_straggler_and_its_op(job, tmp_path):
    bad = tmp_path / "rank-9.json.gz"
    bad.write_bytes(b"\x1f\x8b not really gzip")
    files = sorted(job.glob("rank-*.json.gz"))
    seen: list[float] = []
    ov = analyse_job([*files, bad], workers=2, cache_dir=tmp_path / "cache",
                     progress=seen.append)
    assert ov.engine == "local:2 workers"
    assert [f.source for f in ov.failed] == [str(bad)]
    assert str(bad) in ov.failed[0].reason and "\n" not in ov.failed[0].reason
    _check_against_json(ov, files)
    assert ov.stragglers[0].rank == 2 and ov.stragglers[0].op == PLANTED
    assert ov.stragglers[0].instances == 4
    assert seen[-1] == 1.0 and seen == sorted(seen)
    assert JobOverview.from_json(ov.to_json()) == ov


def test_second_run_reads_the_workers_cache_and_the_gui_open_is_a_hit(job, tmp_path,
                                                                      monkeypatch):
    path = str(job / "rank-1.json.gz")
    first = analyse_rank(path, str(tmp_path))
    again = analyse_rank(path, str(tmp_path))
    assert isinstance(first, RankResult) and not first.from_cache and again.from_cache
    assert again.to_json() == first.to_json()
    assert first.cache is not None and Path(first.cache).parent == tmp_path
    monkeypatch.setenv("HIPSCOPE_CACHE_DIR", str(tmp_path))
    assert open_trace(path, use_cache=True).meta.get("cached") is True


def test_separate_scheduler_and_worker_processes(job, tmp_path):
    port = free_port()
    addr = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    procs = [subprocess.Popen([*dask, "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    try:
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", addr, "--nthreads", "1",
             "--nworkers", "1", "--no-dashboard", "--host", "127.0.0.1"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        ov = analyse_job([job / "rank-*.json.gz"], scheduler=addr, cache_dir=tmp_path)
        assert ov.engine == addr and ov.failed == []
        _check_against_json(ov, sorted(job.glob("rank-*.json.gz")))
        assert all(p.poll() is None for p in procs)     # an existing cluster is left running
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGINT)
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(30)


def _blocked_rank(tmp_path: Path) -> tuple[Path, bytes, int]:
    """A rank file that is a FIFO held open by the test (``O_RDWR``: a writer that
    never waits for a reader): its task blocks in the read until the test writes the
    rank's trace into it and closes it (the file-based signal)."""
    src = tmp_path / "src"
    write_job(src, 5, kernels=40, steps=2)
    fifo = tmp_path / "rank-4.json.gz"
    os.mkfifo(fifo)
    return fifo, (src / "rank-4.json.gz").read_bytes(), os.open(fifo, os.O_RDWR)


def _feed(fd: int, data: bytes) -> None:
    """Write the trace and close: the reader gets it, then end-of-file."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.close(fd)


def _run_in_thread(**kw) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def go():
        try:
            out["ov"] = analyse_job(**kw)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["exc"] = exc
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t, out


def _readers(fifo: Path) -> set[int]:
    """Pids of the other processes that have ``fifo`` open (from /proc)."""
    out = set()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if any(os.readlink(f) == str(fifo) for f in (d / "fd").iterdir()):
                out.add(int(d.name))
        except OSError:
            continue            # gone, or not ours to look at
    return out


def test_a_killed_worker_costs_nothing_its_rank_is_retried(cluster, job, tmp_path):
    fifo, data, fd = _blocked_rank(tmp_path)
    files = [*sorted(job.glob("rank-*.json.gz")), fifo]
    t, out = _run_in_thread(paths=files, scheduler=cluster.scheduler_address,
                            cache_dir=tmp_path / "cache")
    first = wait_until(lambda: _readers(fifo), 60, "a worker to block reading the FIFO rank")
    pid = first.pop()
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: _readers(fifo) - {pid}, 60, "the task to be retried on another worker")
    _feed(fd, data)
    t.join(120)
    assert "exc" not in out, out.get("exc")
    ov = out["ov"]
    assert ov.failed == [] and sorted(r.rank for r in ov.ranks) == [0, 1, 2, 3, 4]
    copy = tmp_path / "copy.json.gz"
    copy.write_bytes(data)
    assert {r.rank: r.kernels for r in ov.ranks}[4] == ex.kernel_count(ex.load(copy))


def test_a_rank_whose_workers_keep_dying_is_reported(cluster, job, tmp_path):
    fifo, data, fd = _blocked_rank(tmp_path)
    t, out = _run_in_thread(paths=[job / "rank-0.json.gz", fifo],
                            scheduler=cluster.scheduler_address, cache_dir=tmp_path / "c")
    killed: set[int] = set()
    for attempt in range(2):                  # the first try, then its one retry
        pid = wait_until(lambda: _readers(fifo) - killed, 60, f"reader {attempt}").pop()
        os.kill(pid, signal.SIGKILL)
        killed.add(pid)
    t.join(120)
    os.close(fd)
    ov = out["ov"]
    assert [r.rank for r in ov.ranks] == [0]
    assert [f.source for f in ov.failed] == [str(fifo)]
    assert ov.failed[0].reason.startswith("its worker died while analysing it")


def test_cancel_stops_the_tasks(cluster, tmp_path):
    from distributed import Client

    fifo, data, fd = _blocked_rank(tmp_path)
    stop = threading.Event()
    t, out = _run_in_thread(paths=[fifo], scheduler=cluster.scheduler_address,
                            cache_dir=tmp_path / "cache", cancelled=stop.is_set)
    wait_until(lambda: _readers(fifo), 60, "the task to start reading")
    stop.set()
    t.join(60)
    assert isinstance(out.get("exc"), Cancelled)
    with Client(cluster.scheduler_address) as c:
        wait_until(lambda: not any(c.processing().values()), 60, "the task to be released")
    _feed(fd, data)       # the worker thread was blocked in the read: let it finish


def test_serial_engine_equals_the_cluster(job, tmp_path):
    files = sorted(job.glob("rank-*.json.gz"))
    ov = analyse_job(files, workers=0, cache_dir=tmp_path)
    assert ov.engine == "serial"
    _check_against_json(ov, files)
    assert ov.stragglers[0].rank == 2 and ov.stragglers[0].op == PLANTED
    calls = []
    with pytest.raises(Cancelled):
        analyse_job(files, workers=0, cache_dir=tmp_path,
                    cancelled=lambda: bool(calls.append(1) or len(calls) > 1))
