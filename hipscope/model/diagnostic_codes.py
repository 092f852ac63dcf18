"""Stable codes for reader warnings that are still plain strings, by message pattern.

Readers give a warning its code where they make it (``parsers._common.warn`` or
``diagnostics.coded``). Until every reader does, this table names the code of each
plain warning a reader can emit, from the constant words of its message, so that
``diagnostics()`` never has to fall back to ``reader.warning`` for a known warning.
Every pattern is tested against the message its site writes
(``tests/unit/test_diagnostic_codes.py``), and every warning site of the readers is
checked to be coded or matched here. First match wins; codes are in docs/readers.md.
"""

from __future__ import annotations

import functools
import re

__all__ = ["PATTERNS", "code_of", "where_of"]

# (code, severity, pattern searched in the message)
PATTERNS: tuple[tuple[str, str, str], ...] = (
    # input cut short: JSON, protobuf (gzip is coded where it is read)
    ("input.cut_events", "warning", r"the JSON (text )?ends early|the JSON text is cut short"
                                    r"|the file ends inside packet"),
    ("input.bad_events", "warning", r"elements of traceEvents are not objects"),
    ("input.skipped_file", "warning", r"^skipped .*; it is not read as part of the "
                                      r"rocprofv3 set"),
    # empty or summary-only outputs
    ("trace.no_kernels", "warning", r"the profiler recorded no (GPU )?kernels"),
    ("trace.kernels_not_read", "warning", r"no GPU kernels were read although the trace has"),
    ("timeline.summary_only", "info", r"an Nsight Compute --print-summary file"),
    ("timeline.no_timestamps", "warning", r"has no BeginNs/EndNs timestamps \(profiled "
                                          r"without --timestamp"),
    # values and rows
    ("values.not_finite", "warning", r"(values|rows whose values) (that )?are not finite"),
    ("values.out_of_range", "warning", r"grid sizes exceed 2\*\*31|grid over 2\^31"
                                       r"|too large for hipscope's|do not fit their column"
                                       r"|value\(s\) of .* do not fit|values do not fit in"),
    ("values.duration_overflow", "warning", r"kernel durations do not fit in 64-bit ns"),
    ("rows.missing_fields", "warning", r"without a (timestamp|start/end timestamp)"
                                       r"|kernel rows have no BeginNs/EndNs|have no Agent_Id "
                                       r"and were left out|: skipped \S+ |^dropped \d+ .*without"),
    ("times.end_before_start", "warning", r"^dropped \d+ .*before they start"),
    ("times.low_resolution", "warning", r"had no BeginNs/EndNs args; their times come from"
                                        r"|timestamps were saved in lossy floating-point"),
    ("times.bad_base", "warning", r"baseTimeNanoseconds .* is not a time"),
    # links between tables
    ("links.no_launch_call", "warning", r"have no (launch|runtime) call with the same "
                                        r"correlation|have no matching API call"),
    ("links.no_correlation_id", "warning", r"have no correlation id \(Correlation_Id 0"),
    ("links.pid_mismatch", "warning", r"does not appear in the API files' Process_Id"),
    ("links.ambiguous_correlation", "warning", r"correlation id shared by several API rows"
                                               r"|Index \(correlation id\) is not unique"),
    ("links.wrong_index", "warning", r"have the Index of a HIP call that queues no GPU work"),
    ("links.unmatched_flows", "warning", r"launch flow events could not be matched"),
    ("links.duplicate_api_rows", "warning", r"API rows appear in more than one file"),
    ("counters.unlinked", "warning", r"counter rows (cannot be linked|have no matching kernel"
                                     r"|have neither Dispatch_Id nor Correlation_Id)"),
    ("counters.kernel_mismatch", "warning", r"counter rows name a different kernel"),
    ("counters.no_timestamps", "warning", r"counter_collection has .* no Start/End_Timestamp"
                                          r"|counter dispatches have no start/end"),
    ("counters.no_agent", "warning", r"counter rows have no Agent_Id"),
    ("counters.no_value", "warning", r"counter rows have no value"),
    ("counters.pass_mismatch", "warning", r"pass files hold dispatches that|dispatches do not "
                                          r"match pmc_perf\.csv|none of its .* dispatches is "
                                          r"one of"),
    ("counters.conflicting_passes", "warning", r"counters were measured again in other replay"),
    ("counters.missing_field", "warning", r"^\S.*: \S+ of \S+ kernels get no "),
    # devices, ranks, copies
    ("devices.unnamed", "warning", r"no deviceProperties: devices are named by id"
                                   r"|is not in agent_info\.csv; shown as an unnamed GPU"),
    ("devices.not_a_gpu", "warning", r"which agent_info\.csv says is not a GPU"),
    ("devices.unknown", "warning", r"name no agent \(no agent annotation"),
    ("devices.id_assumed", "warning", r"pairs are not in TARGET_INFO_CUDA_DEVICE"),
    ("ranks.duplicate", "warning", r"several files claim the same rank"),
    ("copies.unknown_direction", "warning", r"memory copy directions .* are not host/device"),
    ("trace.summarised_only", "info", r"events are summarised in meta\['.*'\] only"),
    # format-specific
    ("legacy.kern_ops_mismatch", "warning", r"tables KERN .* and OPS .* do not list the same"),
    ("ncu.shared_kernel_ids", "warning", r"kernel IDs are shared by"),
    ("ncu.no_duration", "warning", r"kernels have no duration metric"),
    ("nsys.graph_nodes_unlinked", "warning", r"carry a CUDA graph node id \(graphNodeId\) "
                                             r"but are not linked"),
    ("nsys.whole_graphs", "warning", r"CUDA graph executions were traced as a whole"),
    ("nsys.open_ranges", "warning", r"NVTX ranges that never ended"),
    ("nsys.missing_strings", "warning", r"name a string id that StringIds does not hold"),
    ("pftrace.unknown_category", "warning", r"slice\(s\) of category .* are not GPU work"),
    ("pftrace.unended_slices", "warning", r"slice\(s\) have a begin but no end"),
    ("pftrace.undefined_interned", "warning", r"refer to interned names or clocks that were "
                                              r"never defined"),
    ("pftrace.lost_state", "warning", r"need interned state that was lost"),
    ("pftrace.unconverted_clock", "warning", r"no clock snapshot relates clock"),
    ("telemetry.not_shown", "warning", r"^telemetry not shown"),
    ("telemetry.outside_trace", "warning", r"telemetry samples lie outside the trace"),
)

@functools.cache
def _compiled() -> tuple[tuple[str, str, re.Pattern[str]], ...]:
    """The patterns compiled, on first use (~0.01 s: not at every start-up)."""
    return tuple((code, sev, re.compile(p)) for code, sev, p in PATTERNS)


def code_of(message: str) -> tuple[str, str] | None:
    """(code, severity) of a plain warning, or None when no pattern knows it."""
    for code, sev, pat in _compiled():
        if pat.search(message):
            return code, sev
    return None


_PLACE = re.compile(r"^(.+?): ")


def where_of(message: str) -> str | None:
    """The file a plain warning names first (``PATH: ...``): an absolute path, or a
    word with a dot or slash in it; None when the sentence starts otherwise."""
    m = _PLACE.match(message)
    if m is None:
        return None
    place = m.group(1)
    if place.startswith("/") or (" " not in place and ("." in place or "/" in place)):
        return place
    return None
