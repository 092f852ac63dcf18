"""Trace sanity checks, shown to the user as warnings."""

from __future__ import annotations

import numpy as np

from ..model import Trace
from ..model.api_names import is_graph_launch, per_code


def sanity_warnings(trace: Trace) -> list[str]:
    k, api = trace.kernels, trace.api
    out: list[str] = []
    if len(k) == 0:
        return out
    if k.has("correlation_id"):
        corr = k.numpy("correlation_id", fill=-1).astype(np.int64)
        zero = int(np.count_nonzero(corr == 0))
        if zero:
            out.append(f"{zero:,} kernels have correlation id 0 (not linkable to a launch)")
        api_idx = k.numpy("api_index", fill=-1).astype(np.int64)
        graph = np.zeros(len(k), dtype=bool)
        if len(api):
            codes, names = api.codes("name")
            gcode = per_code(names, is_graph_launch)
            graph = (api_idx >= 0) & gcode[np.where(api_idx >= 0, codes[np.maximum(api_idx, 0)],
                                                    len(names))]
        pid = k.numpy("pid", fill=-1).astype(np.int64)
        key = (pid << 40) ^ corr
        key = key[(corr > 0) & ~graph]
        dup = _shared_values(key)
        if dup:
            out.append(f"{dup:,} correlation ids are shared by several kernels outside graph "
                       "launches")
    if k.has("api_index") and len(api):
        api_idx = k.numpy("api_index", fill=-1).astype(np.int64)
        linked = api_idx >= 0
        a = api_idx[linked]
        early = int(np.count_nonzero(k.numpy("start")[linked] < api.numpy("start")[a]))
        if early:
            out.append(f"{early:,} kernels start before their launch call began "
                       "(host/GPU clock skew)")
        if k.has("stream") and api.has("stream"):
            ks = k.numpy("stream", fill=-1)[linked]
            as_ = api.numpy("stream", fill=-1)[a]
            both = (ks >= 0) & (as_ >= 0)
            differ = int(np.count_nonzero(ks[both] != as_[both]))
            if differ:
                out.append(f"{differ:,} kernels ran on a stream other than their launch "
                           "call's stream")
    return out


def _shared_values(key: np.ndarray) -> int:
    """How many distinct values occur more than once. A stable sort: ids come nearly
    in order, which it merges in one pass (np.unique's quicksort does not)."""
    if len(key) < 2:
        return 0
    s = np.sort(key, kind="stable")
    eq = s[1:] == s[:-1]
    return int(eq[0]) + int(np.count_nonzero(eq[1:] & ~eq[:-1]))
