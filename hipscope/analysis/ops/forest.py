"""The op forest: host ranges (Kineto ``cpu_op``, ``python_function``,
``user_annotation``; roctx/NVTX ranges) as trees per thread, built from
``trace.markers`` with numpy only (no Python loop per op).

Ops are kept sorted by (thread, start, -end): a parent comes before its children, and
the ops of one thread are one contiguous block, ordered by start (what the launch
look-up in :mod:`.attribute` searches).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...model import Trace

#: marker domains that are GPU-side, never host ops
GPU_DOMAINS = frozenset({"gpu_user_annotation", "cuda_sync"})
MODULE_PREFIX = "nn.Module: "
PYTHON_DOMAIN = "python_function"
STEP_PREFIX = "ProfilerStep#"


@dataclass
class OpForest:
    """Host ops of one trace, sorted by (thread, start, -end).

    ``row``: the op's row in ``trace.markers``; ``thread``: index into ``threads``
    (rows of (pid, tid)); ``parent``/``root``/``module``: op index or -1 (``module`` is
    the nearest ``nn.Module`` python frame at or above the op); ``visible_parent``: the
    nearest ancestor that is not a plain Python frame (what comparisons match under);
    ``name``: code into ``names``; ``domain``: code into ``domains``.
    """

    row: np.ndarray
    thread: np.ndarray
    start: np.ndarray
    end: np.ndarray
    name: np.ndarray
    names: list[str]
    domain: np.ndarray
    domains: list[str]
    parent: np.ndarray
    depth: np.ndarray
    root: np.ndarray
    module: np.ndarray
    visible_parent: np.ndarray
    threads: np.ndarray                       # (n_threads, 2): pid, tid
    thread_bounds: np.ndarray                 # op index where each thread starts (+ end)
    thread_keys: np.ndarray | None = None     # sorted pair_keys of ``threads`` when exact
    visible: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    levels: list[np.ndarray] = field(default_factory=list, repr=False)
    shape: np.ndarray | None = None           # code into shape_names (-1: none); None
    shape_names: list[str] = field(default_factory=list)   # when the trace has no shapes
    # several ranks merged (meta["ranks"]): threads are keyed by (rank, pid, tid);
    # proc_keys: sorted ``rank << 32 | pid`` of the ops' processes; thread_rank: per
    # thread, the rank's position in meta["ranks"]; key_threads: (process code, tid)
    proc_keys: np.ndarray | None = None
    thread_rank: np.ndarray | None = None
    key_threads: np.ndarray | None = None
    _paths: dict[int, str] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.row)

    def name_of(self, i: int) -> str:
        return self.names[int(self.name[i])]

    def shape_of(self, i: int) -> str:
        """Input shapes of op ``i`` as the trace printed them ('' when none)."""
        if self.shape is None or self.shape[i] < 0:
            return ""
        return self.shape_names[int(self.shape[i])]

    def inherit(self, own: np.ndarray) -> np.ndarray:
        """Per op: the nearest op at or above it where ``own`` is true, -1 for none."""
        return _inherit(self.levels, self.parent, own)

    def module_path(self, i: int) -> str:
        """'BertModel_0/BertEncoder_0/...' of op ``i`` ('' outside every module)."""
        m = int(self.module[i])
        if m < 0:
            return ""
        if m not in self._paths:
            up = int(self.parent[m])
            above = self.module_path(up) if up >= 0 else ""
            own = self.name_of(m)[len(MODULE_PREFIX):]
            self._paths[m] = f"{above}/{own}" if above else own
        return self._paths[m]


def pair_keys(pid: np.ndarray, tid: np.ndarray) -> np.ndarray | None:
    """One int64 per (pid, tid), ``pid * 2**32 + tid``: exact while tids fit in 32
    bits (OS thread ids do); None otherwise (callers then compare the pairs)."""
    pid, tid = pid.astype(np.int64), tid.astype(np.int64)
    if len(tid) and (int(tid.min()) < 0 or int(tid.max()) >= 1 << 32
                     or int(np.abs(pid).max()) >= 1 << 31):
        return None
    return (pid << 32) + tid


def row_ranks(trace: Trace, table: str) -> np.ndarray | None:
    """Per row of ``table`` ("markers" or "api"): the position of its rank in
    ``meta["ranks"]`` (the multi-rank folder reader's, which records each rank's rows
    of the concatenated tables); None for a single rank or when the counts disagree."""
    ranks = trace.meta.get("ranks")
    if not isinstance(ranks, list) or len(ranks) < 2:
        return None
    got = [(r.get("rows") or {}).get(table) if isinstance(r, dict) else None for r in ranks]
    counts = [c for c in got if isinstance(c, int) and c >= 0]
    if len(counts) != len(ranks) or sum(counts) != len(getattr(trace, table)):
        return None
    return np.repeat(np.arange(len(ranks), dtype=np.int64), counts)


def proc_codes(pid: np.ndarray, rank: np.ndarray, keys: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """Dense code per (rank, pid) and the sorted ``rank << 32 | pid`` keys; with
    ``keys`` given, codes into those (-1 for a process not among them)."""
    combo = (rank.astype(np.int64) << 32) | (pid.astype(np.int64) & 0xFFFFFFFF)
    if keys is None:
        keys, inv = np.unique(combo, return_inverse=True)
        return inv.reshape(-1).astype(np.int64), keys
    if len(keys) == 0:
        return np.full(len(combo), -1, np.int64), keys
    pos = np.minimum(np.searchsorted(keys, combo), len(keys) - 1)
    return np.where(keys[pos] == combo, pos, -1).astype(np.int64), keys


def _thread_codes(pid: np.ndarray, tid: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Distinct (pid, tid) rows, the row of each op, and their int64 keys (or None)."""
    keys = pair_keys(pid, tid)
    if keys is not None:
        uniq_k, inv = np.unique(keys, return_inverse=True)
        threads = np.stack([uniq_k >> 32, uniq_k & 0xFFFFFFFF], axis=1)
        return threads, inv.reshape(-1).astype(np.int64), uniq_k
    pairs = np.stack([pid.astype(np.int64), tid.astype(np.int64)], axis=1)
    uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
    return uniq, inv.reshape(-1).astype(np.int64), None


def enclosing_parent(thread: np.ndarray, end: np.ndarray) -> np.ndarray:
    """For ops sorted by (thread, start, -end): the nearest earlier op of the same
    thread whose end is not before this op's end (its enclosing op), -1 for none.
    Pointer jumping: every round, each unresolved op jumps to its candidate's
    candidate, which skips only ops that end before it (they cannot enclose it)."""
    n = len(end)
    up = np.arange(n, dtype=np.int64) - 1
    if n:
        up[0] = -1
        up[1:][thread[1:] != thread[:-1]] = -1
    todo = np.nonzero(up >= 0)[0]
    while len(todo):
        cand = up[todo]
        todo = todo[end[cand] < end[todo]]
        up[todo] = up[up[todo]]
        todo = todo[up[todo] >= 0]
    return up


def _by_level(parent: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Depth of each op and the op indices of each depth (parents precede children)."""
    n = len(parent)
    depth = np.zeros(n, np.int64)
    cur = parent.copy()
    active = np.nonzero(cur >= 0)[0]
    while len(active):
        depth[active] += 1
        cur[active] = parent[cur[active]]
        active = active[cur[active] >= 0]
    order = np.argsort(depth, kind="stable")
    cuts = np.searchsorted(depth[order], np.arange(int(depth.max(initial=0)) + 2))
    return depth, [order[cuts[d]:cuts[d + 1]] for d in range(len(cuts) - 1)]


def _inherit(levels: list[np.ndarray], parent: np.ndarray, own: np.ndarray) -> np.ndarray:
    """Per op: itself where ``own``, else its parent's value (-1 for a root that is
    not ``own``), level by level from the roots down."""
    out = np.where(own, np.arange(len(parent)), -1)
    for idx in levels[1:]:
        out[idx] = np.where(own[idx], idx, out[parent[idx]])
    return out


def _rank_threads(rank: np.ndarray | None, rows: np.ndarray, pid: np.ndarray,
                  tid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, dict]:
    """:func:`_thread_codes`, keyed by (rank, pid, tid) when ``rank`` (per marker row)
    is given; the last item holds the forest's rank fields (see :class:`OpForest`)."""
    if rank is None:
        return (*_thread_codes(pid, tid), {})
    code, proc_keys = proc_codes(pid, rank[rows])
    key_threads, thread, thread_keys = _thread_codes(code, tid)
    combo = proc_keys[key_threads[:, 0]]
    real_pid = ((combo & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000     # back to signed int32
    threads = np.stack([real_pid, key_threads[:, 1]], axis=1)
    return threads, thread, thread_keys, {"proc_keys": proc_keys, "thread_rank": combo >> 32,
                                          "key_threads": key_threads}


def build_forest(trace: Trace) -> OpForest:
    """The op forest of ``trace`` (empty when it has no host ranges)."""
    m = trace.markers
    dom_codes, domains = m.codes("domain") if len(m) else (np.zeros(0, np.int32), [])
    host_dom = np.array([d not in GPU_DOMAINS for d in domains] + [False], dtype=bool)
    keep = host_dom[np.where(dom_codes < 0, len(domains), dom_codes)]
    if len(m):
        keep &= m.valid("tid") & ~m.valid("device") & m.valid("start") & m.valid("end")
    rows = np.nonzero(keep)[0]
    pid = m.numpy("pid", fill=-1)[rows] if len(m) else np.zeros(0, np.int64)
    tid = m.numpy("tid", fill=-1)[rows] if len(m) else np.zeros(0, np.int64)
    start = m.numpy("start", fill=0)[rows].astype(np.int64) if len(m) else pid
    end = m.numpy("end", fill=0)[rows].astype(np.int64) if len(m) else pid
    threads, thread, thread_keys, extra = _rank_threads(row_ranks(trace, "markers"), rows,
                                                        pid, tid)
    # ties (identical intervals) keep file order: the later op is the inner one
    order = np.lexsort((np.arange(len(rows)), -end, start, thread))
    rows, thread, start, end = rows[order], thread[order], start[order], end[order]
    name_codes, names = m.codes("name") if len(m) else (np.zeros(0, np.int32), [])
    name, domain = name_codes[rows].astype(np.int64), dom_codes[rows].astype(np.int64)
    parent = enclosing_parent(thread, end)
    depth, levels = _by_level(parent)
    is_module = np.array([n.startswith(MODULE_PREFIX) for n in names], bool)[name] \
        if len(names) else np.zeros(len(rows), bool)
    py = domains.index(PYTHON_DOMAIN) if PYTHON_DOMAIN in domains else -2
    visible = (domain != py) | is_module
    root = _inherit(levels, parent, parent < 0)
    module = _inherit(levels, parent, is_module)
    vis_self = _inherit(levels, parent, visible)
    visible_parent = np.where(parent >= 0, vis_self[np.maximum(parent, 0)], -1)
    bounds = np.searchsorted(thread, np.arange(len(threads) + 1))
    shape: np.ndarray | None = None
    shape_names: list[str] = []
    if "input_dims" in m.data.column_names and m.data.column("input_dims").null_count < len(m):
        codes, shape_names = m.codes("input_dims")
        shape = codes[rows].astype(np.int64)
    return OpForest(rows, thread, start, end, name, names, domain, list(domains), parent,
                    depth, root, module, visible_parent, threads, bounds, thread_keys,
                    visible, levels, shape, shape_names, **extra)
