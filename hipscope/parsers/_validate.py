"""The one schema check every reader's output passes (readers' tests end with it)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..model import SPECS, Trace
from ..model.table import SchemaError, distinct, to_numpy

_KNOWN_META = {"format", "sources", "clock"}


def validate(trace: Trace) -> Trace:
    """Raise :class:`SchemaError` when ``trace`` breaks the canonical schema.

    Checks: every table's columns are declared with the declared types; required
    columns hold no nulls; end >= start; device references exist in ``devices``;
    ``api_index``/``kernel_index`` point at existing rows; meta names its format,
    sources and clock.
    """
    for name, table in trace.tables().items():
        spec = SPECS[name]
        if table.spec is not spec:
            raise SchemaError(f"{name}: table built from spec {table.spec.name!r}")
        for fld in table.data.schema:
            col = spec.by_name.get(fld.name)
            if col is None:
                raise SchemaError(f"{name}: undeclared column {fld.name!r}")
            if fld.type != col.type:
                raise SchemaError(f"{name}.{fld.name}: type {fld.type}, expected {col.type}")
        for req in spec.required:
            if req not in table.data.column_names:
                raise SchemaError(f"{name}: required column {req!r} missing")
            if table.data.column(req).null_count:
                raise SchemaError(f"{name}.{req}: required column has nulls")
        if "start" in spec.by_name and "end" in spec.by_name and len(table):
            s, e = table.numpy("start", fill=0), table.numpy("end", fill=0)
            bad = np.nonzero(e < s)[0]
            if len(bad):
                raise SchemaError(f"{name}: row {int(bad[0])} ends before it starts")
    _check_refs(trace)
    missing = _KNOWN_META - set(trace.meta)
    if missing:
        raise SchemaError(f"meta lacks {sorted(missing)}")
    return trace


def _check_refs(trace: Trace) -> None:
    dev_idx = set(trace.devices.numpy("index").tolist()) if len(trace.devices) else set()
    if len(dev_idx) != len(trace.devices):
        raise SchemaError("devices: duplicate index")
    for name, table in trace.tables().items():
        if name == "devices":
            continue
        for col in ("device", "src_device", "dst_device"):
            if col not in table.data.column_names:
                continue
            vals = to_numpy(table.column(col).drop_null())
            unknown = set(distinct(vals).tolist()) - dev_idx
            if unknown:
                raise SchemaError(f"{name}.{col}: devices {sorted(unknown)[:5]} not in devices")
    _check_index(trace.kernels.column("api_index"), len(trace.api), "kernels.api_index")
    _check_index(trace.copies.column("api_index"), len(trace.api), "copies.api_index")
    _check_index(trace.counters.column("kernel_index"), len(trace.kernels),
                 "counters.kernel_index")


def _check_index(arr: pa.Array, n: int, what: str) -> None:
    vals = to_numpy(arr.drop_null())
    if len(vals) and (vals.min() < 0 or vals.max() >= n):
        raise SchemaError(f"{what}: index out of range 0..{n - 1}")
