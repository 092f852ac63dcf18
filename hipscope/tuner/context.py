"""What every rule reads: the trace and the analyses of it, each computed once.

Rules never re-implement an analysis: idle breakdown (``analysis.idle``), queue delay
(``analysis.queue_delay``), concurrency and launch statistics
(``analysis.concurrency``) come from the modules documented in docs/analysis.md.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from ..analysis import queue_delay as qd
from ..analysis.context import TraceAnalyses, analyses_of
from ..analysis.report import has_real_timeline
from ..model import Trace
from ..model.progress import CancelledFn
from .knobs import parse_version


class TraceContext:
    """A trace plus lazily computed analyses and provenance helpers.

    ``probes`` holds figures measured outside this trace (e.g. ``graph_node_ns``: the
    GPU time one graph node costs at replay, measured on a graph-replay trace of the
    same machine); rules use them when present. The analyses come from the trace's one
    analysis service (``analyses``; default :func:`analyses_of`), the same objects the
    report and the panels read; ``cancelled`` goes to each of them, so a closing tab
    stops the rules between analyses, not only between rules.
    """

    def __init__(self, trace: Trace, probes: dict[str, float] | None = None,
                 analyses: TraceAnalyses | None = None, cancelled: CancelledFn | None = None):
        self.trace = trace
        self.probes = dict(probes or {})
        self.analyses = analyses if analyses is not None else analyses_of(trace)
        self.cancelled = cancelled

    # ------------------------------------------------------------ analyses
    @cached_property
    def real_timeline(self) -> bool:
        return has_real_timeline(self.trace) and len(self.trace.kernels) > 0

    @cached_property
    def idle(self):
        return self.analyses.idle(self.cancelled)

    @cached_property
    def concurrency(self) -> dict:
        return self.analyses.concurrency(self.cancelled)

    @cached_property
    def launch(self) -> dict:
        return self.analyses.launch_stats(self.cancelled)

    @cached_property
    def delays(self) -> qd.QueueDelays:
        return self.analyses.queue_delays(self.cancelled)

    @cached_property
    def graph_kernel(self) -> np.ndarray:
        """Per kernel: True when a graph launch queued it."""
        out = np.zeros(len(self.trace.kernels), dtype=bool)
        out[self.delays.graph_rows] = True
        return out

    @cached_property
    def span(self) -> tuple[int, int]:
        tr = self.trace.time_range()
        return (0, 0) if tr is None else (int(tr[0]), int(tr[1]))

    @property
    def span_ns(self) -> int:
        return self.span[1] - self.span[0]

    @cached_property
    def kernel_window(self) -> tuple[int, int]:
        k = self.trace.kernels
        if len(k) == 0:
            return self.span
        return int(k.numpy("start").min()), int(k.numpy("end").max())

    @cached_property
    def linked(self) -> bool:
        """Kernels are linked to their launch calls (idle can split host wait)."""
        k = self.trace.kernels
        return k.has("api_index") and len(self.trace.api) > 0

    # ------------------------------------------------------------ provenance
    @cached_property
    def run(self) -> dict[str, Any]:
        """The run the trace came from (``meta["run"]``: run folder or stated), or {}."""
        run = self.trace.meta.get("run")
        return dict(run) if isinstance(run, dict) else {}

    @cached_property
    def _env_sources(self) -> dict[str, tuple[str | None, str]]:
        """name -> (effective value, where it came from); a later layer wins: the
        trace's own metadata, the target's environment, what the profiler's wrapper
        set, then the run's own changes (and what the user stated)."""
        run, out = self.run, {}
        for k, v in (self.trace.meta.get("env") or {}).items():
            out[str(k)] = (str(v), "the trace's own metadata")
        rid = f"run {run['id']}" if run.get("id") else "the run"
        for k, v in (run.get("target_env") or {}).items():
            out[str(k)] = (str(v), f"the target's environment when {rid} started")
        for k, v in (run.get("profiler_env") or {}).items():
            out[str(k)] = (None, f"unset by the profiler's wrapper of {rid}") if v is None \
                else (str(v), f"the profiler's wrapper of {rid}")
        stated = set(run.get("stated_env") or [])
        for k, v in (run.get("env") or {}).items():
            where = "stated by the user" if k in stated else f"the environment of {rid}"
            out[str(k)] = (None if v is None else str(v),
                           f"unset in {where}" if v is None else where)
        return out

    @property
    def env(self) -> dict[str, Any]:
        """The effective environment knobs (unset ones left out)."""
        return {k: v for k, (v, _) in self._env_sources.items() if v is not None}

    def knob(self, name: str, default: Any = None) -> tuple[Any, str]:
        """(effective value of env knob ``name``, where it came from): the run's env,
        then the trace's own metadata, then ``default`` (the documented one)."""
        v, where = self._env_sources.get(name, (None, ""))
        if v is None:
            return default, ("the documented default" + (f" ({name} {where})" if where
                                                         else ""))
        return v, where

    @property
    def command(self) -> Any:
        """The program's command: the run's, else the trace's own metadata's."""
        return self.run.get("command") or self.trace.meta.get("command")

    @cached_property
    def vendor(self) -> str | None:
        d = self.trace.devices
        vendors = {str(v) for v in d.strings("vendor") if v} if len(d) else set()
        if not vendors and self.trace.meta.get("vendor"):
            vendors = {str(self.trace.meta["vendor"])}
        if len(vendors) == 1:
            return vendors.pop()
        m = self.trace.meta
        if m.get("rocm_version") or m.get("hip_version"):
            return "AMD"
        if m.get("cuda_version"):
            return "NVIDIA"
        return None

    @cached_property
    def archs(self) -> list[str]:
        d = self.trace.devices
        return [str(a) for a in d.strings("arch") if a] if len(d) else []

    @cached_property
    def device_names(self) -> list[str]:
        d = self.trace.devices
        return [str(a) for a in d.strings("name") if a] if len(d) else []

    @cached_property
    def rocm_version(self) -> tuple[int, int] | None:
        m = self.trace.meta
        return parse_version(m.get("rocm_version")) or parse_version(m.get("hip_version"))

    @cached_property
    def is_pytorch(self) -> bool:
        tool = str(self.trace.meta.get("tool") or "").lower()
        if "pytorch" in tool or "kineto" in tool:
            return True
        cmd = str(self.command or "")
        if "torch" in cmd:
            return True
        _, names = self.trace.kernels.codes("name")
        return any("at::native" in n for n in names[:2000])

    def device_busy(self, device: int) -> int:
        return int(self.concurrency["per_device"].get(str(device), {}).get("busy_ns", 0))
