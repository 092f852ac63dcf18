"""The track tree of a pftrace export: per device ``GPU <i> (<name>)`` -> ``Queue <q>``
-> ``Stream <s>`` tracks for kernels and copies, one process track per pid and one
thread track per (pid, tid) for API calls and markers, and extra lanes where slices
on one track would cross (every track nests properly)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

K_KERNEL, K_COPY, K_API, K_MARKER = 0, 1, 2, 3


def i64(table, col: str, fill: int = -1) -> tuple[np.ndarray, np.ndarray]:
    valid = table.valid(col)
    vals = table.numpy(col, fill=fill).astype(np.int64)
    return vals, valid


def _lanes(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Lane per slice so that slices on one lane nest or are disjoint (given the
    event order END(t) < BEGIN(t), ends sorted inner-first). Slices that start after
    every earlier one ended begin a fresh run (all lanes free): runs of one slice get
    lane 0 at once, only runs of overlapping slices are placed one by one."""
    n = len(start)
    lane = np.zeros(n, dtype=np.int32)
    if n < 2:
        return lane
    order = np.lexsort((-end, start))
    s, e = start[order], end[order]
    fresh = np.ones(n, dtype=bool)
    fresh[1:] = s[1:] >= np.maximum.accumulate(e)[:-1]
    if fresh.all():
        return lane
    first = np.nonzero(fresh)[0]
    last = np.append(first[1:], n)
    out = np.zeros(n, dtype=np.int32)
    for a, b in zip(first[last - first > 1].tolist(), last[last - first > 1].tolist()):
        out[a:b] = _lane_run(s[a:b].tolist(), e[a:b].tolist())
    lane[order] = out
    return lane


def _lane_run(sl: list[int], el: list[int]) -> list[int]:
    """Greedy lanes of one run of sorted slices: the first lane it nests in or is
    free after the slices that ended, else a new one."""
    stacks: list[list[int]] = []
    out = []
    for si, ei in zip(sl, el):
        placed = -1
        for li, st in enumerate(stacks):
            while st and st[-1] <= si:
                st.pop()
            if not st or st[-1] >= ei:
                placed = li
                st.append(ei)
                break
        if placed < 0:
            stacks.append([ei])
            placed = len(stacks) - 1
        out.append(placed)
    return out


def _group_ids(cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Group id per row for a tuple of int64 key columns, and the unique keys."""
    if not len(cols[0]):
        return np.zeros(0, dtype=np.int64), np.zeros((0, len(cols)), dtype=np.int64)
    combined = np.zeros(len(cols[0]), dtype=np.int64)
    for c in cols:  # mixed-radix code of the per-column dense ranks
        u, inv = np.unique(c, return_inverse=True)
        combined = combined * len(u) + inv.reshape(-1)
    _, first, gid = np.unique(combined, return_index=True, return_inverse=True)
    keys = np.stack([c[first] for c in cols], axis=1)
    return gid.reshape(-1), keys


class Layout:
    """TrackDescriptor messages (``tracks``) and the track uuid of every slice."""

    def __init__(self, trace, pb2):
        self.pb2 = pb2
        self.tracks: list[Any] = []
        self.next_uuid = 1000
        self.dev_names = {}
        for i in range(len(trace.devices)):
            r = trace.devices.row(i)
            self.dev_names[r["index"]] = r
        self.dev_track: dict[int, int] = {}
        self.sub_track: dict[tuple, int] = {}
        self.proc_track: dict[int, int] = {}
        self.thread_track: dict[tuple, int] = {}

    def new_uuid(self) -> int:
        self.next_uuid += 1
        return self.next_uuid

    def device_track(self, d: int) -> int:
        if d in self.dev_track:
            return self.dev_track[d]
        u = self.new_uuid()
        r = self.dev_names.get(d)
        td = self.pb2.TrackDescriptor(uuid=u)
        if d < 0:
            td.name = "Host copies"
        else:
            nm = r["name"] if r else None
            td.name = f"GPU {d} ({nm})" if nm and nm != f"GPU {d}" else f"GPU {d}"
            if r:
                td.description = json.dumps({"hipscope_device": r}, default=str)
        self.tracks.append(td)
        self.dev_track[d] = u
        return u

    def child(self, parent: int, name: str) -> int:
        key = (parent, name)
        if key in self.sub_track:
            return self.sub_track[key]
        u = self.new_uuid()
        self.tracks.append(self.pb2.TrackDescriptor(uuid=u, parent_uuid=parent, name=name))
        self.sub_track[key] = u
        return u

    def process_track(self, pid: int) -> int:
        if pid in self.proc_track:
            return self.proc_track[pid]
        u = self.new_uuid()
        td = self.pb2.TrackDescriptor(uuid=u)
        if pid >= 0:
            td.process.pid = pid
        else:
            td.name = "Host"
        self.tracks.append(td)
        self.proc_track[pid] = u
        return u

    def host_leaf(self, key, lane) -> int:
        pid, tid, dev, stream = (int(x) for x in key)
        if dev >= 0:
            parent = self.device_track(dev)
            nm = f"Stream {stream} annotations" if stream >= 0 else "Annotations"
            return self.child(parent, nm if lane == 0 else f"{nm} #{lane + 1}")
        pt = self.process_track(pid)
        if tid >= 0 and pid >= 0 and lane == 0:
            kk = (pid, tid)
            if kk not in self.thread_track:
                u = self.new_uuid()
                td = self.pb2.TrackDescriptor(uuid=u, parent_uuid=pt)
                td.thread.pid = pid
                td.thread.tid = tid
                self.tracks.append(td)
                self.thread_track[kk] = u
            return self.thread_track[kk]
        nm = f"Thread {tid}" if tid >= 0 else "Calls"
        return self.child(pt, nm if lane == 0 else f"{nm} (overlap {lane})")

    def gpu(self, tabs: dict, starts: dict, ends: dict, track_of: dict) -> None:
        """Kernels + copies grouped by (device, queue, stream), lanes within."""
        gk = []
        for k in (K_KERNEL, K_COPY):
            t = tabs[k]
            dev, dv = i64(t, "device")
            q, qv = i64(t, "queue")
            s, sv = i64(t, "stream")
            gk.append((np.where(dv, dev, -1), np.where(qv, q, -1), np.where(sv, s, -1)))
        gtrack = _assign_tracks(
            [np.concatenate([g[i] for g in gk]) for i in range(3)],
            np.concatenate([starts[K_KERNEL], starts[K_COPY]]),
            np.concatenate([ends[K_KERNEL], ends[K_COPY]]),
            lambda key, lane: _gpu_leaf(key, lane, self.device_track, self.child))
        nk = len(tabs[K_KERNEL])
        track_of[K_KERNEL], track_of[K_COPY] = gtrack[:nk], gtrack[nk:]

    def host(self, tabs: dict, starts: dict, ends: dict, track_of: dict) -> None:
        """API calls and markers by (pid, tid); markers with a device on the GPU tree."""
        hk = []
        for k in (K_API, K_MARKER):
            t = tabs[k]
            p, pv = i64(t, "pid")
            ti, tv = i64(t, "tid")
            dev, dv = i64(t, "device")
            if k == K_MARKER:
                s, sv = i64(t, "stream")
            else:
                s, sv = np.full(len(t), -1, np.int64), np.zeros(len(t), bool)
                dv = np.zeros(len(t), bool)  # API calls stay on their thread
            hk.append((np.where(pv, p, -1), np.where(tv, ti, -1), np.where(dv, dev, -1),
                       np.where(sv, s, -1)))
        htrack = _assign_tracks(
            [np.concatenate([h[i] for h in hk]) for i in range(4)],
            np.concatenate([starts[K_API], starts[K_MARKER]]),
            np.concatenate([ends[K_API], ends[K_MARKER]]), self.host_leaf)
        na = len(tabs[K_API])
        track_of[K_API], track_of[K_MARKER] = htrack[:na], htrack[na:]


def _gpu_leaf(key, lane, device_track, child) -> int:
    dev, q, s = (int(x) for x in key)
    parent = device_track(dev)
    if q >= 0:
        parent = child(parent, f"Queue {q}")
    if s >= 0:
        nm = f"Stream {s}"
    elif q >= 0:
        nm = "Work"
    else:
        nm = "Kernels and copies"
    return child(parent, nm if lane == 0 else f"{nm} #{lane + 1}")


def _assign_tracks(keys: list[np.ndarray], start: np.ndarray, end: np.ndarray,
                   leaf) -> np.ndarray:
    out = np.zeros(len(start), dtype=np.uint64)
    if not len(start):
        return out
    gid, uniq = _group_ids(keys)
    order = np.argsort(gid, kind="stable")
    bounds = np.searchsorted(gid[order], np.arange(len(uniq) + 1))
    for g in range(len(uniq)):
        idx = order[bounds[g]:bounds[g + 1]]
        lanes = _lanes(start[idx], end[idx])
        for ln in np.unique(lanes).tolist():
            out[idx[lanes == ln]] = leaf(tuple(uniq[g].tolist()), ln)
    return out
