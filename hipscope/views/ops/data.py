"""What the Ops panel shows, computed in a worker (Qt-free, numpy): the launching op
of every kernel and copy (``analyses_of(trace).ops()``) as a tree of nn.Module paths
-> launching-op names -> kernel names, with counts, CPU time, GPU time, kernels per
call and kernel classes; the GPU time no op launched; and, for a trace without ops,
the one reason why.

Nodes keep the op *groups* (module path, op name) they stand for, so that the
events of a selected node are found with one ``isin`` per table (:func:`highlight`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...analysis.context import analyses_of
from ...analysis.kernel_class import CLASSES
from ...analysis.ops import ATTRIBUTED, MODULE_PREFIX, NO_CALL, NO_OP, OpAttribution
from ...analysis.timeline_model.names import short_name
from ...model import Trace
from ...model.progress import CancelledFn, check_cancel

MODULE, OP, KERNEL = "module", "op", "kernel"


@dataclass(eq=False)
class OpsNode:
    """One row of the tree. ``count``: module or op calls, kernels for a kernel row;
    ``cpu_ns``: summed duration of those calls (None for kernels); ``gpu_ns``,
    ``kernels``, ``classes`` {class: ns}: the GPU work launched at or below it;
    ``groups``: op groups it covers; ``code``: a kernel row's name code (into
    ``OpsData.names``, -1 for other rows); ``path``: a module row's path code."""

    kind: str
    name: str
    full: str
    count: int = 0
    cpu_ns: int | None = 0
    gpu_ns: int = 0
    kernels: int = 0
    classes: dict[str, int] = field(default_factory=dict)
    groups: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    code: int = -1
    path: int = -1
    children: list[OpsNode] = field(default_factory=list)

    @property
    def kernels_per_call(self) -> float | None:
        return self.kernels / self.count if self.kind != KERNEL and self.count else None


@dataclass(eq=False)
class OpsData:
    """The tree and what a selection needs: per op its group, module path code and
    whether it is an nn.Module frame; per kernel/copy its group (-1: unattributed) and
    name code into ``names`` (kernel names, '?', copy names, 'copy')."""

    roots: list[OpsNode]
    reason: str                          # why there is no tree ('' when there is one)
    gpu_ns: int = 0                      # all kernels and copies
    unattributed_ns: int = 0
    no_call: tuple[int, int] = (0, 0)    # (events, ns) without a recorded launch call
    no_op: tuple[int, int] = (0, 0)      # (events, ns) launched outside every op
    att: OpAttribution | None = None
    op_group: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    kernel_group: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    copy_group: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    kernel_code: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    copy_code: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    op_path: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    op_is_module: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    names: list[str] = field(default_factory=list)


def _reason(trace: Trace, att: OpAttribution) -> str:
    """One sentence when nothing could be attributed ('' otherwise)."""
    _, status, _, _ = att.events()
    if len(status) == 0:
        return "This trace has no kernels or copies, so there is nothing to attribute to ops."
    if len(att.forest) == 0:
        return ("This trace records no host ops (PyTorch cpu_op / python_function, user "
                "annotations, roctx or NVTX ranges), so its kernels cannot be attributed to "
                "the ops that launched them.")
    if (status == ATTRIBUTED).any():
        return ""
    if (status == NO_CALL).all():
        return (f"None of the {len(status):,} kernels and copies has a recorded launch call "
                "(no correlation ids linking them to host API calls), so none can be "
                "attributed to an op.")
    return ("Every launch call of this trace lies outside its host ops, so no kernel can be "
            "attributed to an op.")


def _module_paths(att: OpAttribution) -> tuple[np.ndarray, list[str]]:
    """Per op: code of its module path (-1 outside every module), and the paths."""
    f = att.forest
    mods = np.unique(f.module[f.module >= 0])
    paths = sorted({f.module_path(int(m)) for m in mods})
    index = {p: i for i, p in enumerate(paths)}
    lut = np.full(len(f) + 1, -1, np.int64)
    lut[mods] = [index[f.module_path(int(m))] for m in mods]
    return lut[np.where(f.module >= 0, f.module, len(f))], paths


def _event_names(trace: Trace) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Name codes of kernels and copies in one list: kernel names, '?' (a kernel
    without one), copy names, 'copy' (a copy without one)."""
    out: list[np.ndarray] = []
    names: list[str] = []
    for table, none in ((trace.kernels, "?"), (trace.copies, "copy")):
        if len(table) and table.has("name"):
            codes, cats = table.codes("name")
            cats = [n or none for n in cats]
        else:
            codes, cats = np.full(len(table), -1, np.int32), []
        out.append((np.where(codes >= 0, codes, len(cats)) + len(names)).astype(np.int32))
        names += cats + [none]
    return out[0], out[1], names


def build(trace: Trace, cancelled: CancelledFn | None = None) -> OpsData:
    """The Ops panel's data for ``trace`` (see module docstring)."""
    att = analyses_of(trace).ops(cancelled)
    reason = _reason(trace, att)
    op, status, ns, _ = att.events()
    parts = {s: (int((status == s).sum()), int(ns[status == s].sum())) for s in (NO_CALL, NO_OP)}
    data = OpsData([], reason, int(ns.sum()), int(ns[status != ATTRIBUTED].sum()),
                   parts[NO_CALL], parts[NO_OP], att)
    if reason:
        return data
    check_cancel(cancelled)
    f = att.forest
    path, paths = _module_paths(att)
    name_str = np.array(f.names, dtype=object)
    _, name_id = np.unique(name_str, return_inverse=True)    # one id per name string
    gid_raw = (path + 1) * (int(name_id.max(initial=0)) + 1) + name_id.reshape(-1)[f.name]
    uniq, gid = np.unique(gid_raw, return_inverse=True)
    data.op_group = gid.reshape(-1).astype(np.int32)        # int32: 4 bytes an event
    data.kernel_group = np.where(att.kernel_op >= 0, data.op_group[np.maximum(att.kernel_op, 0)]
                                 if len(f) else -1, -1).astype(np.int32)
    data.copy_group = np.where(att.copy_op >= 0, data.op_group[np.maximum(att.copy_op, 0)]
                               if len(f) else -1, -1).astype(np.int32)
    data.kernel_code, data.copy_code, data.names = _event_names(trace)
    data.op_path = path
    data.op_is_module = np.array([n.startswith(MODULE_PREFIX) for n in f.names], bool)[f.name] \
        if len(f) else np.zeros(0, bool)
    data.roots = _tree(att, data, len(uniq), paths)
    return data


def _op_nodes(att: OpAttribution, data: OpsData, n_groups: int
              ) -> tuple[list[OpsNode | None], np.ndarray]:
    """One node per op group that launched GPU work (None for the others), with its
    kernel-name children; and an op of each group."""
    f, g = att.forest, data.op_group
    count = np.bincount(g, minlength=n_groups)
    cpu = np.bincount(g, weights=(f.end - f.start).astype(np.float64), minlength=n_groups)
    first = np.zeros(n_groups, np.int64)
    first[g[::-1]] = np.arange(len(f))[::-1]
    ev_g = np.concatenate([data.kernel_group, data.copy_group])
    ev_code = np.concatenate([data.kernel_code, data.copy_code])
    _, _, ns, cls = att.events()
    ok = ev_g >= 0
    nodes: list[OpsNode | None] = [None] * n_groups
    # one kernel row per (group, name code): sort the events once, cut at changes
    eg, ec, en, ecl = ev_g[ok], ev_code[ok], ns[ok], cls[ok]
    order = np.lexsort((ec, eg))
    eg, ec, en, ecl = eg[order], ec[order], en[order], ecl[order]
    cuts = np.flatnonzero((eg[1:] != eg[:-1]) | (ec[1:] != ec[:-1])) + 1
    for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(eg)]):
        if hi <= lo:
            continue
        gi, code = int(eg[lo]), int(ec[lo])
        node = nodes[gi]
        if node is None:
            i = int(first[gi])
            node = nodes[gi] = OpsNode(OP, f.name_of(i), f.name_of(i), int(count[gi]),
                                       int(cpu[gi]), groups=np.array([gi], np.int64))
        full, c = data.names[code], CLASSES[int(ecl[lo])]
        kn = OpsNode(KERNEL, short_name(full) or full, full, hi - lo, None, int(en[lo:hi].sum()),
                     hi - lo, {c: int(en[lo:hi].sum())}, node.groups, code)
        node.children.append(kn)
        node.gpu_ns += kn.gpu_ns
        node.kernels += kn.kernels
        node.classes[c] = node.classes.get(c, 0) + kn.gpu_ns
    return nodes, first


class _Modules:
    """The module nodes of a tree, made on first use with their parents ('A_0/B_0'
    under 'A_0'); ``add`` counts an op node's work for its module and every one above."""

    def __init__(self, paths: list[str], count: np.ndarray, cpu: np.ndarray):
        self.index = {p: i for i, p in enumerate(paths)}
        self.count, self.cpu = count, cpu
        self.nodes: dict[str, OpsNode] = {}
        self.groups: dict[str, list[np.ndarray]] = {}
        self.roots: list[OpsNode] = []

    def node(self, p: str) -> OpsNode:
        if p not in self.nodes:
            parent, _, own = p.rpartition("/")
            i = self.index.get(p, -1)
            self.nodes[p] = OpsNode(MODULE, own, p, int(self.count[i]) if i >= 0 else 0,
                                    int(self.cpu[i]) if i >= 0 else 0, path=i)
            self.groups[p] = []
            (self.node(parent).children if parent else self.roots).append(self.nodes[p])
        return self.nodes[p]

    def add(self, p: str, op: OpsNode) -> None:
        self.node(p).children.append(op)
        while p:
            m = self.node(p)
            m.gpu_ns += op.gpu_ns
            m.kernels += op.kernels
            self.groups[p].append(op.groups)
            for c, v in op.classes.items():
                m.classes[c] = m.classes.get(c, 0) + v
            p = p.rpartition("/")[0]

    def finish(self) -> None:
        for p, m in self.nodes.items():
            m.groups = np.concatenate(self.groups[p]) if self.groups[p] else m.groups


def _tree(att: OpAttribution, data: OpsData, n_groups: int, paths: list[str]
          ) -> list[OpsNode]:
    """Module nodes nested by path, op nodes under their innermost module (at the top
    outside every module)."""
    nodes, first = _op_nodes(att, data, n_groups)
    f, path, is_mod = att.forest, data.op_path, data.op_is_module
    mod_self = path[is_mod]
    mods = _Modules(paths, np.bincount(mod_self, minlength=len(paths)),
                    np.bincount(mod_self, weights=(f.end - f.start)[is_mod].astype(np.float64),
                                minlength=len(paths)))
    for gi, node in enumerate(nodes):
        if node is None:
            continue
        pc = int(path[first[gi]])
        if pc < 0:
            mods.roots.append(node)
        else:
            mods.add(paths[pc], node)
    mods.finish()
    return mods.roots


@dataclass(frozen=True)
class OpsHighlight:
    """The events of a selected node: a bool mask per event table (markers: the ops'
    own ranges), how many op calls, and the first one's span (op and its work)."""

    masks: dict[str, np.ndarray]
    calls: int
    first: tuple[int, int] | None
    label: str


def highlight(trace: Trace, data: OpsData, node: OpsNode) -> OpsHighlight:
    """The events ``node`` stands for (see :class:`OpsHighlight`)."""
    att = data.att
    assert att is not None
    f = att.forest
    kmask = np.isin(data.kernel_group, node.groups)
    cmask = np.isin(data.copy_group, node.groups)
    if node.kind == KERNEL:
        kmask &= data.kernel_code == node.code
        cmask &= data.copy_code == node.code
    launched = np.unique(np.r_[att.kernel_op[kmask], att.copy_op[cmask]])
    ops = launched[launched >= 0]
    mmask = np.zeros(len(trace.markers), bool)
    mmask[f.row[ops]] = True
    mods = np.flatnonzero((data.op_path == node.path) & data.op_is_module) \
        if node.kind == MODULE else np.zeros(0, np.int64)
    mmask[f.row[mods]] = True                    # a module's own ranges too
    first = _first_span(trace, att, kmask, cmask, mods if len(mods) else ops)
    return OpsHighlight({"kernels": kmask, "copies": cmask, "markers": mmask}, len(ops), first,
                        node.name)


def _first_span(trace: Trace, att: OpAttribution, kmask: np.ndarray, cmask: np.ndarray,
                ops: np.ndarray) -> tuple[int, int] | None:
    """The first of ``ops`` (by start) and the highlighted work launched inside it:
    (its start, the later of its end and that work's end)."""
    if len(ops) == 0:
        return None
    f = att.forest
    o = int(ops[np.argmin(f.start[ops])])
    s, e = int(f.start[o]), int(f.end[o])
    for t, mask, op_of in (("kernels", kmask, att.kernel_op), ("copies", cmask, att.copy_op)):
        launcher = op_of[mask]
        ok = launcher >= 0
        launcher = launcher[ok]
        inside = (f.thread[launcher] == f.thread[o]) & (f.start[launcher] >= s) & \
            (f.start[launcher] < e)
        if inside.any():
            ends = getattr(trace, t).numpy("end", fill=0)[np.flatnonzero(mask)[ok][inside]]
            e = max(e, int(ends.max()))
    return s, e
