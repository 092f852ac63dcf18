"""Steps: the program's iterations, found in its markers (definitions in docs/analysis.md).

A trace has steps when it marks them: PyTorch's ``ProfilerStep#N`` ranges, else a
host range that repeats at the top level of its thread with only a number changing
(``step 0``, ``step 1``, ...; or the same text every time), from user annotations,
NVTX or roctx. Ranges drawn on GPU streams and framework op ranges (``cpu_op``,
``python_function``) are not steps. Steps are one thread's ranges (the ranks of a
merged multi-process trace step at the same time, on one wall clock); among several
candidates the one whose steady-state steps cover the most time wins.

*Steady state* leaves out warm-up: with three or more steps the first is dropped (it
pays one-time costs: lazy initialisation, allocator growth, autotuning), and so is
every leading step longer than 1.5x the median step. Estimates per step use the
steady-state steps only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..model import Trace

STEP_DOMAINS = ("user_annotation", "nvtx", "roctx")
MIN_REPEATS = 2
WARMUP_RATIO = 1.5
_PROFILER_STEP = re.compile(r"ProfilerStep#\d+$")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Steps:
    """The steps of a trace, in time order; ``steady`` marks the steady-state ones."""

    name: str                 # the pattern: 'ProfilerStep#N', 'step N', ...
    source: str               # how they were found, for people
    start: np.ndarray         # int64 ns
    end: np.ndarray
    steady: np.ndarray        # bool
    pid: int = -1             # the thread whose ranges they are
    tid: int = -1

    def __len__(self) -> int:
        return len(self.start)

    @property
    def steady_count(self) -> int:
        return int(self.steady.sum())

    @property
    def median_ns(self) -> float:
        """Median steady-state step length."""
        d = (self.end - self.start)[self.steady]
        return float(np.median(d)) if len(d) else 0.0


def steady_mask(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Steady-state steps: not the first of three or more, nor a long leading one."""
    n = len(start)
    keep = np.ones(n, dtype=bool)
    if n == 0:
        return keep
    dur = (end - start).astype(np.float64)
    if n >= 3:
        keep[0] = False
    med = float(np.median(dur))
    i = 0
    while i < n - 1 and dur[i] > WARMUP_RATIO * med:
        keep[i] = False
        i += 1
    return keep


def find_steps(trace: Trace) -> Steps | None:
    """The trace's steps, or None when it marks none."""
    m = trace.markers
    if len(m) == 0:
        return None
    codes, names = m.codes("name")
    dcodes, domains = m.codes("domain")
    host = ~m.valid("device") if m.has("device") else np.ones(len(m), bool)
    dom_ok = np.array([d in STEP_DOMAINS for d in domains] + [False])[dcodes]
    s, e = m.numpy("start"), m.numpy("end")
    ok = host & dom_ok & (e > s) & (codes >= 0)
    pattern = np.array([_pattern(n) for n in names] + [""], dtype=object)[codes]
    pid = m.numpy("pid", fill=-1).astype(np.int64)
    tid = m.numpy("tid", fill=-1).astype(np.int64)
    rows = np.flatnonzero(ok)
    top = rows[_top_level(s[rows], e[rows], pid[rows], tid[rows])]
    key = pid * (1 << 32) + (tid & 0xFFFFFFFF)
    best: tuple[tuple, str, np.ndarray] | None = None
    for pat in sorted(set(pattern[top].tolist())):
        # one thread's ranges: several ranks' steps run at once on one wall clock
        for k in np.unique(key[top[pattern[top] == pat]]):
            r = top[(pattern[top] == pat) & (key[top] == k)]
            r = r[np.argsort(s[r], kind="stable")]
            if len(r) < MIN_REPEATS and pat != "ProfilerStep#N":
                continue
            if np.any(s[r][1:] < e[r][:-1]):
                continue                   # overlapping repeats: not iterations
            # steady-state time: a warm-up range repeated 3 times, whose first pays the
            # one-time costs, must not beat 10 steps of the same length
            steady = steady_mask(s[r], e[r])
            rank = (pat == "ProfilerStep#N", float((e[r] - s[r])[steady].sum()), -int(k))
            if best is None or rank > best[0]:
                best = (rank, pat, r)
    if best is None:
        return None
    _, pat, r = best
    source = ("ProfilerStep markers" if pat == "ProfilerStep#N"
              else f"the repeated top-level range '{pat}'")
    return Steps(pat, source, s[r].astype(np.int64), e[r].astype(np.int64),
                 steady_mask(s[r], e[r]), int(pid[r[0]]), int(tid[r[0]]))


def gpu_step_ends(trace: Trace, steps: Steps) -> np.ndarray | None:
    """Where each step's GPU work ends: the last end of a kernel launched (by its
    ``api_index``) from the steps' thread inside the step's range, never before the
    range's end. A host that queues its launches and runs ahead leaves its range long
    before its kernels end; the step a user times is then the GPU's, the time between
    two steps' GPU ends. None when the trace links no kernel to its launch call."""
    k, api = trace.kernels, trace.api
    if len(k) == 0 or len(api) == 0 or not k.has("api_index"):
        return None
    ai = k.numpy("api_index", fill=-1).astype(np.int64)
    rows = np.flatnonzero(ai >= 0)
    if len(rows) == 0:
        return None
    call = ai[rows]
    mine = ((api.numpy("pid", fill=-1).astype(np.int64)[call] == steps.pid)
            & (api.numpy("tid", fill=-1).astype(np.int64)[call] == steps.tid))
    t = api.numpy("start")[call[mine]]
    kend = k.numpy("end")[rows[mine]]
    i = np.searchsorted(steps.start, t, side="right") - 1
    inside = (i >= 0) & (t < steps.end[np.clip(i, 0, None)])
    tail = steps.end.copy()
    np.maximum.at(tail, i[inside], kend[inside])
    return tail


def _pattern(name: str) -> str:
    if _PROFILER_STEP.match(name):
        return "ProfilerStep#N"
    return _DIGITS.sub("N", name.strip())


def _top_level(s: np.ndarray, e: np.ndarray, pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """Mask: ranges not inside another candidate range of the same thread."""
    out = np.zeros(len(s), dtype=bool)
    key = pid * (1 << 32) + (tid & 0xFFFFFFFF)
    order = np.lexsort((-e, s, key))
    ks, ss, es = key[order], s[order], e[order]
    for k in np.unique(ks):
        idx = np.flatnonzero(ks == k)
        reach = np.maximum.accumulate(es[idx])
        inside = np.zeros(len(idx), dtype=bool)
        inside[1:] = es[idx][1:] <= reach[:-1]
        out[order[idx]] = ~inside
    return out
