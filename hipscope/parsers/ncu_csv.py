"""Nsight Compute CSV (``ncu --csv``): ``--page details`` (long), ``--page raw`` (wide)
and ``--print-summary per-kernel|per-gpu`` (a summary without a timeline: _ncu_summary).

ncu's stdout is read as written: its ``==PROF==`` lines and the program's own
output before the CSV header (``"ID","Process ID","Process Name",...``) are
skipped, as are ``==PROF==``/``==WARNING==`` lines later on.

* **details** (long form): one row per kernel × metric (``Section Name, Metric
  Name, Metric Unit, Metric Value``); newer ncu adds rule columns (``Rule Name,
  Rule Type, Rule Description, Estimated Speedup Type, Estimated Speedup``) and
  rule rows whose metric fields are empty: those go to ``meta["rules"]`` (each with
  its kernel's ``id`` and row ``kernel_index``).
* **raw** (wide form): one row per kernel, metric columns such as
  ``gpu__time_duration.sum``; the row after the header is a units row with empty
  identity cells.

Values lose their thousands separators (``"3,189,379,398.59"``); non-numeric
metric values (``CachePreferNone``, ``PolicySpread``...) are not counters and are
left out (counted in ``meta["non_numeric_metrics"]``). Units go to
``counters.unit``. ``Block Size``/``Grid Size`` ``"(256, 1, 1)"`` give
``block_x..z``; ncu's grid counts blocks, hipscope's ``grid_x`` counts
work-items, so ``grid_x = grid blocks × block_x``.

**Timeline: synthetic, by decision.** ncu serialises kernels and records no
timestamps, but ``kernels.start``/``end`` are required. Rather than zero-length
kernels (which would make every duration figure 0), kernels are laid
back-to-back from t = 0 in ncu's ID order, each lasting its measured GPU time
(the first of DURATION_METRICS a launch has: ``gpu__time_duration.sum``, the details
page's ``Duration``, the other roll-ups of ``gpu__time_duration``; converted to ns by
its unit, whatever the page: ``--metrics`` gives the long form with raw metric names).
Durations, per-kernel statistics and totals are real; positions, gaps, overlap
and busy fraction are not. ``meta["synthetic_timeline"] = True``, ``meta["clock"]``
says so, and a warning repeats it. A kernel without a duration metric gets zero
length and is named in a warning. ncu's version is not in the CSV:
``tool_version`` stays null.

A kernel is a launch, not an ID: ncu writes one launch's rows together, so a new
launch starts where the identity columns change or a metric repeats (raw page: every
row); IDs shared by several launches are kept apart and warned about. Values that are
not finite (``inf``) are left out with a warning; a duration too large for int64 ns
gives zero length, named in a warning. ncu ends every line with a newline: a last line
without one is dropped ("cut short") unless it has every field and a closed last quote.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..model import Trace
from .base import CancelledFn, ProgressFn, head_text, register

FORMAT = "ncu-csv"
CLOCK = ("synthetic: kernels laid back-to-back from 0 by measured duration "
         "(ncu serialises kernels and records no timestamps)")
_HEADER_RE = re.compile(r'^\s*"?ID"?\s*,\s*"?Process ID"?\s*,', re.M)
# --print-summary per-kernel|per-gpu: no ID, an Invocations column (see _ncu_summary)
_SUMMARY_RE = re.compile(r'^\s*"?Process ID"?\s*,\s*"?Process Name"?\s*,[^\n]*'
                         r'"?Invocations"?\s*,', re.M)


def _header_match(text: str) -> re.Match | None:
    """The first ncu CSV header line: per-launch (``"ID",...``) or ``--print-summary``."""
    found = [m for m in (_HEADER_RE.search(text), _SUMMARY_RE.search(text)) if m]
    return min(found, key=lambda m: m.start()) if found else None


@register
class NcuCsvReader:
    name = FORMAT
    description = "Nsight Compute CSV (ncu --csv --page details|raw)"
    patterns = ("*.csv", "*.txt", "*.log")
    priority = 40
    directories = False

    def sniff(self, path: Path) -> float:
        if path.is_dir():
            return 0.0
        head = head_text(path, 65536)
        m = _header_match(head)
        if m and "Kernel Name" in head[m.start():m.start() + 400]:
            return 0.95
        if "==PROF==" in head:
            return 0.3
        return 0.0

    def read(self, path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
        from ._ncu_read import NcuCsvReading

        return NcuCsvReading().read(path, progress, cancelled)


# the reading stack (_ncu_read, _ncu_tables, _ncu_summary) is imported by read(); its
# names stay reachable here
_LAZY = {n: "._ncu_read" for n in ("DURATION_METRICS", "IDENT", "LONG", "RULES", "UNIT_NS",
                                   "NcuCsvReading")}


def __getattr__(name: str):
    from ._lazy import lazy_attr

    return lazy_attr(__name__, _LAZY, name)
