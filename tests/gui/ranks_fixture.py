"""A job overview built by hand for the Ranks tab's tests: 8 ranks, 40 collectives, one
planted straggler (rank 5, late by 2 ms in 30 of them) and a minor one (rank 2, in the
other 10), and one rank file that could not be read. Every figure is plain arithmetic
here, so tests can state what the tab must show."""

from __future__ import annotations

from hipscope.ranks.model import (
    CollectiveInstance,
    JobOverview,
    RankFailure,
    RankSummary,
    Straggler,
)

T0 = 1_000_000_000_000          # the grid's start, ns
BIN = 1_000_000                 # 1 ms bins
BINS = 200
RANKS = 8
COLLECTIVES = 40
STRAGGLER, MINOR = 5, 2
LATE = 2_000_000                # how late the straggler arrives, ns
FAILED_SOURCE = "/jobs/run42/rank-8.json"
FAILED_REASON = ("/jobs/run42/rank-8.json: byte 0: expected a JSON object, found an "
                 "empty file.")


def util(rank: int) -> list[float]:
    """Busy fraction per bin: a step pattern, the straggler busier, rank 3 idle at the end."""
    out = []
    for i in range(BINS):
        v = 0.9 if (i // 10) % 2 == 0 else 0.35
        if rank == STRAGGLER:
            v = min(1.0, v + 0.1)
        if rank == 3 and i >= 180:
            v = 0.0
        out.append(round(v - 0.02 * rank * (i % 3 == 0), 3))
    return out


def arrival(i: int, rank: int, t0: int = T0) -> int:
    base = t0 + 2_000_000 + i * 4_500_000 + rank * 10_000
    late = LATE if (rank == STRAGGLER and i < 30) or (rank == MINOR and i >= 30) else 0
    return base + late


def collective(i: int, t0: int = T0) -> CollectiveInstance:
    arr = {r: arrival(i, r, t0) for r in range(RANKS)}
    last = max(arr, key=lambda r: arr[r])
    latest = arr[last]
    ends = {r: latest + 300_000 for r in range(RANKS)}
    return CollectiveInstance(
        name="nccl:all_reduce", sequence=i, group="0", arrival_ns=arr, end_ns=ends,
        skew_ns=latest - min(arr.values()), last_rank=last,
        wait_ns=sum(latest - a for a in arr.values()))


def summary(rank: int, source: str, t0: int = T0) -> RankSummary:
    steps = [20_000_000 + rank * 100_000 + (3_000_000 if rank == STRAGGLER else 0)
             + k * 50_000 for k in range(10)]
    start, end = t0 + rank * 1_000, t0 + BINS * BIN - rank * 1_000
    busy = int(sum(util(rank)) * BIN)
    return RankSummary(
        rank=rank, source=source, rank_from="distributedInfo", host=f"node{rank // 4}",
        devices=[f"GPU {rank % 4}"], start_ns=start, end_ns=end, kernels=1000 + rank,
        gpu_busy_ns=busy, gpu_busy_fraction=busy / (end - start), step_ns=steps,
        idle={"host": 1_000_000}, comm_ns=5_000_000 + rank * 250_000,
        classes={"GEMM": 100_000_000, "communication": 5_000_000},
        top_ops=[{"name": "aten::mm" if rank != STRAGGLER else "aten::bmm",
                  "count": 10, "gpu_ns": 90_000_000}],
        util_bins=util(rank))


def make_overview(sources: dict[int, str] | None = None, failed: bool = True,
                  t0: int = T0) -> JobOverview:
    """The fixture job; ``sources``: rank -> file (default: made-up paths); ``t0``: the
    grid's start (a real rank file's first kernel, when the sources are real)."""
    sources = sources or {}
    colls = [collective(i, t0) for i in range(COLLECTIVES)]
    waits = {r: sum(c.wait_ns for c in colls if c.last_rank == r) for r in (STRAGGLER, MINOR)}
    stragglers = [Straggler(rank=STRAGGLER, wait_caused_ns=waits[STRAGGLER], op="aten::bmm",
                            instances=30),
                  Straggler(rank=MINOR, wait_caused_ns=waits[MINOR], op=None, instances=10)]
    return JobOverview(
        ranks=[summary(r, sources.get(r, f"/jobs/run42/rank-{r}.json"), t0)
               for r in range(RANKS)],
        collectives=colls, stragglers=stragglers,
        failed=[RankFailure(FAILED_SOURCE, FAILED_REASON)] if failed else [],
        grid_start_ns=t0, grid_bin_ns=BIN, engine="local:2 workers")


def all_failed() -> JobOverview:
    return JobOverview(ranks=[], collectives=[], stragglers=[],
                       failed=[RankFailure(f"/jobs/bad/rank-{r}.json",
                                           f"/jobs/bad/rank-{r}.json: worker died.")
                               for r in range(3)],
                       grid_start_ns=0, grid_bin_ns=1, engine="serial")
