"""Compare two runs by op: the GPU time each matched op launched, whatever its
kernels are called (hipBLASLt ``Cijk_...`` on one side, cuBLAS ``sm90_xmma_...`` on
the other), so that two GPUs, two vendors or eager against compiled compare.

Matching (issue 17): an op's key is (its parent's key, its name (+ input shapes when
both runs record them), its rank among the parent's children of that name, by start),
interned in one table for both runs, so two ops match when the whole chain of
(name, rank) from the top agrees: steps (``ProfilerStep#N``, whatever N) first,
then ops by name and order within the parent.
Plain Python frames (``python_function`` other than ``nn.Module``) are transparent:
their file:line names differ between library versions; their GPU time counts for the
nearest op above them.

Levels, finest first: **op** (the launching op is matched), **module** (the nearest
``nn.Module`` / annotation / roctx / NVTX range around it is), **step** (its
``ProfilerStep#`` is). ``coverage`` is the share of each run's attributable GPU time
inside matched ops at a level; the comparison speaks at the finest level that covers
:data:`MIN_LEVEL_COVERAGE` of both runs, else at the best one; "not comparable" only
when no level matches anything.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...model import Trace
from ..kernel_class import CLASSES
from ..ops import ATTRIBUTED, STEP_PREFIX, OpAttribution, attribute

LEVELS = ("op", "module", "step")
MIN_LEVEL_COVERAGE = 0.5
_STEP = re.compile(r"^ProfilerStep#\d+$")
_REGION_DOMAINS = ("user_annotation", "roctx", "nvtx", "python_function")


@dataclass
class _Side:
    """One run: attribution, per event its op at each level, and per op its key."""

    att: OpAttribution
    attributed: np.ndarray
    ev_ns: np.ndarray
    ev_cls: np.ndarray
    ev_level_op: dict[str, np.ndarray]
    key: np.ndarray


def _level_ops(att: OpAttribution) -> dict[str, np.ndarray]:
    """Per op: the op that stands for it at each level (-1: none)."""
    f = att.forest
    n = len(f)
    idx = np.arange(n)
    eff = np.where(f.visible, idx, f.visible_parent) if n else idx
    region_dom = np.array([d in _REGION_DOMAINS for d in f.domains] + [False], bool)
    names_step = np.array([bool(_STEP.match(s)) for s in f.names] + [False], bool)
    region = f.visible & region_dom[f.domain] if n else np.zeros(0, bool)
    step = names_step[f.name] if n else np.zeros(0, bool)
    return {"op": eff, "module": f.inherit(region), "step": f.inherit(step)}


def _keys(att: OpAttribution, intern: dict[tuple, int], shapes: bool) -> np.ndarray:
    """Interned key per visible op (-1 for plain Python frames): see module docstring;
    with ``shapes``, an op's input shapes are part of its name."""
    f = att.forest
    key = np.full(len(f), -1, np.int64)
    rank: dict[tuple[int, str], int] = {}
    names = [STEP_PREFIX if _STEP.match(s) else s for s in f.names]
    for i in np.lexsort((np.arange(len(f)), f.start)).tolist():
        if not f.visible[i]:
            continue
        p = int(f.visible_parent[i])
        pk = int(key[p]) if p >= 0 else -2
        if p >= 0 and pk < 0:
            continue
        name = names[int(f.name[i])] + ("\0" + f.shape_of(i) if shapes else "")
        r = rank.get((pk, name), 0)
        rank[(pk, name)] = r + 1
        key[i] = intern.setdefault((pk, name, r), len(intern))
    return key


def _side(att: OpAttribution, intern: dict[tuple, int], shapes: bool) -> _Side:
    op, status, ns, cls = att.events()
    per_op = _level_ops(att)
    ok = status == ATTRIBUTED
    ev_level = {lv: np.where(ok, arr[np.maximum(op, 0)] if len(arr) else -1, -1)
                for lv, arr in per_op.items()}
    return _Side(att, ok, ns.astype(np.int64), cls, ev_level, _keys(att, intern, shapes))


def _matched_keys(a: _Side, b: _Side) -> set[int]:
    ka, kb = a.key[a.key >= 0], b.key[b.key >= 0]
    return set(np.intersect1d(ka, kb).tolist())


def _rekey_launchers(s: _Side, matched: np.ndarray, intern: dict[tuple, int]
                     ) -> np.ndarray:
    """Second chance for launching ops left unmatched because a wrapper around them
    exists in one run only (``Torch-Compiled Region``, ``aten::linear`` around an
    ``aten::addmm`` that compiled code calls directly), or because their input
    shapes differ (compiled code adds an ``out=`` tensor): key = (nearest matched
    ancestor, name, rank among such ops of that name under it, by start)."""
    f = s.att.forest
    out = np.full(len(f), -1, np.int64)
    lop = s.ev_level_op["op"]
    launchers = np.unique(lop[lop >= 0])
    if len(launchers) == 0:
        return out
    is_m = np.isin(s.key, matched)
    anc = f.inherit(is_m)
    todo = launchers[~is_m[launchers]]
    rank: dict[tuple[int, str], int] = {}
    for i in todo[np.argsort(f.start[todo], kind="stable")].tolist():
        p = int(f.parent[i])
        up = int(s.key[anc[p]]) if p >= 0 and anc[p] >= 0 else -2
        name = f.name_of(i)     # by name alone: compiled code passes an out= tensor
        r = rank.get((up, name), 0)
        rank[(up, name)] = r + 1
        out[i] = intern.setdefault(("launcher", up, name, r), len(intern))
    return out


def _match(sa: _Side, sb: _Side, intern: dict[tuple, int]) -> set[int]:
    """Keys of the ops both runs have (their ``key`` arrays updated in place)."""
    matched = _matched_keys(sa, sb)
    m_arr = np.fromiter(matched, np.int64, len(matched))
    ka, kb = (_rekey_launchers(s, m_arr, intern) for s in (sa, sb))
    both = np.intersect1d(ka[ka >= 0], kb[kb >= 0])
    for s, k in ((sa, ka), (sb, kb)):
        hit = np.isin(k, both) & (k >= 0)
        s.key[hit] = k[hit]
    return matched | set(both.tolist())


def _coverage(s: _Side, level: str, matched: np.ndarray) -> float:
    """Share of the run's attributable GPU time whose level op is matched."""
    lop = s.ev_level_op[level]
    has = lop >= 0
    total = float(s.ev_ns[s.attributed].sum())
    if total <= 0:
        return 0.0
    hit = has.copy()
    hit[has] = np.isin(s.key[lop[has]], matched)
    return float(s.ev_ns[hit].sum()) / total


def _pick_level(cov: dict[str, dict[str, float]]) -> str | None:
    for lv in LEVELS:
        if min(cov[lv].values()) >= MIN_LEVEL_COVERAGE:
            return lv
    best = max(LEVELS, key=lambda lv: min(cov[lv].values()))
    return best if min(cov[best].values()) > 0 else None


def _by_name(s: _Side, level: str) -> dict[str, list[int]]:
    """name -> [ops of the name that launched GPU work, their GPU ns] at a level."""
    f = s.att.forest
    lop = s.ev_level_op[level]
    ok = lop >= 0
    per_op = np.bincount(lop[ok], weights=s.ev_ns[ok], minlength=len(f))
    out: dict[str, list[int]] = {}
    for i in np.nonzero(per_op)[0].tolist():
        name = f.name_of(i)
        row = out.setdefault(STEP_PREFIX if _STEP.match(name) else name, [0, 0])
        row[0] += 1
        row[1] += int(per_op[i])
    return out


def _delta_rows(a: dict[str, list[int]], b: dict[str, list[int]], keys: list[str]
                ) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for k in keys:
        (ac, an), (bc, bn) = a.get(k, [0, 0]), b.get(k, [0, 0])
        rows.append({"name": k, "a_count": ac, "b_count": bc, "a_gpu_ns": an,
                     "b_gpu_ns": bn, "delta_ns": bn - an, "ratio": (bn / an) if an else None})
    rows.sort(key=lambda r: (-abs(int(r["delta_ns"])), str(r["name"])))
    return rows


def _matched_ops(s: _Side, level: str, matched: np.ndarray) -> dict[int, tuple[int, int]]:
    """key -> (op, GPU ns it stands for at the level) of the run's matched ops."""
    f, lop = s.att.forest, s.ev_level_op[level]
    ok = lop >= 0
    per_op = np.bincount(lop[ok], weights=s.ev_ns[ok], minlength=len(f))
    hit = np.nonzero(np.isin(s.key, matched) & (s.key >= 0))[0]
    return {int(s.key[i]): (int(i), int(per_op[i])) for i in hit.tolist()}


def _pair_rows(a: _Side, b: _Side, level: str, matched: set[int]) -> list[dict[str, Any]]:
    """Matched pairs of ops that launched GPU work at the level, summed by A's module
    path, the name and both runs' input shapes (``shapes``: A's, ``b_shapes``: B's; they
    differ where ops matched by name and order alone): the finer rows."""
    m_arr = np.fromiter(matched, np.int64, len(matched))
    ma, mb = _matched_ops(a, level, m_arr), _matched_ops(b, level, m_arr)
    sums: dict[tuple[str, str, str, str], list[int]] = {}
    fa, fb = a.att.forest, b.att.forest
    for k in sorted(set(ma) & set(mb)):
        (ia, na), (ib, nb) = ma[k], mb[k]
        if na == 0 and nb == 0:
            continue
        row = sums.setdefault((fa.module_path(ia), fa.name_of(ia), fa.shape_of(ia),
                               fb.shape_of(ib)), [0] * 3)
        row[0] += na
        row[1] += nb
        row[2] += 1
    rows: list[dict[str, Any]] = [
        {"path": p, "name": n, "shapes": sh, "b_shapes": bsh, "a_count": v[2],
         "b_count": v[2], "a_gpu_ns": v[0], "b_gpu_ns": v[1], "delta_ns": v[1] - v[0],
         "ratio": (v[1] / v[0]) if v[0] else None}
        for (p, n, sh, bsh), v in sums.items()]
    rows.sort(key=lambda r: (-abs(int(r["delta_ns"])), str(r["path"]), str(r["name"])))
    return rows


def _classes(a: _Side, b: _Side) -> list[dict[str, Any]]:
    ta = np.bincount(a.ev_cls.astype(np.int64), weights=a.ev_ns, minlength=len(CLASSES))
    tb = np.bincount(b.ev_cls.astype(np.int64), weights=b.ev_ns, minlength=len(CLASSES))
    return [{"class": c, "a_gpu_ns": int(x), "b_gpu_ns": int(y), "delta_ns": int(y - x),
             "ratio": (float(y / x)) if x else None}
            for c, x, y in zip(CLASSES, ta, tb) if x or y]


def compare_ops(a: Trace | OpAttribution, b: Trace | OpAttribution) -> dict[str, Any]:
    """The by-op comparison of B with A (traces or their attributions) as one
    JSON-ready dict (``compare --json`` key ``ops``): level, coverage {a, b}, levels
    {level: {a, b}}, by_name, rows, classes, matched_ops, not_comparable, shapes
    (whether input shapes took part in matching: when both runs record them)."""
    intern: dict[tuple, int] = {}
    att_a, att_b = (t if isinstance(t, OpAttribution) else attribute(t) for t in (a, b))
    shapes = att_a.forest.shape is not None and att_b.forest.shape is not None
    sa, sb = _side(att_a, intern, shapes), _side(att_b, intern, shapes)
    matched = _match(sa, sb, intern)
    m_arr = np.fromiter(matched, np.int64, len(matched))
    cov = {lv: {"a": _coverage(sa, lv, m_arr), "b": _coverage(sb, lv, m_arr)}
           for lv in LEVELS}
    level = _pick_level(cov)
    at = level or "op"
    na, nb = _by_name(sa, at), _by_name(sb, at)
    names = sorted(set(na) | set(nb))
    return {
        "level": level, "coverage": cov[at] if level else {"a": 0.0, "b": 0.0},
        "levels": cov, "matched_ops": len(matched),
        "by_name": _delta_rows(na, nb, names),
        "rows": _pair_rows(sa, sb, at, matched) if level else [],
        "classes": _classes(sa, sb),
        "not_comparable": level is None, "shapes": shapes,
    }


def has_ops(att: OpAttribution) -> bool:
    """True when some GPU work has a launching op."""
    _, status, _, _ = att.events()
    return bool((status == ATTRIBUTED).any())


def attach_ops(a: Trace, bs: Sequence[Trace], comparisons: Sequence[Any], by: str) -> None:
    """Add the by-op comparison to each comparison (``by``: op, kernel or auto) and
    judge comparability by op: different GPUs, or kernel sets that barely overlap by
    name, become facts among the warnings, not a refusal."""
    if by == "kernel":
        return
    from ..context import analyses_of

    att_a = analyses_of(a).ops()
    for b, c in zip(bs, comparisons):
        att_b = analyses_of(b).ops()
        if by == "auto" and not (has_ops(att_a) and has_ops(att_b)):
            continue
        c.ops = compare_ops(att_a, att_b)
        lv = c.ops["level"]
        c.warnings = [w.replace("not comparable: ", "by kernel name: " if "kernel" in w
                                else "", 1) for w in c.warnings]
        c.not_comparable = c.ops["not_comparable"]
        if lv is None:
            c.warnings.insert(0, "not comparable: no op, module or step of A matches one "
                                 "of B")


def matched_op_instances(a: Trace | OpAttribution, b: Trace | OpAttribution
                         ) -> dict[str, Any]:
    """The op instances :func:`compare_ops` matched, at the level it speaks at (for
    aligning two timelines at one of them): ``{"level", "a", "b"}``, ``a``/``b`` the
    op indices into each run's forest of each matched pair (ops of that level that
    launched GPU work), in A's start order; plus ``"att": (att_a, att_b)``."""
    intern: dict[tuple, int] = {}
    att_a, att_b = (t if isinstance(t, OpAttribution) else attribute(t) for t in (a, b))
    shapes = att_a.forest.shape is not None and att_b.forest.shape is not None
    sa, sb = _side(att_a, intern, shapes), _side(att_b, intern, shapes)
    matched = _match(sa, sb, intern)
    m_arr = np.fromiter(matched, np.int64, len(matched))
    level = _pick_level({lv: {"a": _coverage(sa, lv, m_arr), "b": _coverage(sb, lv, m_arr)}
                         for lv in LEVELS})
    at = level or "op"
    ops = []
    for s in (sa, sb):
        lop = s.ev_level_op[at]
        o = np.unique(lop[lop >= 0])
        o = o[np.isin(s.key[o], m_arr)]
        ops.append(dict(zip(s.key[o].tolist(), o.tolist())))
    keys = [k for k in ops[0] if k in ops[1]] if level else []
    pa = np.array([ops[0][k] for k in keys], np.int64)
    pb = np.array([ops[1][k] for k in keys], np.int64)
    order = np.argsort(att_a.forest.start[pa], kind="stable") if len(pa) else pa
    return {"level": level, "a": pa[order], "b": pb[order], "att": (att_a, att_b)}
