"""rocprof-compute workload folders: which folder is one, and its CSVs as columns.

Split from :mod:`.rocprof_compute` (the reader): finding the workload folder by content
and reading one of its CSV files (header, strings, identity names, numeric columns).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa

from ._common import read_input
from ._compute_side import results_passes, workload_csv
from ._csv import RowPlaces, drop_torn_tail, float_column, int_column, read_csv_strings

__all__ = ["CLOCK", "FORMAT", "IDENT", "LEGACY_RENAME", "PASS_FILE", "ComputeCsv", "base_name",
           "workload_dir"]

FORMAT = "rocprof-compute"
CLOCK = "CLOCK_BOOTTIME / HSA system clock of each replay pass (serialised replay)"

# identity columns (any spelling seen; legacy names renamed by Omniperf included)
IDENT = {
    "dispatch_id", "kernel_name", "gpu_id", "grid_size", "workgroup_size",
    "lds_per_workgroup", "scratch_per_workitem", "arch_vgpr", "accum_vgpr", "sgpr",
    "wave_size", "obj", "sig", "correlation_id", "kernel_id", "queue_id", "pid", "tid",
    "queue-id", "queue-index", "start_timestamp", "end_timestamp", "dispatchns",
    "completens", "xcc_index", "index", "kernelname", "gpu-id", "grd", "wgr", "lds", "scr",
    "vgpr", "beginns", "endns", "durationns", "counter_name", "counter_value", "node_id",
    "agent_id", "stream_id", "private_segment_size", "group_segment_size", "guid",
    "counter_id",
}
LEGACY_RENAME = {"index": "dispatch_id", "kernelname": "kernel_name", "gpu-id": "gpu_id",
                 "grd": "grid_size", "wgr": "workgroup_size", "lds": "lds_per_workgroup",
                 "scr": "scratch_per_workitem", "vgpr": "arch_vgpr", "beginns": "start_timestamp",
                 "endns": "end_timestamp", "queue-id": "queue_id"}
PASS_FILE = re.compile(r"^(pmc_perf(_\d+)?|SQ_\w+|timestamps|pmc_dispatch_info|sysinfo|roofline)"
                       r"\.csv$")


def base_name(col: str) -> str:
    """Lower-cased identity name without a merge suffix ``_N`` (counters untouched)."""
    low = col.strip().lower()
    m = re.match(r"^(.*)_(\d+)$", low)
    if m and m.group(1) in IDENT:
        low = m.group(1)
    return LEGACY_RENAME.get(low, low)


def is_workload(d: Path) -> bool:
    """By content, not names: a pmc_perf.csv / pmc_perf_0.csv with rocprof-compute's
    header, or results_pmc_perf_<n> passes in its long form."""
    return (workload_csv(d / "pmc_perf.csv") or workload_csv(d / "pmc_perf_0.csv")
            or bool(results_passes(d)))


def workload_dir(path: Path) -> Path | None:
    """The workload folder for a path (folder, its parent workloads/<name>, or a file)."""
    if path.is_file():
        if (PASS_FILE.match(path.name) or path in results_passes(path.parent)) \
                and workload_dir(path.parent) is not None:
            return path.parent
        return None
    if not path.is_dir():
        return None
    if is_workload(path):
        return path
    subs = [p for p in path.iterdir() if p.is_dir() and is_workload(p)]
    return subs[0] if len(subs) == 1 else None


class ComputeCsv:
    """One CSV of the folder: header, string table, lower-cased base names."""

    def __init__(self, path: Path, warnings: list[str], dropped: dict[str, int]):
        self.path = path
        data = read_input(path, warnings)
        data = drop_torn_tail(path, data, 1, warnings, dropped, f"{path.name} rows")
        self.data = data
        self.header, self.table = read_csv_strings(path, data, 1)
        self.base = [base_name(h) for h in self.header]
        self.n = self.table.num_rows
        self.where = RowPlaces(data, 1)
        self.refused, self.refused_at = 0, ""   # values left out by floats(), first place

    def first(self, base: str) -> int | None:
        try:
            return self.base.index(base)
        except ValueError:
            return None

    def col(self, i: int) -> pa.Array:
        return self.table.column(i).combine_chunks()

    def ints(self, base: str):
        i = self.first(base)
        if i is None:
            return None
        return int_column(self.col(i), self.path, self.where, self.header[i])

    def floats(self, i: int, expected: str) -> tuple[np.ndarray, np.ndarray]:
        """Column ``i`` as numbers; inf (or 1e400) is refused: left out, counted for
        :meth:`warn_refused`."""
        v, valid = float_column(self.col(i), self.path, self.where, self.header[i], expected)
        bad = valid & ~np.isfinite(v)
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            self.refused_at = self.refused_at or (f"{self.where(r)}, column {self.header[i]!r}"
                                                  f" = {self.col(i)[r].as_py()!r}")
            self.refused += int(bad.sum())
        return v, valid & ~bad

    def warn_refused(self, warnings: list[str]) -> None:
        if self.refused:
            warnings.append(f"{self.path}: left out {self.refused} counter values that are "
                            f"not finite numbers (first: {self.refused_at})")

    def counter_columns(self) -> list[int]:
        return [i for i, b in enumerate(self.base) if b not in IDENT]


