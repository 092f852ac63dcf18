"""Kineto markers: host ranges (annotations, operators, Python frames), GPU user
annotations and GPU-side synchronisation intervals (``cuda_sync``) on their device and
stream, linked to their runtime call by correlation id."""

from __future__ import annotations

from operator import attrgetter
from types import SimpleNamespace
from typing import Any

import msgspec
import numpy as np

from ...model.table import categorical
from .._common import group_key, nesting_depth
from .columns import (
    NULL,
    filtered_table,
    first_seen,
    name_column,
    opt_array,
    pid_tid,
    str_codes,
    times_ns,
    to_int,
)
from .native import ABSENT, INT, JNULL, RAW, ColSub

__all__ = ["comm_fields", "gpu_annotation_side", "kernel_comm_fields", "marker_table",
           "op_fields"]

_I31, _I62, _I63 = (1 << 31) - 1, 1 << 62, (1 << 63) - 1


def gpu_annotation_side(sub: list, base: int, gpu_groups: list[SimpleNamespace]
                        ) -> SimpleNamespace:
    """GPU user annotations as columns; ``dev_raw`` is args.device, else the device of
    the kernels/copies drawn on the same GPU row (same raw pid: a merged multi-rank file
    rewrites pids, e.g. rank * 10**6 + device), else the pid as a number."""
    ga = SimpleNamespace(sub=sub)
    ga.start, ga.end, ga.ok = times_ns(sub, base)
    ga.pid, ga.tid = pid_tid(sub)
    if not sub:
        ga.dev_raw = ga.pid
        return ga
    row_dev: dict[str, int] = {}
    for g in gpu_groups:
        has = g.cols["device"] != NULL
        if not has.any():
            continue
        codes, cats = _pid_codes(g.sub)
        uniq, first = np.unique(codes[has], return_index=True)
        for c, d in zip(uniq.tolist(), g.cols["device"][has][first].tolist()):
            row_dev.setdefault(cats[c], d)
    dev = [to_int(e.args.device) if e.args is not None else NULL for e in sub]
    ga.dev_raw = np.array([d if d != NULL else row_dev.get(str(e.pid), int(p))
                           for d, e, p in zip(dev, sub, ga.pid.tolist())], dtype=np.int64)
    return ga


def _pid_codes(sub: Any) -> tuple[np.ndarray, list[str]]:
    """Codes of the events' pids and their text (``str_codes`` of the pids)."""
    if isinstance(sub, ColSub):
        k, v = sub.field("pid")
        if (k == INT).all():
            uniq, inv = np.unique(v, return_inverse=True)
            return inv.reshape(-1), [str(x) for x in uniq.tolist()]
    return str_codes(list(map(attrgetter("pid"), sub)))


def _text_column(parts: list, field: str, extra: tuple[str, int] | None = None) -> Any:
    """``name_column`` of the ``field`` of several event groups in turn (``extra``: a
    constant text for that many more rows)."""
    if all(isinstance(p, ColSub) for p in parts):
        ev = parts[0].ev
        ids = [p.ids(field) for p in parts]
        if extra:
            ids.append(np.full(extra[1], ev.string_id(extra[0]), np.int32))
        return categorical(*first_seen(np.concatenate(ids), ev.strings))
    texts = [getattr(e, field) for p in parts for e in p]
    return name_column(texts + ([extra[0]] * extra[1] if extra else []))


def marker_table(host: list, base: int, ga: SimpleNamespace, sync: SimpleNamespace,
                 provenance: dict[str, str]):
    """Host ranges, then GPU annotations, then GPU-side syncs (own nesting groups)."""
    h_start, h_end, h_ok = times_ns(host, base)
    h_pid, h_tid = pid_tid(host)
    nh, ng, ns = len(host), len(ga.sub), len(sync.sub)

    def cat(h, g, s):
        return np.concatenate([h, g, s])

    start, end = cat(h_start, ga.start, sync.start), cat(h_end, ga.end, sync.end)
    ok = cat(h_ok, ga.ok, sync.ok)
    # one group per host (pid, tid), per GPU (device, stream) for annotations, and per
    # GPU (device, stream) for syncs: a sync never shifts an annotation's depth
    kind = np.concatenate([np.zeros(nh, np.int64), np.ones(ng, np.int64),
                           np.full(ns, 2, np.int64)])
    group = group_key(kind, cat(h_pid, ga.dev, sync.dev), cat(h_tid, ga.tid, sync.stream))
    depth = np.zeros(nh + ng + ns, dtype=np.int16)
    depth[ok] = nesting_depth(start[ok], end[ok], group[ok])
    null = np.full(ng + ns, NULL, np.int64)
    corr = np.concatenate([np.full(nh + ng, NULL, np.int64), sync.corr])
    cols: dict[str, Any] = {
        "name": _text_column([host, ga.sub, sync.sub], "name"),
        "domain": _text_column([host, ga.sub], "cat", ("cuda_sync", ns)),
        "start": start,
        "end": end,
        "depth": depth,
        "pid": opt_array(np.concatenate([h_pid, null]), -(1 << 31), _I31),
        "tid": opt_array(np.concatenate([h_tid, null]), -(1 << 62), _I62),
        "device": opt_array(np.concatenate([np.full(nh, NULL, np.int64), ga.dev, sync.dev]),
                       0, 32767),
        "stream": opt_array(np.concatenate([np.full(nh, NULL, np.int64), ga.tid, sync.stream]),
                       -(1 << 31), _I31),
    }
    cols.update(op_fields(host, ng + ns, provenance))
    cols.update(comm_fields(host, ng + ns, provenance))
    if ns:
        cols["correlation_id"] = opt_array(corr, -(1 << 63) + 1, _I63)
        provenance["markers.correlation_id"] = (
            "cuda_sync args.correlation: the runtime call (cudaStreamSynchronize, "
            "cudaEventSynchronize...) this GPU-side sync interval belongs to")
    provenance["markers.depth"] = ("nesting computed from the intervals per host (pid, tid) "
                                   "and per GPU (device, stream); GPU-side syncs among "
                                   "themselves")
    return filtered_table("markers", cols, ok, nh + ng + ns)


def _compact(raw: bytes) -> str | None:
    """Raw JSON (Kineto pretty-prints it over several lines) as compact JSON text."""
    try:
        v = msgspec.json.decode(raw) if raw else None
    except msgspec.DecodeError:
        return None
    return None if v is None else msgspec.json.encode(v).decode()


def _json_column(raws: list[bytes], n_other: int) -> Any:
    """Categorical column of compact JSON texts: each distinct raw text decoded once."""
    cats: dict[str, int] = {}
    lut = {}
    for raw in dict.fromkeys(raws):
        text = _compact(raw)
        lut[raw] = -1 if text is None else cats.setdefault(text, len(cats))
    codes = np.fromiter(map(lut.__getitem__, raws), np.int32, len(raws))
    return categorical(np.concatenate([codes, np.full(n_other, -1, np.int32)]), list(cats))


def op_fields(host: list, n_other: int, provenance: dict[str, str]) -> dict[str, Any]:
    """PyTorch op columns of the host ranges (input shapes and types as compact JSON
    text, External id, Sequence number, Fwd thread id); none when no op has them."""
    if isinstance(host, ColSub):
        return _op_fields_cols(host, n_other, provenance)
    args = [e.args for e in host]
    dims = [bytes(a.input_dims) if a is not None else b"" for a in args]
    if not any(dims):
        return {}
    out: dict[str, Any] = {
        "input_dims": _json_column(dims, n_other),
        "input_types": _json_column([bytes(a.input_type) if a is not None else b""
                                     for a in args], n_other),
    }
    for col in ("external_id", "sequence_number", "fwd_thread_id"):
        raw = [getattr(a, col) if a is not None else None for a in args]
        vals = np.array([v if type(v) is int else NULL if v is None else to_int(v)
                         for v in raw] + [NULL] * n_other, dtype=np.int64)
        arr = opt_array(vals, -(1 << 62), _I62)
        if arr is not None:
            out[col] = arr
    provenance["markers.input_dims"] = ("Kineto cpu_op args 'Input Dims' (and 'Input type'), "
                                        "as compact JSON text")
    return out


def _json_ids(host: ColSub, field: str, n_other: int) -> Any:
    """``_json_column`` of the raw texts of a field of the scanner's events."""
    k, v = host.arg(field)
    ids = np.where(k == RAW, v, -1)
    uniq, first = np.unique(ids, return_index=True)
    cats: dict[str, int] = {}
    lut = np.full(len(uniq), -1, np.int32)
    for j in np.argsort(first, kind="stable").tolist():
        rid = int(uniq[j])
        text = None if rid < 0 else _compact(host.ev.raws[rid])
        lut[j] = -1 if text is None else cats.setdefault(text, len(cats))
    codes = lut[np.searchsorted(uniq, ids)] if len(ids) else np.zeros(0, np.int32)
    return categorical(np.concatenate([codes, np.full(n_other, -1, np.int32)]), list(cats))


def _op_fields_cols(host: ColSub, n_other: int, provenance: dict[str, str]) -> dict[str, Any]:
    """``op_fields`` of the scanner's events."""
    if not (host.arg("input_dims")[0] == RAW).any():
        return {}
    out: dict[str, Any] = {"input_dims": _json_ids(host, "input_dims", n_other),
                           "input_types": _json_ids(host, "input_type", n_other)}
    for col in ("external_id", "sequence_number", "fwd_thread_id"):
        k, v = host.arg(col)
        if ((k == INT) | (k == ABSENT) | (k == JNULL)).all():
            vals = np.where(k == INT, v, NULL)
        else:
            vals = np.array([x if type(x) is int else NULL if x is None else to_int(x)
                             for x in host.arg_values(col)], dtype=np.int64)
        arr = opt_array(np.concatenate([vals, np.full(n_other, NULL, np.int64)]),
                        -(1 << 62), _I62)
        if arr is not None:
            out[col] = arr
    provenance["markers.input_dims"] = ("Kineto cpu_op args 'Input Dims' (and 'Input type'), "
                                        "as compact JSON text")
    return out


def _no_comm(args: ColSub, fields: tuple[str, ...]) -> bool:
    """Whether none of the events has any of these args."""
    for f in fields:
        k = args.arg(f)[0]
        if not ((k == ABSENT) | (k == JNULL)).all():
            return False
    return True


def _group_text(a: Any) -> str | None:
    """The process group of a record_param_comms op: its name, else its ranks."""
    for v in (a.pg_name, a.pg_ranks):
        if v is not None and v != "":
            return v if isinstance(v, str) else msgspec.json.encode(v).decode()
    return None


_COMM = ("coll_name", "pg_name", "pg_ranks", "seq")


def _comm_one(coll: Any, pg_name: Any, pg_ranks: Any, seq: Any, host: bool) -> tuple:
    """(collective, process group, seq) of one event's args; a host range without a
    collective name has none of them."""
    if host and coll is None:
        return None, None, NULL
    return (None if coll is None else str(coll),
            _group_text(SimpleNamespace(pg_name=pg_name, pg_ranks=pg_ranks)),
            NULL if seq is None else to_int(seq))


def _comm_values(src: Any, host: bool) -> tuple[list, list, list]:
    """``_comm_one`` per event of ``src`` (args, or the scanner's events: once per
    distinct combination of the four values)."""
    if isinstance(src, ColSub):
        cols = [src.arg(f) for f in _COMM]
        key = np.stack([c for k, v in cols for c in (k.astype(np.int64), v)], axis=1)
        uniq, inv = np.unique(key, axis=0, return_inverse=True)
        vals = [src.ev.py_values(uniq[:, 2 * i].astype(np.uint8), uniq[:, 2 * i + 1])
                for i in range(len(_COMM))]
        rows = [_comm_one(c, n, r, s, host) for c, n, r, s in zip(*vals)]
        per = [rows[i] for i in inv.reshape(-1).tolist()]
    else:
        per = [(None, None, NULL) if a is None else
               _comm_one(a.coll_name, a.pg_name, a.pg_ranks, a.seq, host) for a in src]
    if not per:
        return [], [], []
    names, groups, seq = (list(c) for c in zip(*per))
    return names, groups, seq


def comm_fields(host: Any, n_other: int, provenance: dict[str, str]) -> dict[str, Any]:
    """Collective columns of the host ranges (c10d ``record_param_comms`` args
    'Collective name', 'Process Group Name' (else 'Process Group Ranks'), 'Seq');
    none when no op has them."""
    if isinstance(host, ColSub) and _no_comm(host, ("coll_name",)):
        return {}
    names, groups, seq = _comm_values(
        host if isinstance(host, ColSub) else [e.args for e in host], host=True)
    if all(v is None for v in names):
        return {}
    pad: list[str | None] = [None] * n_other
    out: dict[str, Any] = {"collective": _nullable_names(names + pad),
                           "process_group": _nullable_names(groups + pad)}
    arr = opt_array(np.array(seq + [NULL] * n_other, dtype=np.int64), -(1 << 62), _I62)
    if arr is not None:
        out["collective_seq"] = arr
    provenance["markers.collective"] = ("Kineto record_param_comms args 'Collective name', "
                                        "'Process Group Name' (or 'Process Group Ranks'), "
                                        "'Seq'")
    return out


def kernel_comm_fields(args: Any, provenance: dict[str, str]) -> dict[str, Any]:
    """Collective columns of the kernels: the args Kineto copies onto a GPU kernel from
    its launching ``record_param_comms`` op (``appendCollectiveArgs`` in pytorch/kineto
    ``libkineto/src/output_json.cpp`` @ 30a9be30ff25177b23755e62db8ebf966f763e4f:
    'Collective name' since 2023-12, 'Process Group Name'/'Ranks' since 2024-03, 'Seq'
    since 2026-03), each column where any kernel has it; none when no kernel has any."""
    if isinstance(args, ColSub) and _no_comm(args, _COMM):
        return {}
    names, groups, seq = _comm_values(args, host=False)
    out: dict[str, Any] = {}
    if any(v is not None for v in names):
        out["collective"] = _nullable_names(names)
    if any(v is not None for v in groups):
        out["process_group"] = _nullable_names(groups)
    arr = opt_array(np.array(seq, dtype=np.int64), -(1 << 62), _I62)
    if arr is not None:
        out["collective_seq"] = arr
    if out:
        provenance["kernels.collective"] = (
            "Kineto kernel args 'Collective name', 'Process Group Name' (or 'Process Group "
            "Ranks'), 'Seq' (copied by Kineto from the launching record_param_comms op)")
    return out


def _nullable_names(values: list[str | None]) -> Any:
    """Categorical column with nulls where ``values`` holds None."""
    codes, cats = str_codes([v if v is not None else "" for v in values])
    if "" in cats:
        empty = cats.index("")
        codes = np.where(codes == empty, -1, codes - (codes > empty)).astype(np.int32)
        cats = [c for c in cats if c != ""]
    return categorical(codes, cats)
