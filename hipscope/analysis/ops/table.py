"""The op table: one row per host op of the op forest, as a ``pyarrow.Table``
(``report --ops table --json`` key ``op_table``; docs/analysis.md "Op table").

Forward/backward link (``fwd_op``): a backward op (its Kineto ``Fwd thread id`` is
set and not 0) belongs to the forward op of its process with the same ``Sequence
number`` that started last at or before it; Kineto's own ``fwdbwd`` flows pick the
forward op the same way (among ops of one sequence number, the latest-starting one
created the autograd node).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...model import Trace
from .attribute import OpAttribution, attribute
from .forest import OpForest

COLUMNS = ("id", "name", "domain", "parent", "depth", "pid", "tid", "rank", "start", "end",
           "input_dims", "input_types", "external_id", "module", "sequence_number", "fwd_op",
           "gpu_ns", "marker_row")


def _marker_col(trace: Trace, col: str, rows: np.ndarray) -> pa.Array:
    m = trace.markers
    if col not in m.data.column_names:
        typ = pa.int64() if col in ("external_id", "sequence_number") else pa.string()
        return pa.nulls(len(rows), typ)
    arr = m.data.column(col).take(pa.array(rows, pa.int64())).combine_chunks()
    return arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr


def _nullable(values: np.ndarray, valid: np.ndarray) -> pa.Array:
    return pa.array(values, pa.int64(), mask=~valid)


def _ranks(trace: Trace, f: OpForest) -> pa.Array:
    """The job rank of each op's thread (distributedInfo), null where unknown."""
    n = len(f)
    if f.thread_rank is not None:
        got = [r.get("rank") if isinstance(r, dict) else None for r in trace.meta["ranks"]]
        labels = np.array([x if isinstance(x, int) and not isinstance(x, bool) else -1
                           for x in got], np.int64)
        per_op = labels[f.thread_rank.astype(np.int64)][f.thread] if n else labels[:0]
        return pa.array(per_op, pa.int64(), mask=per_op < 0)
    r = trace.meta.get("rank")
    ok = isinstance(r, int) and not isinstance(r, bool)
    return pa.array(np.full(n, r if ok else 0, np.int64), pa.int64(), mask=np.full(n, not ok))


def _module_paths(f: OpForest) -> pa.Array:
    """Module path of each op ('BertModel_0/BertEncoder_0/...'), null outside modules."""
    mods = np.unique(f.module[f.module >= 0])
    paths = [f.module_path(int(m)) for m in mods]
    idx = np.searchsorted(mods, np.maximum(f.module, 0)) if len(mods) else \
        np.zeros(len(f), np.int64)
    codes = np.where(f.module >= 0, idx, -1).astype(np.int32)
    return pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes < 0),
                                          pa.array(paths, pa.string())).dictionary_decode()


def forward_ops(f: OpForest, seq: np.ndarray, fwd_tid: np.ndarray) -> np.ndarray:
    """Per op: its forward op (see module docstring), -1 for none. ``seq``/``fwd_tid``
    are per op, -1 where the trace has none."""
    n = len(f)
    out = np.full(n, -1, np.int64)
    bwd = (seq >= 0) & (fwd_tid > 0)
    fwd = (seq >= 0) & (fwd_tid <= 0)
    if not (bwd.any() and fwd.any()):
        return out
    proc_of_thread = f.thread_rank if f.thread_rank is not None else np.zeros(len(f.threads))
    proc_pairs = np.stack([proc_of_thread.astype(np.int64), f.threads[:, 0]], axis=1)
    _, proc = np.unique(proc_pairs, axis=0, return_inverse=True)
    proc = proc.reshape(-1)[f.thread]
    cand = np.nonzero(fwd | bwd)[0]
    # by (process, sequence number, start, forward before backward, index)
    order = cand[np.lexsort((cand, bwd[cand], f.start[cand], seq[cand], proc[cand]))]
    last_fwd = np.where(fwd[order], np.arange(len(order)), -1)
    last_fwd = np.maximum.accumulate(last_fwd)
    is_b = bwd[order] & (last_fwd >= 0)
    pos = np.nonzero(is_b)[0]
    f_at = order[last_fwd[pos]]
    b_at = order[pos]
    same = (proc[f_at] == proc[b_at]) & (seq[f_at] == seq[b_at])
    out[b_at[same]] = f_at[same]
    return out


def ops_table(trace: Trace, att: OpAttribution | None = None) -> pa.Table:
    """One row per op of the forest (its order: by thread, then start): see
    :data:`COLUMNS`; ``id``/``parent``/``fwd_op`` are row numbers of this table,
    ``gpu_ns`` the GPU time the op launched itself, ``marker_row`` its row in
    ``trace.markers``."""
    att = attribute(trace) if att is None else att
    f = att.forest
    rows = f.row.astype(np.int64)
    m = trace.markers
    seq = m.numpy("sequence_number", fill=-1)[rows].astype(np.int64) \
        if "sequence_number" in m.data.column_names else np.full(len(f), -1, np.int64)
    fwd_tid = m.numpy("fwd_thread_id", fill=-1)[rows].astype(np.int64) \
        if "fwd_thread_id" in m.data.column_names else np.full(len(f), -1, np.int64)
    link = forward_ops(f, seq, fwd_tid)
    names = pa.array(f.names, pa.string())
    doms = pa.array(f.domains, pa.string())
    cols = {
        "id": pa.array(np.arange(len(f), dtype=np.int64)),
        "name": pa.DictionaryArray.from_arrays(pa.array(f.name, pa.int32()), names),
        "domain": pa.DictionaryArray.from_arrays(pa.array(f.domain, pa.int32()), doms),
        "parent": _nullable(f.parent, f.parent >= 0),
        "depth": pa.array(f.depth.astype(np.int64)),
        "pid": pa.array(f.threads[f.thread, 0].astype(np.int64) if len(f) else
                        np.zeros(0, np.int64)),
        "tid": pa.array(f.threads[f.thread, 1].astype(np.int64) if len(f) else
                        np.zeros(0, np.int64)),
        "rank": _ranks(trace, f),
        "start": pa.array(f.start.astype(np.int64)),
        "end": pa.array(f.end.astype(np.int64)),
        "input_dims": _marker_col(trace, "input_dims", rows),
        "input_types": _marker_col(trace, "input_types", rows),
        "external_id": _marker_col(trace, "external_id", rows),
        "module": _module_paths(f),
        "sequence_number": _nullable(seq, seq >= 0),
        "fwd_op": _nullable(link, link >= 0),
        "gpu_ns": pa.array(att.gpu_ns_per_op().astype(np.int64)),
        "marker_row": pa.array(rows),
    }
    return pa.table([cols[c] for c in COLUMNS], names=list(COLUMNS))
