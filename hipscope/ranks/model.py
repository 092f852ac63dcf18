"""The job overview of `hipscope ranks`: what comes back to the client from the per-rank
Dask tasks (small summaries, never full traces) and what the Ranks tab draws.

This module is the contract between the engine (``hipscope.ranks.engine``), the CLI and
the GUI: plain dataclasses with a JSON form (``to_json``/``from_json``) that is the
``hipscope ranks --json`` output documented in the README. Times are nanoseconds on the
traces' own clock (Kineto: epoch-based, so ranks of one job share it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import IO, Any

__all__ = ["CollectiveInstance", "JobOverview", "RankFailure", "RankSummary", "Straggler"]


@dataclass(frozen=True)
class RankSummary:
    """One rank's figures, computed where its trace lives."""

    rank: int                      # from distributedInfo, the file name, or rocpd process info
    source: str                    # the rank's file
    rank_from: str                 # "distributedInfo" | "file name" | "process" | "order"
    host: str | None
    devices: list[str]             # device names with events
    start_ns: int
    end_ns: int
    kernels: int
    gpu_busy_ns: int               # union of kernel/copy time over the rank's devices
    gpu_busy_fraction: float       # gpu_busy_ns / span (0..1)
    step_ns: list[int]             # each ProfilerStep's duration, in order (may be empty)
    idle: dict[str, int]           # idle breakdown: cause -> ns (hipscope's idle analysis)
    comm_ns: int                   # GPU time in communication kernels (kernel class)
    classes: dict[str, int]        # kernel class -> GPU ns
    top_ops: list[dict[str, Any]]  # [{"name", "count", "gpu_ns"}], worst first, <= 10
    util_bins: list[float]         # GPU busy fraction per bin of the job's common grid
    warnings: list[str] = field(default_factory=list)
    cache: str | None = None       # where the worker left the rank's cached trace


@dataclass(frozen=True)
class CollectiveInstance:
    """One collective matched across ranks (by name, sequence and process group)."""

    name: str                      # e.g. "nccl:all_reduce" / "ncclDevKernel_AllReduce_..."
    sequence: int                  # the instance's order within its process group
    group: str                     # process group id ("" when the trace has none)
    arrival_ns: Mapping[int, int]  # rank -> the collective kernel's start
    end_ns: Mapping[int, int]      # rank -> its end (both: dicts, or array-backed
    skew_ns: int                   # latest arrival - earliest arrival  RankTimes)
    last_rank: int                 # who arrived last
    wait_ns: int                   # sum over ranks of (latest arrival - own arrival)

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["arrival_ns"] = {str(k): v for k, v in self.arrival_ns.items()}   # JSON keys
        out["end_ns"] = {str(k): v for k, v in self.end_ns.items()}           # are strings
        return out


@dataclass(frozen=True)
class Straggler:
    rank: int
    wait_caused_ns: int            # the waits the rank's late arrivals caused the others
    op: str | None                 # the op (launching op / kernel) that makes the difference
    instances: int                 # collectives where it was last


@dataclass(frozen=True)
class RankFailure:
    source: str
    reason: str                    # the reader's sentence, or "worker died" etc.


@dataclass(frozen=True)
class JobOverview:
    ranks: list[RankSummary]
    collectives: list[CollectiveInstance]
    stragglers: list[Straggler]
    failed: list[RankFailure]
    grid_start_ns: int             # the common utilisation grid: util_bins[i] covers
    grid_bin_ns: int               # [grid_start + i*bin, grid_start + (i+1)*bin)
    engine: str                    # "local:2 workers" | "tcp://host:port" | "slurm" | "serial"
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = asdict(replace(self, collectives=[]))
        out["collectives"] = [c.to_json() for c in self.collectives]
        return out

    def write_json(self, fh: IO[str]) -> None:
        """``json.dumps(self.to_json())`` written piece by piece: one collective's dict at
        a time (1,000 instances x 1,024 ranks would be ~200 MB of dicts at once)."""
        head = asdict(replace(self, collectives=[]))
        for i, (key, value) in enumerate(head.items()):
            fh.write(("{" if i == 0 else ", ") + json.dumps(key) + ": ")
            if key != "collectives":
                fh.write(json.dumps(value))
                continue
            fh.write("[")
            for j, c in enumerate(self.collectives):
                fh.write((", " if j else "") + json.dumps(c.to_json()))
            fh.write("]")
        fh.write("}")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JobOverview:
        def coll(c: dict[str, Any]) -> CollectiveInstance:
            by_rank = {k: {int(r): v for r, v in c[k].items()} for k in ("arrival_ns", "end_ns")}
            return CollectiveInstance(**{**c, **by_rank})
        return cls(ranks=[RankSummary(**r) for r in data["ranks"]],
                   collectives=[coll(c) for c in data["collectives"]],
                   stragglers=[Straggler(**s) for s in data["stragglers"]],
                   failed=[RankFailure(**f) for f in data["failed"]],
                   grid_start_ns=data["grid_start_ns"], grid_bin_ns=data["grid_bin_ns"],
                   engine=data["engine"], warnings=list(data.get("warnings", [])))
