"""The engine: every rank of a job analysed as a ``dask.distributed`` task.

``analyse_job`` expands the paths (:mod:`.discover`), submits one task per rank file
(:func:`.task.analyse_rank`), waits for them while polling ``cancelled()`` and
assembles the overview on the client (:mod:`.overview`). Where the tasks run:

- ``workers=0``: in this process, one rank after the other (the baseline; tiny jobs);
- default: an embedded ``LocalCluster`` of ``workers`` (default: the CPU count) worker
  processes with one thread each, closed afterwards;
- ``scheduler="tcp://HOST:PORT"``: an existing cluster (``dask scheduler`` and
  ``dask worker``); it is left running;
- ``slurm=SlurmOptions(...)``: workers started as Slurm jobs by ``dask_jobqueue``'s
  ``SLURMCluster``; they read the traces from the shared filesystem.

Only each rank's small result crosses to the client. A rank whose file is bad is a
``RankFailure`` with the reader's sentence; a task whose worker dies is retried on
another worker by the scheduler (``distributed.scheduler.allowed-failures``, 3 by
default) and reported as a ``RankFailure`` when it keeps dying. Cancelling (or Ctrl+C)
cancels the outstanding tasks and closes the cluster the engine started.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..model.progress import (
    Cancelled,
    CancelledFn,
    ProgressFn,
    check_cancel,
    never_cancelled,
    no_progress,
)
from .discover import discover
from .model import JobOverview, RankFailure
from .overview import assemble
from .task import RankResult, analyse_rank

POLL_S = 0.2                  # how often cancelled() is asked while tasks run
# Dask's housekeeping, in every process the engine starts (scheduler, nannies, workers):
# an event-loop tick every 20 ms, a psutil system monitor every 0.5 s, the nanny's memory
# monitor every 0.1 s, work stealing every 0.1 s and a statistical profiler sampling each
# task's stack every 10 ms. Idle, a LocalCluster of 2 workers burnt 2.2 s of CPU per 20 s
# here (11 % of a core, taken from the ranks on a 2-core machine); with the intervals
# below, 0.4 s. None of them changes what is computed: the tick only feeds the "event
# loop unresponsive" warning, the monitors the dashboard and the memory limits (checked
# every 0.5 s still), stealing only rebalances queued tasks.
QUIET_CONFIG = {"distributed.worker.profile.enabled": False,
                "distributed.admin.tick.interval": "1s",
                "distributed.admin.tick.limit": "30s",
                "distributed.admin.system-monitor.interval": "5s",
                "distributed.worker.memory.monitor-interval": "500ms",
                "distributed.scheduler.work-stealing-interval": "1s"}
# Memory: a task allocates and frees a rank's columns (tens to hundreds of MB) on the
# worker's task thread. Dask's default MALLOC_TRIM_THRESHOLD_=65536 hands freed memory
# back to the OS at once and glibc's per-thread arenas cannot grow past 64 MB, so every
# rank faulted its pages in afresh: 1.25-1.5x the serial CPU, sys time doubled (12 ranks x
# 50k kernels on one worker here; 64 x 50k on 2 workers of a quiet 16-core host). One
# arena and glibc's own trim threshold bring a worker's CPU to the serial run's; the
# worker keeps about one rank's peak between tasks.
WORKER_ENV = {"MALLOC_ARENA_MAX": "1"}
WORKER_CONFIG = {**QUIET_CONFIG,
                 "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
                 **{f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in WORKER_ENV.items()}}

__all__ = ["SlurmOptions", "analyse_job"]


@dataclass(frozen=True)
class SlurmOptions:
    """Workers as Slurm jobs (``dask_jobqueue.SLURMCluster``): one worker process of
    ``cores`` threads and ``memory`` per job, ``jobs`` jobs."""

    partition: str | None = None
    account: str | None = None
    cores: int = 1
    memory: str = "4GB"
    walltime: str = "01:00:00"
    jobs: int = 1
    extra: list[str] = field(default_factory=list)     # more #SBATCH directives
    log_directory: str | None = None    # the jobs' output (None: Slurm's slurm-%j.out)


def analyse_job(paths: Sequence[str | Path], *, workers: int | None = None,
                scheduler: str | None = None, slurm: SlurmOptions | None = None,
                cache_dir: Path | None = None, progress: ProgressFn = no_progress,
                cancelled: CancelledFn = never_cancelled) -> JobOverview:
    """The job overview of the rank traces named by ``paths`` (module docstring).
    Raises TraceFormatError when a path names nothing, Cancelled when cancelled."""
    # absolute: a worker's working folder need not be the client's
    files = [str(Path(p).absolute()) for p in discover(paths)]
    cache = str(Path(cache_dir).absolute()) if cache_dir is not None else None
    progress(0.0)
    if workers == 0 and scheduler is None and slurm is None:
        results = _serial(files, cache, progress, cancelled)
        engine = "serial"
    else:
        with _client(workers, scheduler, slurm) as (client, engine):
            results = _distributed(client, files, cache, progress, cancelled)
    progress(1.0)
    return assemble(results, engine)


def _serial(files: list[str], cache: str | None, progress: ProgressFn,
            cancelled: CancelledFn) -> list[RankResult | RankFailure]:
    out: list[RankResult | RankFailure] = []
    for i, f in enumerate(files):
        check_cancel(cancelled)
        try:
            out.append(_kept(analyse_rank(f, cache)))
        except Cancelled:
            raise
        except Exception as exc:  # noqa: BLE001 - one rank's failure costs that rank
            out.append(RankFailure(f, _sentence(exc)))
        progress((i + 1) / len(files))
    return out


def _sentence(exc: BaseException) -> str:
    if type(exc).__name__ == "KilledWorker":        # distributed.scheduler's
        return ("its worker died while analysing it, on every retry (out of memory? "
                "see the workers' logs)")
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"the analysis failed: {text}"


def _distributed(client, files: list[str], cache: str | None, progress: ProgressFn,
                 cancelled: CancelledFn) -> list[RankResult | RankFailure]:
    """Every rank as a task; results taken as they finish. ``as_completed`` rather than
    ``wait(pending, FIRST_COMPLETED)`` in a loop: each such wait leaves a waiter on every
    pending future behind, so a job of N ranks piled up ~N**2/2 of them in the client
    (1,024 ranks: 616 MB peak and 21 s of client CPU; 512 short tasks: +140 MB)."""
    from distributed import as_completed

    job = uuid.uuid4().hex[:12]        # two jobs on one scheduler never share a task
    futures = client.map(analyse_rank, files, cache_dir=cache, pure=False,
                         key=[f"rank-{i}-{os.path.basename(f)}-{job}"
                              for i, f in enumerate(files)])
    keys = [f.key for f in futures]
    source = dict(zip(keys, files))
    got: dict[str, RankResult | RankFailure] = {}
    # a finished future is dropped at once: the client keeps only the compact result
    done = as_completed(futures)
    del futures
    try:
        while not done.is_empty():
            if cancelled():
                raise Cancelled()
            batch = done.next_batch(block=False)
            if not batch:
                time.sleep(POLL_S)             # nothing finished: ask cancelled() again
                continue
            for fut in batch:
                got[fut.key] = _outcome(fut, source[fut.key])
            batch = fut = None
            progress(len(got) / len(files))
    finally:
        left = list(done.futures)      # still running: not finished nor queued
        if left:
            client.cancel(left)
        done.clear()
    return [got[k] for k in keys]


def _kept(res: RankResult | RankFailure) -> RankResult | RankFailure:
    return res.compact() if isinstance(res, RankResult) else res


def _outcome(fut, path: str) -> RankResult | RankFailure:
    if fut.status == "error":
        return RankFailure(path, _sentence(fut.exception()))
    if fut.status == "cancelled":
        return RankFailure(path, "its task was cancelled by the cluster")
    return _kept(fut.result())


@contextlib.contextmanager
def _client(workers: int | None, scheduler: str | None, slurm: SlurmOptions | None
            ) -> Iterator[tuple[object, str]]:
    """A Client on the chosen cluster, and the engine's name for the overview."""
    try:
        from distributed import Client
    except ImportError:
        raise ImportError("analysing ranks on workers needs dask.distributed: install "
                          "hipscope's 'ranks' extra (pip install 'hipscope[ranks]'), "
                          "or run them in this process with --workers 0") from None

    if scheduler is not None:
        with Client(scheduler, timeout="30s") as client:
            yield client, scheduler
        return
    with _quiet(), _cluster(workers, slurm) as (cluster, name), Client(cluster) as client:
        yield client, name


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Dask's INFO chatter (scheduler, nannies) off while hipscope logs at WARNING."""
    logger = logging.getLogger("distributed")
    old = logger.level
    if not logging.getLogger("hipscope").isEnabledFor(logging.INFO):
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(old)


@contextlib.contextmanager
def _cluster(workers: int | None, slurm: SlurmOptions | None) -> Iterator[tuple[object, str]]:
    import dask

    if slurm is not None:
        from dask_jobqueue import SLURMCluster

        with dask.config.set(QUIET_CONFIG):       # the scheduler runs in this process
            cluster = SLURMCluster(**_slurm_kwargs(slurm))
        try:
            cluster.scale(jobs=slurm.jobs)
            yield cluster, f"slurm:{slurm.jobs} jobs"
        finally:
            cluster.close()
        return
    from distributed import LocalCluster

    n = workers or os.cpu_count() or 1
    with dask.config.set(WORKER_CONFIG), \
            LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                         dashboard_address=":0", silence_logs=logging.ERROR) as cluster:
        yield cluster, f"local:{n} workers"


def _slurm_kwargs(s: SlurmOptions) -> dict:
    """SLURMCluster arguments: the workers run this Python, with this PYTHONPATH."""
    prologue = [*(f"export {_env_name(k)}={v}" for k, v in QUIET_CONFIG.items()),
                *(f"export {k}={v}" for k, v in WORKER_ENV.items())]
    if os.environ.get("PYTHONPATH"):
        prologue.append(f"export PYTHONPATH={_quote(os.environ['PYTHONPATH'])}")
    if os.environ.get("HIPSCOPE_CACHE_DIR"):
        prologue.append(f"export HIPSCOPE_CACHE_DIR={_quote(os.environ['HIPSCOPE_CACHE_DIR'])}")
    return dict(queue=s.partition, account=s.account, cores=s.cores, processes=1,
                memory=s.memory, walltime=s.walltime, python=sys.executable,
                job_script_prologue=prologue, job_extra_directives=list(s.extra),
                scheduler_options={"dashboard_address": None},
                log_directory=s.log_directory)


def _env_name(key: str) -> str:
    """Dask's environment variable for a config key: ``a.b-c`` -> ``DASK_A__B_C``."""
    return "DASK_" + key.upper().replace(".", "__").replace("-", "_")


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)
