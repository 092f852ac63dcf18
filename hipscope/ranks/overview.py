"""The client's half: the per-rank results assembled into one :class:`JobOverview`.

Rank numbers: the rank each file records (Kineto ``distributedInfo.rank``, rocpd process
info: the launcher's variables in the process's environment) when every file has a
distinct one, else the number in the file name (``rank-3``, ``rank_3``, ``rank3``) when
every name has a distinct one, else the order of the files (with a warning naming why).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..analysis.collectives import match
from .grid import job_grid, rebin
from .model import JobOverview, RankFailure, RankSummary
from .stragglers import find_stragglers
from .task import RankResult

_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)
_FROM = {"distributedInfo": "distributedInfo", "process": "rocpd process info"}

__all__ = ["assemble", "rank_numbers"]


def rank_numbers(results: Sequence[RankResult]) -> tuple[list[int], str, list[str]]:
    """Each result's rank, where the numbers came from, and warnings."""
    meta = [r.meta_rank for r in results]
    given = [m for m in meta if m is not None]
    if meta and len(given) == len(meta) and len(set(given)) == len(given):
        return given, "+".join(sorted({r.rank_from for r in results})), []
    warnings = []
    if any(m is not None for m in meta):
        where = " / ".join(_FROM[f] for f in sorted({r.rank_from for r in results}))
        warnings.append(f"the files' recorded ranks ({where}) are missing or repeated; "
                        "ranks are taken from the file names or their order")
    names = [_RANK_IN_NAME.search(Path(r.source).name) for r in results]
    nums = [int(m.group(1)) for m in names if m]
    if names and len(nums) == len(names) and len(set(nums)) == len(nums):
        return nums, "file name", warnings
    return list(range(len(results))), "order", warnings


def assemble(results: Sequence[RankResult | RankFailure], engine: str,
             warnings: Sequence[str] = ()) -> JobOverview:
    """The job overview of the ranks' results (failures listed, not counted)."""
    ok = [r for r in results if isinstance(r, RankResult)]
    failed = [r for r in results if isinstance(r, RankFailure)]
    ranks, rank_from, notes = rank_numbers(ok)
    grid = job_grid([(r.start_ns, r.end_ns) for r in ok], [r.fine_width for r in ok])
    recorded = rank_from not in ("file name", "order")   # then each file says where from
    summaries = sorted((_summary(r, n, r.rank_from if recorded else rank_from, grid)
                        for r, n in zip(ok, ranks)),
                       key=lambda s: s.rank)
    by_rank = dict(zip(ranks, ok))
    instances, alone = match({n: r.collectives for n, r in by_rank.items()})
    stragglers = find_stragglers(instances, {n: r.step_bounds for n, r in by_rank.items()},
                                 {n: r.step_ops for n, r in by_rank.items()})
    notes = list(warnings) + notes
    if alone:
        notes.append(f"{alone} collective instances were found on one rank only and are "
                     "left out of the matching (ranks recorded different windows?)")
    return JobOverview(ranks=summaries, collectives=instances, stragglers=stragglers,
                       failed=failed, grid_start_ns=grid[0], grid_bin_ns=grid[1],
                       engine=engine, warnings=notes)


def _summary(r: RankResult, rank: int, rank_from: str, grid: tuple[int, int, int]
             ) -> RankSummary:
    span = max(1, r.end_ns - r.start_ns)
    return RankSummary(
        rank=rank, source=r.source, rank_from=rank_from, host=r.host, devices=r.devices,
        start_ns=r.start_ns, end_ns=r.end_ns, kernels=r.kernels, gpu_busy_ns=r.gpu_busy_ns,
        gpu_busy_fraction=min(1.0, r.gpu_busy_ns / span), step_ns=r.step_ns, idle=r.idle,
        comm_ns=r.comm_ns, classes=r.classes, top_ops=r.top_ops,
        util_bins=rebin(r.fine_width, r.fine_first, np.asarray(r.fine_busy, np.int64), grid),
        warnings=r.warnings, cache=r.cache)
