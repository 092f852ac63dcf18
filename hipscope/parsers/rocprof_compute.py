"""rocprof-compute (Omniperf) workload folders: ``workloads/<name>/<arch>/``.

Opening the folder, its parent ``workloads/<name>/`` (when it holds one arch
folder) or any CSV inside it (pmc_perf.csv, SQ_*.csv, timestamps.csv, ...) reads
the whole folder. Four back-end layouts are understood:

* **rocprof v1** (Omniperf 2.x): ``pmc_perf.csv`` wide form (identity columns,
  hundreds of counters, merged replay passes whose duplicated identity columns
  carry ``_1.._N`` suffixes, ``Start_Timestamp, End_Timestamp`` last),
  ``SQ_*.csv`` extra passes, ``timestamps.csv`` with ``DispatchNs``.
* **rocprofv2**: the same, with timestamps that were saved in lossy
  ``8.1097E+14`` notation (parsed as float and rounded; a warning says the
  times are lossy — usually every kernel collapses onto one or two instants).
* **rocprofv3**: ``pmc_perf_<n>.csv`` per pass plus the merged ``pmc_perf.csv``
  (whose Start/End are medians over passes, fractional ns, rounded here).
* **rocpd back end**: ``pmc_perf.csv`` in long form (``GPU_ID, Dispatch_ID, ...,
  Counter_Name, Counter_Value``), the only CSV; newer rocprof-compute keeps the passes
  as ``results_pmc_perf_<n>.csv[.gz]`` in that long form (optionally a leading GUID):
  recognised by header, not name; kernels are pass 0's dispatches, counters every
  pass's rows for them (same Dispatch_ID).

Output: one kernel per dispatch of ``pmc_perf.csv`` (``pmc_perf_0.csv`` when the
merged file is missing) with start/end from its merged ``Start_Timestamp`` /
``End_Timestamp`` columns; ``counters`` in long form, linked by ``kernel_index``,
holding every counter of every pass file merged per dispatch. Pass files are
matched to pmc_perf.csv's dispatches by row position (Omniperf joins them that
way; rocprofv2's timestamps.csv numbers dispatches from 1, pmc_perf.csv from 0)
when the row counts agree, else by Dispatch_ID. A counter seen in several files
is kept once: identical values are deduplicated silently; when a re-measurement
differs (GRBM_COUNT, SQ_CYCLES... measured again in SQ_*.csv passes), the
pmc_perf.csv value wins and a warning names the counters. In ``SQ_<X>.csv`` the
pass's ``SQ_ACCUM_PREV_HIRES`` accumulator is renamed ``SQ_<X>_ACCUM`` (the name
the rocpd back end uses), since each pass accumulates a different level counter.

Kernels were serialised and replayed once per pass: ``meta["serialized_replay"]
= True`` and a warning says the times are not a real timeline. ``dispatch_ns``
comes from timestamps.csv ``DispatchNs`` only where that file's Start_Timestamp
equals the kernel's start (same run); pid/tid/queue likewise; a warning counts the
kernels left without (End < Start, NaN, another run). Side files and pass-file
discovery: _compute_side.py. A last line cut short is dropped with a warning; inf
counter values are left out. No dispatches (only a header): an empty trace, warned.
"""

from __future__ import annotations

from pathlib import Path

from ..model import Trace
from ._compute_csv import FORMAT, workload_dir
from .base import CancelledFn, ProgressFn, register


@register
class RocprofComputeReader:
    name = FORMAT
    description = "rocprof-compute / Omniperf workload folder"
    patterns = ("pmc_perf.csv", "pmc_perf_*.csv", "SQ_*.csv", "sysinfo.csv")
    priority = 45
    directories = True

    def sniff(self, path: Path) -> float:
        wd = workload_dir(path)
        if wd is None:
            return 0.0
        return 0.95 if (wd / "sysinfo.csv").is_file() else 0.8

    def read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
        from ._compute_read import RocprofComputeReading

        return RocprofComputeReading().read(path, progress, cancelled)


# the reading (_compute_read) is imported by read(); its names stay reachable here
_LAZY = {"RocprofComputeReading": "._compute_read"}


def __getattr__(name: str):
    from ._lazy import lazy_attr

    return lazy_attr(__name__, _LAZY, name)
