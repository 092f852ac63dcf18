"""Queue delay: host launch -> kernel start, per kernel.

``from_api_start`` = kernel start - launching call start; ``from_api_end`` = kernel
start - launching call end (can be negative: the kernel may begin before the
launch call returns). Kernels whose launching call is a graph launch
(hipGraphLaunch, cudaGraphLaunch, cuGraphLaunch) are not each "queued": they are
left out and counted separately. Legacy rocprof gives ``from_dispatch`` =
BeginNs - DispatchNs (host packet submit) instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import Trace
from ..model.api_names import GRAPH_LAUNCH_MARKERS, is_graph_launch, per_code  # noqa: F401


@dataclass(frozen=True)
class QueueDelays:
    kernel_rows: np.ndarray          # kernels with a per-kernel delay
    from_api_start: np.ndarray | None
    from_api_end: np.ndarray | None
    from_dispatch: np.ndarray | None
    graph_rows: np.ndarray           # kernels launched by a graph launch

    @property
    def linked(self) -> bool:
        return self.from_api_start is not None or self.from_dispatch is not None


def queue_delays(trace: Trace) -> QueueDelays:
    k = trace.kernels
    empty = np.zeros(0, dtype=np.int64)
    start = k.numpy("start") if len(k) else empty
    from_dispatch = None
    if k.has("dispatch_ns"):
        ok = k.valid("dispatch_ns")
        from_dispatch = (start - k.numpy("dispatch_ns", fill=0))[ok]
    if not k.has("api_index") or len(trace.api) == 0:
        return QueueDelays(np.flatnonzero(k.valid("dispatch_ns")) if from_dispatch is not None
                           else empty, None, None, from_dispatch, empty)
    api_idx = k.numpy("api_index", fill=-1)
    linked = api_idx >= 0
    codes, names = trace.api.codes("name")
    graph_code = per_code(names, is_graph_launch)
    if graph_code.any():
        kcode = np.where(linked, codes[np.maximum(api_idx, 0)], len(names))
        graph = graph_code[kcode] & linked
    else:                                   # no graph launch calls: none to look up
        graph = np.zeros(len(k), dtype=bool)
    if linked.all() and not graph.any():    # every kernel has its own launch: no take
        rows, idx, k_start = np.arange(len(k)), api_idx, start
    else:
        rows = np.flatnonzero(linked & ~graph)
        idx, k_start = api_idx[rows], start[rows]
    a_start = trace.api.numpy("start")[idx]
    a_end = trace.api.numpy("end")[idx]
    return QueueDelays(rows, k_start - a_start, k_start - a_end, from_dispatch,
                       np.flatnonzero(graph))


def summary(values: np.ndarray | None) -> dict | None:
    if values is None:
        return None
    if len(values) == 0:
        return {"p50": None, "p95": None, "max": None, "count": 0}
    p50, p95 = np.quantile(values, (0.5, 0.95))
    return {"p50": int(round(p50)), "p95": int(round(p95)), "max": int(values.max()),
            "count": int(len(values))}
