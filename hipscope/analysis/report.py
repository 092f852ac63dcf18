"""The trace report: the figures `hipscope report` prints (JSON or text)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model import Trace
from ..model.diagnostics import GENERIC, Diagnostic, diagnostics
from ..model.progress import CancelledFn
from ..model.units import fmt_duration
from .context import TraceAnalyses, analyses_of


def build_report(trace: Trace, top: int = 20, analyses: TraceAnalyses | None = None,
                 cancelled: CancelledFn | None = None) -> dict[str, Any]:
    """One JSON-serialisable dict; keys documented in README (`hipscope report`).
    Every figure comes from the trace's analysis service (``analyses``)."""
    an = analyses if analyses is not None else analyses_of(trace)
    tr = trace.time_range()
    real_timeline = has_real_timeline(trace)
    an.prefetch(_report_results(trace, real_timeline), cancelled)   # two at a time
    busy = an.busy_fraction(cancelled) if real_timeline else {}
    ks = an.kernel_stats(cancelled)
    order = np.argsort(-ks.total, kind="stable")[:top]
    gpu_time = float(ks.total.sum()) if len(ks.total) else 0.0
    gaps = an.graph_gaps(cancelled)
    qdelay = an.queue_delay_summary(cancelled)      # kept on disk: no sort on reopen
    return {
        "format": trace.format,
        "sources": [str(s) for s in trace.meta.get("sources", [])],
        "kernel_count": int(len(trace.kernels)),
        "api_call_count": int(len(trace.api)),
        "marker_count": int(len(trace.markers)),
        "counter_count": int(len(trace.counters)),
        "devices": _devices(trace, busy),
        "span_ns": None if tr is None else int(tr[1] - tr[0]),
        "gpu_busy_fraction": (float(np.mean(list(busy.values()))) if busy else None),
        "gpu_busy_fraction_per_device": {str(d): v for d, v in sorted(busy.items())},
        "top_kernels": [
            {
                "name": ks.names[i], "count": int(ks.count[i]),
                "total_ns": int(round(ks.total[i])), "mean_ns": int(round(ks.mean[i])),
                "p50_ns": int(round(ks.p50[i])), "p95_ns": int(round(ks.p95[i])),
                "fraction_of_gpu_time": (float(ks.total[i] / gpu_time) if gpu_time else None),
            }
            for i in order
        ],
        "queue_delay_ns": qdelay,
        "copies": copies_by_direction(trace),
        "idle_breakdown_ns": (an.idle_json(cancelled)
                              if len(trace.kernels) and real_timeline else None),
        "concurrency": an.concurrency(cancelled) if real_timeline else None,
        "launch_stats": an.launch_stats(cancelled) if real_timeline else None,
        "metadata": _meta(trace),
        "run": trace.meta.get("run"),
        "incomplete_graph_windows": {"count": gaps.count, "total_ns": gaps.total_ns()},
        **_warnings(trace, real_timeline, gaps.warning(), an.sanity(cancelled)),
    }


def _report_results(trace: Trace, real_timeline: bool) -> list[str]:
    """The analyses the report reads, the longest first (so two threads end together)."""
    timeline = ["idle_json"] if len(trace.kernels) else []
    timeline += ["concurrency", "busy_fraction", "launch_stats"]
    return [*(timeline if real_timeline else []), "kernel_stats", "queue_delay_summary",
            "sanity", "graph_gaps"]


def _warnings(trace: Trace, real_timeline: bool, graph_gaps: str | None,
              sanity: list[str]) -> dict[str, list]:
    """``warnings`` (strings) and ``diagnostics`` (the same, each with its code): the
    trace's, the sanity checks' and the report's own."""
    more = [Diagnostic("analysis.sanity", "warning", w) for w in sanity]
    if graph_gaps:
        more.append(Diagnostic("analysis.incomplete_graph_replay", "warning", graph_gaps))
    if not real_timeline and len(trace.kernels):
        more.append(Diagnostic("report.no_real_timeline", "info", NO_REAL_TIMELINE))
    return {"warnings": trace.warnings + [d.message for d in more],
            "diagnostics": diagnostics(trace) + [d.as_dict() for d in more]}


#: why busy, idle and concurrency are withheld (the report's and compare's sentence)
NO_REAL_TIMELINE = ("GPU busy, idle and concurrency figures are left out: the kernel times in "
                    "this file are not a real timeline (serialised replay or no timestamps)")


def has_real_timeline(trace: Trace) -> bool:
    """False for formats whose kernel times are serialised replays (rocprof-compute,
    Nsight Compute) or absent (legacy counter-only CSV): busy/idle would mislead."""
    m = trace.meta
    return not (m.get("synthetic_timeline") or m.get("serialized_replay")
                or m.get("untimed_kernels"))


def _devices(trace: Trace, busy: dict[int, float]) -> list[dict[str, Any]]:
    d = trace.devices
    out = []
    for i in range(len(d)):
        row = d.row(i)
        out.append({"index": int(row["index"]), "name": row["name"],
                    "vendor": row.get("vendor"), "arch": row.get("arch"),
                    "busy_fraction": busy.get(int(row["index"]))})
    return out


def copies_by_direction(trace: Trace) -> list[dict[str, Any]]:
    c = trace.copies
    if len(c) == 0:
        return []
    codes, cats = c.codes("direction")
    dur = c.numpy("end") - c.numpy("start")
    nbytes = c.numpy("bytes", fill=0).astype(np.int64)
    has_bytes = c.valid("bytes")
    out = []
    for code in np.unique(codes):
        m = codes == code
        known = has_bytes[m]
        out.append({
            "direction": cats[code], "count": int(m.sum()),
            "bytes": int(nbytes[m][known].sum()) if known.any() else None,
            "total_ns": int(dur[m].sum()),
        })
    out.sort(key=lambda r: -r["total_ns"])
    return out


_META_KEYS = ("tool", "tool_version", "command", "host", "pids", "clock", "rocm_version",
              "hip_version", "cuda_version", "driver_version")


def _meta(trace: Trace) -> dict[str, Any]:
    return {k: trace.meta[k] for k in _META_KEYS if trace.meta.get(k) not in (None, [], "")}


def format_text(rep: dict[str, Any]) -> str:
    """The human-readable report."""
    lines = [f"Format:   {rep['format']}"]
    for s in rep["sources"][:4]:
        lines.append(f"Source:   {s}")
    if len(rep["sources"]) > 4:
        lines.append(f"          ... and {len(rep['sources']) - 4} more files")
    for k, v in rep["metadata"].items():
        lines.append(f"{k.replace('_', ' ').capitalize() + ':':<10}{v}")
    lines.extend(run_lines(rep.get("run")))
    lines.append(f"Span:     {_ns(rep['span_ns'])}")
    lines.append(f"Kernels:  {rep['kernel_count']:,}   API calls: {rep['api_call_count']:,}   "
                 f"markers: {rep['marker_count']:,}   counter values: {rep['counter_count']:,}")
    for d in rep["devices"]:
        busy = d["busy_fraction"]
        b = f"  busy {busy:.1%}" if busy is not None else ""
        lines.append(f"Device {d['index']}: {d['name']}{' (' + d['arch'] + ')' if d['arch'] else ''}{b}")
    q = rep["queue_delay_ns"]
    if q:
        for key in ("from_api_start", "from_api_end", "from_dispatch"):
            s = q.get(key)
            if s and s["count"]:
                lines.append(f"Queue delay {key.replace('_', ' ')}: p50 {_ns(s['p50'])}, "
                             f"p95 {_ns(s['p95'])}, max {_ns(s['max'])} over {s['count']:,} kernels")
        if q.get("graph_launch_kernels"):
            lines.append(f"  ({q['graph_launch_kernels']:,} kernels launched by graph launches "
                         "are counted separately)")
    else:
        lines.append("Queue delay: not available (the trace does not link kernels to launches)")
    idle = rep.get("idle_breakdown_ns")
    if idle:
        tot = idle["total"]          # wall clock: time several GPUs idle at once counts once
        all_idle = idle.get("any_idle_ns") or sum(tot.values())
        if all_idle:
            parts = ", ".join(f"{k.replace('_', ' ')} {_ns(v)} ({v / all_idle:.0%})"
                              for k, v in sorted(tot.items(), key=lambda kv: -kv[1]) if v)
            lines.append(f"GPU idle: {_ns(all_idle)}: {parts}")
        if idle.get("unknown_incomplete_graph_replay_ns"):
            lines.append(f"  unknown (incomplete graph replay): "
                         f"{_ns(idle['unknown_incomplete_graph_replay_ns'])}, not counted as idle")
    if rep["top_kernels"]:
        lines.append("")
        lines.append(f"{'Total':>12} {'%':>6} {'Count':>8} {'Mean':>10} {'p95':>10}  Kernel")
        for t in rep["top_kernels"]:
            frac = t["fraction_of_gpu_time"]
            lines.append(f"{_ns(t['total_ns']):>12} {frac * 100 if frac else 0:>5.1f}% "
                         f"{t['count']:>8,} {_ns(t['mean_ns']):>10} {_ns(t['p95_ns']):>10}  "
                         f"{_short(t['name'])}")
    if rep["copies"]:
        lines.append("")
        for c in rep["copies"]:
            b = f"{c['bytes']:,} B" if c["bytes"] is not None else "bytes unknown"
            lines.append(f"Copies {c['direction']:<7} {c['count']:>7,}  {_ns(c['total_ns']):>10}  {b}")
    codes = {d["message"]: d["code"] for d in rep.get("diagnostics") or []}
    for w in rep["warnings"]:
        lines.append(f"Warning [{codes.get(w, GENERIC)}]: {w}")
    return "\n".join(lines)


def run_lines(run: dict[str, Any] | None) -> list[str]:
    """The run a trace came from (``meta["run"]``), for people."""
    if not run:
        return []
    env = run.get("env") or {}
    prof = run.get("profiler") or {}
    opts = ", ".join(f"{k}={v}" for k, v in sorted((prof.get("options") or {}).items()))
    gpus = ", ".join(str(g.get("name")) for g in run.get("gpus") or []) or "none recorded"
    vers = ", ".join(f"{k} {v}" for k, v in (run.get("versions") or {}).items() if v)
    return [f"Run:      {run.get('id') or run.get('source')}  ({run.get('state') or '-'})",
            f"  command: {' '.join(run.get('command') or []) or '-'}",
            f"  cwd:     {run.get('cwd') or '-'}   target: {run.get('target') or '-'}",
            f"  profiler: {prof.get('name') or '-'}" + (f" ({opts})" if opts else ""),
            "  env:     " + (" ".join(f"{k}={v}" if v is not None else f"-{k}"
                                      for k, v in env.items()) or "no changes"),
            f"  GPUs:    {gpus}" + (f"   versions: {vers}" if vers else "")]


def _short(name: str, n: int = 100) -> str:
    return name if len(name) <= n else name[: n - 3] + "..."


def _ns(v: float | int | None) -> str:
    return "-" if v is None else fmt_duration(v)
