"""Graph-replay completeness: graph launches that carry far fewer kernels than their graph.

A ROCm release-candidate regression drops almost all kernels of HIP-graph replay from
profiler traces; the GPU then looks idle while it ran the graph. Where the trace
gives each launch's kernel-node count (``meta["graph_launch_kernels"]``: rocpd 3.0.2
on) that is the expected count. Elsewhere the graph's own history stands in for it:
launches of one graph (same call name, process, thread and stream: one launch site)
should carry the same kernels, so the most any of them carried is taken as the
expected count. A launch carrying at most ``FRACTION`` of that is incomplete, and so
is every launch of a site whose launches carry no kernel (nor copy) at all while the
trace links kernels to other calls. An incomplete launch's window runs from its call's
start to the next launch of the same site (for the last one: the trace's last kernel
end), and never ends before its own last kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import Trace
from ..model.units import fmt_duration
from .queue_delay import is_graph_launch

FRACTION = 0.1


@dataclass(frozen=True)
class GraphReplayGaps:
    """Per graph launch call (rows of ``trace.api``, in start order)."""
    api_rows: np.ndarray     # int64
    found: np.ndarray        # kernels linked to the launch
    expected: np.ndarray     # the site's reference count; -1 where unknown (none carried any)
    incomplete: np.ndarray   # bool
    window_start: np.ndarray  # int64 ns, for every launch (meaningful where incomplete)
    window_end: np.ndarray
    device: np.ndarray       # device the site's kernels ran on; -1 where unknown

    @property
    def count(self) -> int:
        return int(self.incomplete.sum())

    def windows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Start, end and device of the incomplete windows."""
        m = self.incomplete
        return self.window_start[m], self.window_end[m], self.device[m]

    def total_ns(self) -> int:
        """Wall-clock length of the union of the incomplete windows."""
        s, e, _ = self.windows()
        if len(s) == 0:
            return 0
        order = np.argsort(s, kind="stable")
        s, e = s[order], np.maximum.accumulate(e[order])
        new = np.ones(len(s), dtype=bool)
        new[1:] = s[1:] > e[:-1]
        grp = np.cumsum(new) - 1
        ends = np.zeros(int(grp[-1]) + 1, dtype=np.int64)
        np.maximum.at(ends, grp, e)
        return int((ends - s[new]).sum())

    def warning(self) -> str | None:
        """One sentence for people, with the counts; None when every launch is complete."""
        m = self.incomplete
        if not m.any():
            return None
        known = m & (self.expected >= 0)
        n_known, n_none = int(known.sum()), int((m & ~known).sum())
        parts = []
        if n_known:
            parts.append(f"{n_known:,} of {len(m):,} graph launches carry "
                         f"{int(self.found[known].sum()):,} kernels where other launches of "
                         f"the same graph carry {int(self.expected[known].sum()):,}")
        if n_none:
            parts.append(f"{n_none:,} {'more' if n_known else f'of {len(m):,}'} graph launches "
                         "carry no kernel, nor does any launch of their graphs")
        return (" and ".join(parts) + ": the profiler probably dropped graph-replay kernels, so "
                f"{fmt_duration(self.total_ns())} after those launches is marked unknown, "
                "not GPU idle")


def _empty() -> GraphReplayGaps:
    z = np.zeros(0, dtype=np.int64)
    return GraphReplayGaps(z, z, z, z.astype(bool), z, z, z)


def _site_keys(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """One integer per distinct launch site (call name, pid, tid, stream) of ``rows``."""
    api = trace.api
    cols = [api.codes("name")[0][rows].astype(np.int64)]
    for c in ("pid", "tid", "stream"):
        cols.append(api.numpy(c, fill=-1)[rows].astype(np.int64) if api.has(c)
                    else np.full(len(rows), -1, np.int64))
    return np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)[1].reshape(-1)


def graph_replay_gaps(trace: Trace) -> GraphReplayGaps:
    """Expected vs found kernels per graph launch, and the incomplete windows."""
    k, api = trace.kernels, trace.api
    if len(api) == 0 or len(k) == 0 or not k.has("api_index"):
        return _empty()
    codes, names = api.codes("name")
    gcode = np.array([is_graph_launch(n) for n in names] + [False])
    rows = np.flatnonzero(gcode[codes])
    if len(rows) == 0:
        return _empty()
    rows = rows[np.argsort(api.numpy("start")[rows], kind="stable")]
    ai = k.numpy("api_index", fill=-1).astype(np.int64)
    linked = ai >= 0
    if not linked.any():
        return _empty()
    per_call = np.bincount(ai[linked], minlength=len(api))
    found = per_call[rows]
    copies = _copies_per_call(trace)[rows]
    site = _site_keys(trace, rows)
    ref = np.zeros(site.max() + 1, dtype=np.int64)
    np.maximum.at(ref, site, found)
    expected = np.where(ref[site] > 0, ref[site], -1)
    nodes = _node_counts(trace, rows)  # the graph's own kernel count, where the trace has it
    expected = np.where(nodes > 0, nodes, expected)
    site_copies = np.bincount(site, weights=copies)
    other_linked = bool(linked.any() and (~gcode[codes[ai[linked]]]).any())
    incomplete = np.where(expected > 0, found <= FRACTION * expected,
                          (site_copies[site] == 0) & other_linked)
    start, end = _windows(trace, rows, site, ai, linked)
    device = _site_device(k, ai, linked, rows, site)
    return GraphReplayGaps(rows, found, expected, incomplete.astype(bool), start, end, device)


def _node_counts(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Kernel nodes of each launch's graph from ``meta["graph_launch_kernels"]``
    (``[pid, correlation_id, kernels]``, e.g. rocpd ``rocpd_graph_launch``); -1 where
    the trace does not say."""
    known = trace.meta.get("graph_launch_kernels") or []
    out = np.full(len(rows), -1, dtype=np.int64)
    api = trace.api
    if not known or not api.has("correlation_id"):
        return out
    by_key = {(int(p), int(c)): int(n) for p, c, n in known}
    pid = api.numpy("pid", fill=-1)[rows] if api.has("pid") else np.full(len(rows), -1)
    corr = api.numpy("correlation_id", fill=-1)[rows]
    for i, key in enumerate(zip(pid.tolist(), corr.tolist())):
        out[i] = by_key.get(key, -1)
    return out


def _copies_per_call(trace: Trace) -> np.ndarray:
    c = trace.copies
    if len(c) == 0 or not c.has("api_index"):
        return np.zeros(len(trace.api), dtype=np.int64)
    ai = c.numpy("api_index", fill=-1).astype(np.int64)
    return np.bincount(ai[ai >= 0], minlength=len(trace.api))


def _windows(trace: Trace, rows, site, ai, linked) -> tuple[np.ndarray, np.ndarray]:
    """[call start, next launch of the same site) or, for a site's last launch, the
    trace's last kernel end; extended to the launch's own last kernel end."""
    api_start = trace.api.numpy("start")[rows].astype(np.int64)
    k_end = trace.kernels.numpy("end").astype(np.int64)
    last = np.full(len(trace.api), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(last, ai[linked], k_end[linked])
    end = np.full(len(rows), int(k_end.max()), dtype=np.int64)
    for s in np.unique(site):
        idx = np.flatnonzero(site == s)           # already in start order
        end[idx[:-1]] = api_start[idx[1:]]
    end = np.maximum(np.maximum(end, last[rows]), api_start)
    return api_start, end


def _site_device(k, ai, linked, rows, site) -> np.ndarray:
    """The device a site's kernels ran on (the most common), -1 where none ran."""
    pos = np.full(int(ai.max()) + 1, -1, dtype=np.int64)
    inside = rows < len(pos)
    pos[rows[inside]] = np.flatnonzero(inside)
    kpos = np.where(linked, pos[np.maximum(ai, 0)], -1)
    mine = kpos >= 0
    ksite, kdev = site[kpos[mine]], k.numpy("device")[mine].astype(np.int64)
    out = np.full(site.max() + 1, -1, dtype=np.int64)
    for s in np.unique(ksite):
        vals, cnt = np.unique(kdev[ksite == s], return_counts=True)
        out[s] = vals[np.argmax(cnt)]
    return out[site]
