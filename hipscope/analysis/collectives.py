"""Collectives: a trace's NCCL/RCCL collective instances, and their matching across ranks.

A *collective instance* of one rank is one collective call: the communication kernels
(kernel class "communication": ``ncclDevKernel_*``, ``ncclKernel_*``, ``rccl*``) that
one host op launched. The op is the outermost collective op above the kernel's
launching op (:mod:`.ops`): c10d's ``record_param_comms`` (whose args the Kineto reader
keeps as the markers' ``collective``, ``process_group`` and ``collective_seq``) or the
``nccl:*`` / ``rccl:*`` annotation inside it. A kernel with no launching op (traces that
start mid-stream) is an instance of its own, or one with the kernels that share its own
(name, group, Seq) args.

Newer Kineto (libkineto ``output_json.cpp``) copies the op's c10d args onto the NCCL
kernel itself ('Collective name', 'Process Group Name', 'Seq': the kernels' columns of
the same names as the markers'); they stand in for whichever the op chain lacks, so a
trace without the ``record_param_comms`` ops still has its collectives' identity.

Identity across ranks: (name, process group, sequence). The name is the ``nccl:*``
annotation's (``nccl:all_reduce``), else the ``Collective name`` arg, else the kernel's
name up to its argument list; the group is ``Process Group Name`` ('' when the file has
none); the sequence is the file's ``Seq`` where every instance of that (name, group)
has one, else the instance's order among that (name, group) on its rank (from 0).

Across ranks (:func:`match`): arrival = the instance's first kernel start; skew =
latest - earliest arrival; the last rank arrived latest (ties: the lowest rank); wait =
sum over ranks of (latest - own arrival), the time the others spent waiting. Qt-free.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..model import Trace
from .kernel_class import CLASSES, COMM, classes_of

COLLECTIVE_PREFIXES = ("nccl:", "rccl:")
PARAM_COMMS = "record_param_comms"

__all__ = ["COLLECTIVE_PREFIXES", "RankCollectives", "RankTimes", "collectives_of", "compact",
           "match", "short_kernel_name"]


@dataclass(frozen=True)
class RankCollectives:
    """One rank's collective instances, in arrival order (plain lists: small, and
    cheap to send from a worker or keep in a cache)."""

    name: list[str] = field(default_factory=list)
    group: list[str] = field(default_factory=list)
    # lists from the worker; int64 arrays once kept on the client (compact)
    sequence: list[int] | np.ndarray = field(default_factory=list)
    start: list[int] | np.ndarray = field(default_factory=list)
    end: list[int] | np.ndarray = field(default_factory=list)
    kernel: list[str] = field(default_factory=list)     # its first kernel's short name

    def __len__(self) -> int:
        return len(self.name)

    def keys(self) -> list[tuple[str, str, int]]:
        return list(zip(self.name, self.group, self.sequence))

    def to_json(self) -> dict[str, list]:
        """Plain lists (the columns may be numpy arrays: :func:`compact`)."""
        return {k: v.tolist() if isinstance(v, np.ndarray) else list(v)
                for k, v in vars(self).items()}


def compact(rc: RankCollectives) -> RankCollectives:
    """The same instances as the client keeps them: times and sequences as int64
    arrays, names as shared strings. 1,000 instances of one rank: ~50 KB instead of
    ~170 KB of separate ints and strings, which at 1,024 ranks decides whether the
    client stays under 300 MB."""
    intern = sys.intern
    seq: list[int] | np.ndarray
    try:
        seq = np.asarray(rc.sequence, np.int64)
    except (TypeError, ValueError, OverflowError):
        seq = rc.sequence
    return RankCollectives(
        name=[intern(str(x)) for x in rc.name], group=[intern(str(x)) for x in rc.group],
        sequence=seq, start=np.asarray(rc.start, np.int64),
        end=np.asarray(rc.end, np.int64), kernel=[intern(str(x)) for x in rc.kernel])


class RankTimes(Mapping):
    """rank -> ns for one matched instance: a read-only mapping over two aligned arrays
    (ranks ascending) that slice the job's matching, so 1,000 instances x 1,024 ranks
    are 16 MB of arrays rather than 2M dict entries. Values are Python ints."""

    __slots__ = ("_ranks", "_ns")

    def __init__(self, ranks: np.ndarray, ns: np.ndarray):
        self._ranks, self._ns = ranks, ns

    def __getitem__(self, rank: int) -> int:
        i = int(np.searchsorted(self._ranks, rank))
        if i < len(self._ranks) and self._ranks[i] == rank:
            return int(self._ns[i])
        raise KeyError(rank)

    def __iter__(self) -> Iterator[int]:
        return iter(self._ranks.tolist())

    def __len__(self) -> int:
        return len(self._ranks)

    def values(self) -> list[int]:        # type: ignore[override]
        return self._ns.tolist()

    def items(self) -> list[tuple[int, int]]:   # type: ignore[override]
        return list(zip(self._ranks.tolist(), self._ns.tolist()))

    def __repr__(self) -> str:
        return repr(dict(self.items()))


def short_kernel_name(name: str) -> str:
    """A kernel name up to its argument list (``ncclKernel_AllReduce_RING_LL_Sum_float``)."""
    cut = name.find("(")
    return (name[:cut] if cut > 0 else name).strip()


def _marker_column(trace: Trace, col: str) -> tuple[np.ndarray, list] | None:
    m = trace.markers
    if col not in m.data.column_names or len(m) == 0:
        return None
    if col == "collective_seq":
        return m.numpy(col, fill=-1).astype(np.int64), []
    return m.codes(col)


class _OpInfo:
    """What the op forest says about collective ops: per op, its collective name,
    group and seq where the markers carry them."""

    def __init__(self, trace: Trace, forest):
        self.forest = forest
        self.coll = _marker_column(trace, "collective")
        self.group = _marker_column(trace, "process_group")
        self.seq = _marker_column(trace, "collective_seq")

    def _text(self, col, op: int) -> str | None:
        if col is None:
            return None
        codes, cats = col
        c = int(codes[int(self.forest.row[op])])
        return cats[c] if c >= 0 else None

    def chain(self, op: int) -> tuple[int, str | None, str, int | None]:
        """(owner op, name, group, seq) of the collective above (or at) ``op``;
        owner -1 when no op of the chain is a collective."""
        owner, name, coll, group, seq = -1, None, None, None, None
        while op >= 0:
            own = self.forest.name_of(op)
            c = self._text(self.coll, op)
            if c is not None or own == PARAM_COMMS or own.startswith(COLLECTIVE_PREFIXES):
                owner = op
                if own.startswith(COLLECTIVE_PREFIXES) and name is None:
                    name = own
                if c is not None and coll is None:
                    coll, group = c, self._text(self.group, op)
                    s = int(self.seq[0][int(self.forest.row[op])]) if self.seq else -1
                    seq = s if s >= 0 else None
            op = int(self.forest.parent[op])
        return owner, name or coll, group or "", seq


class _KernelArgs:
    """The kernels' own collective args (Kineto copies them from the launching op)."""

    def __init__(self, trace: Trace):
        have = set(trace.kernels.data.column_names)
        self.coll = trace.kernels.codes("collective") if "collective" in have else None
        self.group = trace.kernels.codes("process_group") if "process_group" in have else None
        self.seq = trace.kernels.numpy("collective_seq", fill=-1).astype(np.int64) \
            if "collective_seq" in have else None

    @staticmethod
    def _text(col, row: int) -> str | None:
        if col is None:
            return None
        c = int(col[0][row])
        return col[1][c] if c >= 0 else None

    def at(self, row: int) -> tuple[str | None, str | None, int | None]:
        """(name, group, seq) of kernel ``row``, None where it has none."""
        s = int(self.seq[row]) if self.seq is not None else -1
        return self._text(self.coll, row), self._text(self.group, row), s if s >= 0 else None


def collectives_of(trace: Trace, att=None) -> RankCollectives:
    """The collective instances of one rank's trace (see the module docstring);
    ``att``: its op attribution (``analyses_of(trace).ops()``), computed when None."""
    k = trace.kernels
    if len(k) == 0:
        return RankCollectives()
    codes, cats = k.codes("name")
    comm = np.nonzero(classes_of(codes, cats) == CLASSES.index(COMM))[0]
    if len(comm) == 0:
        return RankCollectives()
    if att is None:
        from .ops import attribute

        att = attribute(trace)
    info, own = _OpInfo(trace, att.forest), _KernelArgs(trace)
    start, end = k.numpy("start").astype(np.int64), k.numpy("end").astype(np.int64)
    groups: dict[tuple, list] = {}
    for row in comm[np.argsort(start[comm], kind="stable")]:
        op = int(att.kernel_op[row])
        kname = short_kernel_name(cats[int(codes[row])] if codes[row] >= 0 else "")
        owner, name, group, seq = info.chain(op) if op >= 0 else (-1, None, "", None)
        k_name, k_group, k_seq = own.at(int(row))
        name, group = name or k_name, group or k_group or ""
        seq = k_seq if seq is None else seq
        key = ("op", owner) if owner >= 0 else ("kernel", int(row)) if k_seq is None else \
            ("seq", name or kname, group, k_seq)
        g = groups.get(key)
        if g is None:
            groups[key] = [name or kname, group, seq, int(start[row]), int(end[row]), kname]
        else:
            g[3], g[4] = min(g[3], int(start[row])), max(g[4], int(end[row]))
    return _numbered(sorted(groups.values(), key=lambda g: (g[3], g[0])))


def _numbered(rows: list[list]) -> RankCollectives:
    """Sequence numbers: the file's Seq where a (name, group) has it throughout, else
    the order within that (name, group)."""
    by: dict[tuple[str, str], list[list]] = defaultdict(list)
    for r in rows:
        by[(r[0], r[1])].append(r)
    for members in by.values():
        if any(r[2] is None for r in members):
            for i, r in enumerate(members):
                r[2] = i
    cols: list[list] = [[r[i] for r in rows] for i in range(6)]
    return RankCollectives(*cols)


def match(per_rank: Mapping[int, RankCollectives]) -> tuple[list, int]:
    """Instances matched across ranks (those on two ranks or more), earliest first, as
    :class:`~hipscope.ranks.model.CollectiveInstance`; and how many instances were on
    one rank only (left out). A rank that lists one identity twice keeps its first."""
    from ..ranks.model import CollectiveInstance

    ids: dict[tuple, int] = {}
    keys: list[tuple[str, str, int]] = []
    parts: list[tuple[np.ndarray, int, np.ndarray, np.ndarray]] = []
    for rank in sorted(per_rank):
        rc = per_rank[rank]
        if not len(rc):
            continue
        inst = np.empty(len(rc), np.int64)
        for i, key in enumerate(rc.keys()):
            got = ids.get(key)
            if got is None:
                got = ids[key] = len(keys)
                keys.append((str(key[0]), str(key[1]), int(key[2])))
            inst[i] = got
        parts.append((inst, rank, np.asarray(rc.start, np.int64), np.asarray(rc.end, np.int64)))
    if not parts:
        return [], 0
    inst = np.concatenate([p[0] for p in parts])
    who = np.concatenate([np.full(len(p[0]), p[1], np.int64) for p in parts])
    start = np.concatenate([p[2] for p in parts])
    end = np.concatenate([p[3] for p in parts])
    del parts
    order = np.lexsort((who, inst))          # stable: a rank's first listing first
    inst, who, start, end = inst[order], who[order], start[order], end[order]
    first = np.ones(len(inst), bool)
    first[1:] = (inst[1:] != inst[:-1]) | (who[1:] != who[:-1])
    inst, who, start, end = inst[first], who[first], start[first], end[first]
    bounds = np.flatnonzero(np.r_[True, inst[1:] != inst[:-1], True])
    out: list[tuple[tuple, CollectiveInstance]] = []
    alone = 0
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        if b - a < 2:
            alone += 1
            continue
        arr = start[a:b]
        top = int(np.argmax(arr))             # the first maximum: the lowest such rank
        latest = int(arr[top])
        name, group, seq = keys[int(inst[a])]
        earliest = int(arr.min())
        out.append(((earliest, name, group, seq), CollectiveInstance(
            name=name, sequence=seq, group=group, arrival_ns=RankTimes(who[a:b], arr),
            end_ns=RankTimes(who[a:b], end[a:b]), skew_ns=latest - earliest,
            last_rank=int(who[a + top]), wait_ns=int((latest - arr).sum()))))
    out.sort(key=lambda kc: kc[0])           # keys are unique: no instance compared
    return [c for _, c in out], alone


def compare_collectives(a: Trace, b: Trace) -> list[dict] | None:
    """Two ranks of one job, collective by collective (``hipscope compare A B``): per
    instance matched on both, ``{"name", "group", "sequence", "a_arrival_ns",
    "b_arrival_ns", "skew_ns", "last"}`` ("a", "b", or None when they arrived
    together), in time order; None unless both traces have collectives."""
    from .context import analyses_of

    ca = collectives_of(a, analyses_of(a).ops())
    cb = collectives_of(b, analyses_of(b).ops())
    if not len(ca) or not len(cb):
        return None
    rows = []
    for c in match({0: ca, 1: cb})[0]:
        ta, tb = c.arrival_ns[0], c.arrival_ns[1]
        rows.append({"name": c.name, "group": c.group, "sequence": c.sequence,
                     "a_arrival_ns": ta, "b_arrival_ns": tb, "skew_ns": c.skew_ns,
                     "last": None if ta == tb else ("a" if ta > tb else "b")})
    return rows


def format_collectives_text(rows: list[dict], top: int = 15) -> list[str]:
    """The compare text section: the instances with the largest skew first."""
    from ..model.units import fmt_duration

    worst = sorted(rows, key=lambda r: (-r["skew_ns"], r["name"], r["sequence"]))[:top]
    out = ["", f"Collectives matched on both ranks: {len(rows)} (largest skew first)",
           f"{'name':<32} {'group':>8} {'seq':>6} {'skew':>10} {'last':>5}"]
    for r in worst:
        out.append(f"{r['name'][:32]:<32} {r['group'][:8]:>8} {r['sequence']:>6} "
                   f"{fmt_duration(r['skew_ns']):>10} {r['last'] or '-':>5}")
    return out
