"""`Trace`: the one canonical, immutable result of reading any profiler output."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa

from .schema import SPECS
from .table import Table, build_table, empty_table

TABLES = ("kernels", "api", "copies", "markers", "counters", "devices", "queues", "streams",
          "samples")


@dataclass(frozen=True)
class Trace:
    """Tables of one trace (several processes or ranks may be merged into one).

    ``meta`` records the source: ``format`` (reader name), ``sources`` (files),
    ``clock``, ``tool``/``tool_version``, ``command``, ``host``, ``pids``, versions
    (``rocm_version``, ``hip_version``, ``cuda_version``, ``driver_version``),
    ``env`` (knobs when recorded), ``provenance`` (column -> where it came from),
    ``warnings`` (list of str) and ``dropped`` (what a torn file lost).
    """

    kernels: Table = field(default_factory=lambda: empty_table("kernels"))
    api: Table = field(default_factory=lambda: empty_table("api"))
    copies: Table = field(default_factory=lambda: empty_table("copies"))
    markers: Table = field(default_factory=lambda: empty_table("markers"))
    counters: Table = field(default_factory=lambda: empty_table("counters"))
    devices: Table = field(default_factory=lambda: empty_table("devices"))
    queues: Table = field(default_factory=lambda: empty_table("queues"))
    streams: Table = field(default_factory=lambda: empty_table("streams"))
    samples: Table = field(default_factory=lambda: empty_table("samples"))
    meta: dict[str, Any] = field(default_factory=dict)

    def tables(self) -> dict[str, Table]:
        return {name: getattr(self, name) for name in TABLES}

    @property
    def format(self) -> str:
        return str(self.meta.get("format", "unknown"))

    @property
    def warnings(self) -> list[str]:
        return list(self.meta.get("warnings", []))

    def device_name(self, index: int) -> str:
        idx = self.devices.numpy("index")
        hit = np.nonzero(idx == index)[0]
        if len(hit) == 0:
            return f"GPU {index}"
        return str(self.devices.column("name")[int(hit[0])].as_py())

    def time_range(self) -> tuple[int, int] | None:
        """Earliest start and latest end over all duration events (kernels, copies,
        API calls, markers with end > start); None for a trace without times. Computed
        once (the tables never change; a 5M-kernel trace takes 0.4 s)."""
        if "_time_range" not in self.__dict__:
            object.__setattr__(self, "_time_range", self._compute_time_range())
        return self.__dict__["_time_range"]

    def _compute_time_range(self) -> tuple[int, int] | None:
        lo, hi = None, None
        for t in (self.kernels, self.copies, self.api, self.markers):
            if len(t) == 0:
                continue
            s, e = t.numpy("start", fill=0), t.numpy("end", fill=0)
            ok = t.valid("start") & t.valid("end")
            if t is self.markers:
                ok &= e > s
            if not ok.any():
                continue
            if not ok.all():
                s, e = s[ok], e[ok]
            s_min, e_max = int(s.min()), int(e.max())
            lo = s_min if lo is None else min(lo, s_min)
            hi = e_max if hi is None else max(hi, e_max)
        return None if lo is None or hi is None else (lo, hi)

    def with_meta(self, **updates: Any) -> Trace:
        return replace(self, meta={**self.meta, **updates})

    def nbytes(self) -> dict[str, int]:
        return {name: t.nbytes() for name, t in self.tables().items()}


def link_by_correlation(
    kernel_corr: np.ndarray, kernel_pid: np.ndarray | None,
    api_corr: np.ndarray, api_pid: np.ndarray | None,
) -> np.ndarray:
    """Row in the API table for each kernel (or copy) with the same correlation id
    (and pid, when both sides have one); -1 where none. Vectorised: sort + search."""
    n_api = len(api_corr)
    if n_api == 0 or len(kernel_corr) == 0:
        return np.full(len(kernel_corr), -1, dtype=np.int32)
    if kernel_pid is not None and api_pid is not None:
        akey = (api_pid.astype(np.int64) << 40) ^ api_corr.astype(np.int64)
        kkey = (kernel_pid.astype(np.int64) << 40) ^ kernel_corr.astype(np.int64)
    else:
        akey, kkey = api_corr.astype(np.int64), kernel_corr.astype(np.int64)
    order = np.argsort(akey, kind="stable")
    sorted_keys = akey[order]
    pos = np.searchsorted(sorted_keys, kkey)
    pos_c = np.minimum(pos, n_api - 1)
    found = sorted_keys[pos_c] == kkey
    out = np.where(found, order[pos_c], -1).astype(np.int32)
    return out


def _concat(tables: Sequence[Table]) -> pa.Table:
    datas = [t.data for t in tables if len(t) or t.data.num_columns]
    if not datas:
        return tables[0].data
    merged = pa.concat_tables(datas, promote_options="permissive")
    return merged.unify_dictionaries().combine_chunks()


class MergeError(ValueError):
    """Traces that cannot be merged into one; ``str()`` is one sentence for people."""


def merge_traces(traces: Sequence[Trace], meta: dict[str, Any] | None = None,
                 names: Sequence[str] | None = None) -> Trace:
    """Merge traces of several processes/ranks/nodes into one trace.

    Devices are identified by (host, raw_id, name, meta rank); device indices, API row links and
    counter kernel links are renumbered. Timestamps must already share one clock:

    * traces whose ``meta["clock"]`` differ are refused (:class:`MergeError`): their
      timestamps cannot be compared, so every span and gap would be absurd;
    * traces of different ``meta["format"]`` on the same clock are merged with a
      warning: two formats of one run may hold the same events twice.

    ``names`` label the traces in those sentences (default: each one's first source).
    The same file given twice is refused by ``open_trace``, which knows the paths.
    """
    if len(traces) == 1:
        return traces[0] if meta is None else traces[0].with_meta(**meta)
    mixed = _check_mergeable(traces, names)
    dev_keys: dict[tuple, int] = {}
    dev_rows: list[dict[str, Any]] = []
    parts: dict[str, list[Table]] = {name: [] for name in TABLES if name != "devices"}
    api_offset = kernel_offset = 0
    for tr in traces:
        remap = {}
        for i in range(len(tr.devices)):
            row = tr.devices.row(i)
            # a rank's GPUs are its own: two ranks' "GPU 0" (other nodes) stay apart
            # where no host tells the nodes apart
            key = (row.get("host"), row.get("raw_id"), row.get("name"),
                   tr.meta.get("rank") if row.get("host") is None else None)
            if key not in dev_keys:
                dev_keys[key] = len(dev_rows)
                dev_rows.append({**row, "index": len(dev_rows)})
            remap[row["index"]] = dev_keys[key]
        for name in parts:
            t = tr.tables()[name]
            data = t.data
            if "device" in data.column_names and remap:
                data = _remap_int(data, "device", remap)
            for col in ("src_device", "dst_device"):
                if col in data.column_names and remap:
                    data = _remap_int(data, col, remap)
            if "api_index" in data.column_names and api_offset:
                data = _add_offset(data, "api_index", api_offset)
            if name == "counters" and "kernel_index" in data.column_names and kernel_offset:
                data = _add_offset(data, "kernel_index", kernel_offset)
            parts[name].append(Table(t.spec, data))
        api_offset += len(tr.api)
        kernel_offset += len(tr.kernels)
    merged = {name: Table(SPECS[name], _concat(ts)) for name, ts in parts.items()}
    devices = build_table("devices", {
        c: [r.get(c) for r in dev_rows] for c in SPECS["devices"].by_name
    }, n=len(dev_rows))
    m: dict[str, Any] = {}
    for tr in traces:
        for k, v in tr.meta.items():
            if k in ("warnings", "diagnostics", "sources", "pids", "graph_launch_kernels"):
                m.setdefault(k, [])
                m[k].extend(x for x in v if x not in m[k])
            else:
                m.setdefault(k, v)
    if len({tr.meta.get("rank") for tr in traces}) > 1:
        m.pop("rank", None)             # several ranks: none is the merge's
        m.pop("rank_variable", None)
    m.update(meta or {})
    if mixed:
        from .diagnostics import add_diagnostic

        add_diagnostic(m, "merge.mixed_formats", "warning", mixed)
    return Trace(devices=devices, meta=m, **merged)


def _check_mergeable(traces: Sequence[Trace], names: Sequence[str] | None) -> str | None:
    """Refuse different clocks (MergeError); a warning for different formats, or None."""
    labels = list(names) if names and len(names) == len(traces) else [
        str((t.meta.get("sources") or [f"trace {i + 1}"])[0]) for i, t in enumerate(traces)]
    first = traces[0].meta
    for label, tr in zip(labels[1:], traces[1:]):
        a, b = first.get("clock"), tr.meta.get("clock")
        if a and b and a != b:
            raise MergeError(
                f"cannot merge {labels[0]} (clock: {a}) with {label} (clock: {b}): their "
                "timestamps are on different clocks; open them separately or compare them.")
    formats = {str(t.meta["format"]) for t in traces if t.meta.get("format")}
    if len(formats) < 2:
        return None
    each = ", ".join(f"{lab} ({t.meta.get('format', 'unknown')})"
                     for lab, t in zip(labels, traces))
    return (f"merged traces of {len(formats)} different formats on one clock: {each}; "
            "events that more than one of them recorded are counted more than once")


def _remap_int(data: pa.Table, col: str, mapping: dict[int, int]) -> pa.Table:
    arr = data.column(col).combine_chunks()
    vals = arr.to_numpy(zero_copy_only=False)
    if arr.null_count:
        vals = np.nan_to_num(vals.astype(np.float64), nan=-1).astype(np.int64)
    keys = np.array(sorted(mapping), dtype=np.int64)
    new = np.array([mapping[k] for k in keys], dtype=np.int64)
    pos = np.clip(np.searchsorted(keys, vals), 0, len(keys) - 1)
    out = np.where(keys[pos] == vals, new[pos], vals)
    new_arr = pa.array(out, mask=~arr.is_valid().to_numpy(zero_copy_only=False)
                       if arr.null_count else None).cast(arr.type)
    return data.set_column(data.column_names.index(col), col, new_arr)


def _add_offset(data: pa.Table, col: str, offset: int) -> pa.Table:
    import pyarrow.compute as pc

    arr = data.column(col).combine_chunks()
    new_arr = pc.add(arr, pa.scalar(offset, arr.type))
    return data.set_column(data.column_names.index(col), col, new_arr)
