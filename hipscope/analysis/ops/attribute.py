"""Launching op of every kernel, copy and memset.

The rule (issue 17): the launching op of a GPU event is the innermost host op on its
launch call's thread whose interval contains the call's start (``op.start <= t <
op.end``); the call is the row of ``trace.api`` the event links to by correlation id
(``api_index``). A graph-replayed kernel links to its graph launch call, so it gets the
graph launch's op. Events without a recorded launch call, and calls outside every op,
are *unattributed* (counted, never guessed).

Vectorised: one ``searchsorted`` per thread over the op starts (the last op starting at
or before the call), then a few rounds of parent jumps for the calls that the candidate
op ended before (each round is one numpy step over the calls still unresolved).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...model import Trace
from ...model.api_names import is_graph_launch
from ...model.progress import CancelledFn, check_cancel
from ..kernel_class import CLASSES, COPY, classes_of
from .forest import OpForest, build_forest, pair_keys, proc_codes, row_ranks

ATTRIBUTED, NO_CALL, NO_OP = 0, 1, 2


@dataclass
class OpAttribution:
    """Per kernel and per copy: launching op (index into ``forest``, -1 when
    unattributed), status (ATTRIBUTED, NO_CALL or NO_OP), duration and class."""

    forest: OpForest
    kernel_op: np.ndarray
    kernel_status: np.ndarray
    kernel_ns: np.ndarray
    kernel_class: np.ndarray
    copy_op: np.ndarray
    copy_status: np.ndarray
    copy_ns: np.ndarray
    kernel_graph: np.ndarray | None = None    # launched by a graph launch (replayed)
    copy_graph: np.ndarray | None = None

    def graph_events(self) -> np.ndarray:
        """Kernels then copies (as :meth:`events`): replayed by a graph launch."""
        k = self.kernel_graph if self.kernel_graph is not None else \
            np.zeros(len(self.kernel_op), bool)
        c = self.copy_graph if self.copy_graph is not None else np.zeros(len(self.copy_op), bool)
        return np.concatenate([k, c])

    def events(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Kernels then copies: op, status, duration (ns), class index."""
        cls = np.concatenate([self.kernel_class,
                              np.full(len(self.copy_op), CLASSES.index(COPY), np.int8)])
        return (np.concatenate([self.kernel_op, self.copy_op]),
                np.concatenate([self.kernel_status, self.copy_status]),
                np.concatenate([self.kernel_ns, self.copy_ns]), cls)

    def gpu_ns_per_op(self) -> np.ndarray:
        """GPU time (kernels + copies) each op launched itself, ns."""
        op, _, ns, _ = self.events()
        ok = op >= 0
        return np.bincount(op[ok], weights=ns[ok], minlength=len(self.forest))

    def class_ns_per_op(self) -> np.ndarray:
        """(n_ops, n_classes) GPU time each op launched, per kernel class."""
        op, _, ns, cls = self.events()
        ok = op >= 0
        flat = op[ok] * len(CLASSES) + cls[ok].astype(np.int64)
        out = np.bincount(flat, weights=ns[ok], minlength=len(self.forest) * len(CLASSES))
        return out.reshape(len(self.forest), len(CLASSES))


def innermost_op(forest: OpForest, thread: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Index of the innermost op of thread ``thread[i]`` containing time ``t[i]``
    (``start <= t < end``), -1 where none (or ``thread[i] < 0``)."""
    out = np.full(len(t), -1, np.int64)
    if len(forest) == 0 or len(t) == 0:
        return out
    order = np.argsort(thread, kind="stable")
    seg = np.searchsorted(thread[order], np.arange(len(forest.threads) + 1))
    for g in range(len(forest.threads)):
        q = order[seg[g]:seg[g + 1]]
        lo, hi = int(forest.thread_bounds[g]), int(forest.thread_bounds[g + 1])
        if len(q) == 0 or hi == lo:
            continue
        out[q] = lo + np.searchsorted(forest.start[lo:hi], t[q], side="right") - 1
        out[q[out[q] < lo]] = -1
    todo = np.nonzero(out >= 0)[0]
    todo = todo[forest.end[out[todo]] <= t[todo]]
    while len(todo):
        out[todo] = forest.parent[out[todo]]
        todo = todo[out[todo] >= 0]
        todo = todo[forest.end[out[todo]] <= t[todo]]
    return out


def _call_threads(forest: OpForest, trace: Trace) -> np.ndarray:
    """Forest thread index of each API call, -1 when its thread has no op. With
    several ranks, a thread is (rank, pid, tid): two hosts' pid 4037 stay apart."""
    api = trace.api
    n = len(api)
    if n == 0 or len(forest.threads) == 0:
        return np.full(n, -1, np.int64)
    ok = api.valid("pid") & api.valid("tid")
    pid, tid = api.numpy("pid", fill=-1), api.numpy("tid", fill=0)
    threads = forest.threads
    if forest.proc_keys is not None:
        rank = row_ranks(trace, "api")
        if rank is None:        # the ops are per rank but the calls cannot be
            return np.full(n, -1, np.int64)
        pid, _ = proc_codes(pid, rank, forest.proc_keys)
        ok &= pid >= 0
        threads = forest.key_threads if forest.key_threads is not None else threads
    keys = pair_keys(pid, tid) if forest.thread_keys is not None else None
    if keys is not None and forest.thread_keys is not None:
        tk = forest.thread_keys
        pos = np.minimum(np.searchsorted(tk, keys), len(tk) - 1)
        return np.where(ok & (tk[pos] == keys), pos, -1)
    pairs = np.stack([pid.astype(np.int64), tid.astype(np.int64)], axis=1)
    nt = len(threads)
    uniq, inv = np.unique(np.concatenate([threads, pairs]), axis=0,
                          return_inverse=True)
    inv = inv.reshape(-1)
    lut = np.full(len(uniq), -1, np.int64)
    lut[inv[:nt]] = np.arange(nt)
    return np.where(ok, lut[inv[nt:]], -1)


def _link(table, call_op: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Launching op, status and duration of each row of kernels/copies."""
    n = len(table)
    api_index = table.numpy("api_index", fill=-1).astype(np.int64) if n else \
        np.zeros(0, np.int64)
    linked = (api_index >= 0) & (api_index < len(call_op))
    op = np.where(linked, call_op[np.where(linked, api_index, 0)] if len(call_op) else -1, -1)
    status = np.where(~linked, NO_CALL, np.where(op >= 0, ATTRIBUTED, NO_OP)).astype(np.int8)
    ns = (table.numpy("end", fill=0).astype(np.int64) - table.numpy("start", fill=0)
          .astype(np.int64)) if n else np.zeros(0, np.int64)
    return op.astype(np.int64), status, np.maximum(ns, 0)


def _graph_calls(api) -> np.ndarray:
    """Per API row: a graph launch (cudaGraphLaunch, hipGraphLaunch)."""
    if len(api) == 0:
        return np.zeros(0, bool)
    codes, cats = api.codes("name")
    flag = np.array([is_graph_launch(c or "") for c in cats] + [False], bool)
    return flag[np.where(codes < 0, len(cats), codes)]


def _replayed(table, graph_call: np.ndarray) -> np.ndarray:
    """Per row of kernels/copies: linked to a graph launch call."""
    if len(table) == 0:
        return np.zeros(0, bool)
    idx = table.numpy("api_index", fill=-1).astype(np.int64)
    ok = (idx >= 0) & (idx < len(graph_call))
    return ok & graph_call[np.where(ok, idx, 0)] if len(graph_call) else ok


def attribute(trace: Trace, forest: OpForest | None = None,
              cancelled: CancelledFn | None = None) -> OpAttribution:
    """The launching op of every kernel and copy of ``trace`` (see module docstring)."""
    forest = build_forest(trace) if forest is None else forest
    check_cancel(cancelled)
    api = trace.api
    call_start = api.numpy("start", fill=0).astype(np.int64) if len(api) else \
        np.zeros(0, np.int64)
    call_op = innermost_op(forest, _call_threads(forest, trace), call_start)
    check_cancel(cancelled)
    k_op, k_status, k_ns = _link(trace.kernels, call_op)
    c_op, c_status, c_ns = _link(trace.copies, call_op)
    if len(trace.kernels):
        codes, cats = trace.kernels.codes("name")
        k_cls = classes_of(codes, cats)
    else:
        k_cls = np.zeros(0, np.int8)
    graph = _graph_calls(api)
    return OpAttribution(forest, k_op, k_status, k_ns, k_cls, c_op, c_status, c_ns,
                         _replayed(trace.kernels, graph), _replayed(trace.copies, graph))
