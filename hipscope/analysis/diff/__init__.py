"""Side-by-side comparison of traces: run A against one or more runs B.

Everything is data (no text, no Qt); `hipscope compare` and the comparison view draw it.

* **Headline** (:func:`compare`): per figure A | B | delta (= B - A) | ratio (= B / A,
  None where A is 0 or a value is missing). The figures come from the existing
  analyses: span (``Trace.time_range``), the span of a chosen marker range, GPU busy
  fraction (``stats``), idle breakdown (``idle``), queue delay p50/p95
  (``queue_delay``), kernels per second and launch overhead (``concurrency``), copies
  per direction (``report``).
* **Kernels** (:class:`KernelDiff`): kernels are matched by a *normalised* name
  (:class:`NameNormalizer`: an editable list of regex substitutions that strips what
  differs between two builds of the same code: hashes, clone and ``.kd`` suffixes,
  Triton signature suffixes; template arguments only on request). Per name: count,
  total, mean, p95 for A and B, delta and ratio of the totals; names only in B are
  *added*, only in A *removed*; rows are sorted by ``|delta total|``.
* **Instances** (:func:`instance_diff`): the i-th instance of a kernel in A against
  the i-th in B, in launch order.
* **Provenance**: GPUs, versions, command, env knobs side by side, differences
  flagged; a *not comparable* warning when the GPU products differ or the kernel sets
  barely overlap.
* **Alignment** (:func:`align`): an offset in ns per trace that puts the traces' starts,
  the n-th occurrence of a marker, or the n-th instance of a kernel at time 0.

Modules: :mod:`.names` (matching keys), :mod:`.ranges` (markers, kernels, alignment),
:mod:`.summary` (one trace's figures), :mod:`.kernels` (kernel matching),
:mod:`.comparison` (headline and verdict), :mod:`.instances` and :mod:`.to_json`.
"""

from __future__ import annotations

from .comparison import (
                         HEADLINE_LABELS,
                         IDLE_PARTS,
                         MIN_TIME_OVERLAP,
                         Comparison,
                         compare,
                         compare_many,
                         compare_summaries,
                         headline_label,
)
from .instances import InstanceDiff, instance_diff
from .kernels import KernelDiff, kernel_diff
from .names import DEFAULT_RULES, TEMPLATE_RULE, NameNormalizer, NameRule, RulesError, name_keys
from .ranges import (
                         MARKER_DOMAIN_PREFERENCE,
                         Alignment,
                         KernelRef,
                         MarkerRef,
                         Range,
                         align,
                         find_kernel,
                         find_marker,
                         kernel_rows,
                         launch_order,
)
from .summary import TraceSummary, provenance, summarize
from .to_json import to_json

__all__ = [
    "DEFAULT_RULES", "HEADLINE_LABELS", "IDLE_PARTS", "MARKER_DOMAIN_PREFERENCE",
    "MIN_TIME_OVERLAP", "TEMPLATE_RULE",
    "Alignment", "Comparison", "InstanceDiff", "KernelDiff", "KernelRef", "MarkerRef",
    "NameNormalizer", "NameRule", "Range", "RulesError", "TraceSummary",
    "align", "compare", "compare_many", "compare_summaries", "find_kernel", "find_marker",
    "headline_label", "instance_diff", "kernel_diff", "kernel_rows", "launch_order",
    "name_keys", "provenance", "summarize", "to_json",
]
