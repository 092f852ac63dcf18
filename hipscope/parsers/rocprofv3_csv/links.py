"""Links inside one rocprofv3 set: kernels/copies to their API call, counter rows to
their kernel (or kernels made from counter rows when there is no kernel_trace)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...model import link_by_correlation
from ...model.table import from_numpy, to_numpy
from .columns import has_values, Load, np_column
from .files import CsvSet

def _unique_link(k_corr: np.ndarray, k_pid: np.ndarray | None, a_corr: np.ndarray,
                 a_pid: np.ndarray | None) -> tuple[np.ndarray, int, int]:
    """Row in the API table of each kernel/copy with the same correlation id (and pid);
    -1 where none or where several API rows share the id. Returns (index, missing,
    ambiguous) counts over rows that have a correlation id."""
    has = k_corr >= 0
    a_corr = np.where(a_corr >= 0, a_corr, -2)       # null API ids never match
    idx = link_by_correlation(k_corr, k_pid, a_corr, a_pid)
    if k_pid is not None and a_pid is not None:
        akey = (a_pid.astype(np.int64) << 40) ^ a_corr.astype(np.int64)
        kkey = (k_pid.astype(np.int64) << 40) ^ k_corr.astype(np.int64)
    else:
        akey, kkey = a_corr.astype(np.int64), k_corr.astype(np.int64)
    srt = np.sort(akey)
    dups = np.unique(srt[1:][srt[1:] == srt[:-1]])
    amb = np.zeros(len(k_corr), dtype=bool)
    if len(dups):
        amb = np.isin(kkey, dups) & has
        idx[amb] = -1
    idx[~has] = -1
    missing = int((has & (idx < 0) & ~amb).sum())
    return idx, missing, int(amb.sum())


def link_to_api(rows: dict, what: str, s: CsvSet, api: dict | None, load: Load) -> None:
    n = len(rows["start"])
    corr_arr = rows.get("correlation_id")
    if api is None or n == 0:
        return
    nnull = n if corr_arr is None else corr_arr.null_count
    if nnull:
        load.warn(f"{s.label}: {nnull:,} {what} have no correlation id (Correlation_Id 0 or "
                  "empty) and cannot be linked to an API call")
    if nnull == n:
        return
    k_corr = np_column(corr_arr, -1)
    a_corr = np_column(api["correlation_id"], -1)
    a_pid = np_column(api["pid"], -1)
    k_pid = np_column(rows.get("pid"), -1) if has_values(rows.get("pid")) else None
    if k_pid is not None and not np.isin(np.unique(k_pid), a_pid).any():
        load.warn(f"{s.label}: the {what}' process id {int(k_pid[0])} does not appear in the "
                  "API files' Process_Id; linked by correlation id alone")
        k_pid = None
    use_pid = k_pid is not None
    idx, missing, amb = _unique_link(k_corr, k_pid if use_pid else None, a_corr,
                                     a_pid if use_pid else None)
    rows["api_index"] = idx
    where = s.label
    if missing:
        load.warn(f"{where}: {missing:,} {what} have no matching API call (correlation ids "
                  "not found in the API trace files)")
    if amb:
        load.warn(f"{where}: {amb:,} {what} have a correlation id shared by several API rows "
                  "(files from different runs or processes?); left unlinked")


def link_counters(cnt: dict, kern: dict | None, s: CsvSet, load: Load) -> None:
    """counters.kernel_index (set-local) by (pid, Dispatch_Id), else Correlation_Id."""
    n = len(cnt["counter"])
    cnt["kernel_index"] = np.full(n, -1, dtype=np.int32)
    if kern is None or not len(kern["start"]) or n == 0:
        return
    for col in ("dispatch_id", "correlation_id"):
        if kern.get(col) is None or cnt.get(col) is None:
            continue
        if kern[col].null_count == len(kern[col]) or cnt[col].null_count == n:
            continue
        k_id, c_id = np_column(kern[col], -1), np_column(cnt[col], -1)
        k_pid = np_column(kern.get("pid"), -1) if has_values(kern.get("pid")) else None
        c_pid = np_column(cnt.get("pid"), -1) if has_values(cnt.get("pid")) else None
        if k_pid is None or c_pid is None or not np.isin(np.unique(c_pid), k_pid).any():
            k_pid = c_pid = None
        # reverse roles: each counter row looks up its kernel
        idx, missing, amb = _unique_link(c_id, c_pid, k_id, k_pid)
        # a counter row whose kernel name differs from the kernel's is not that kernel
        if kern.get("name") is not None and cnt.get("name") is not None:
            hit = idx >= 0
            if hit.any():
                kn = kern["name"].take(from_numpy(idx[hit])).cast(pa.string())
                cn = cnt["name"].filter(from_numpy(hit)).cast(pa.string())
                same = to_numpy(pc.equal(kn, cn), True)
                if not same.all():
                    bad = np.nonzero(hit)[0][~same]
                    idx[bad] = -1
                    load.warn(f"{s.label}: {len(bad):,} counter rows name a different kernel "
                              f"than the kernel_trace dispatch with the same {col}; left "
                              "unlinked")
        cnt["kernel_index"] = idx
        unl = int((idx < 0).sum())
        if unl:
            load.warn(f"{s.label}: {unl:,} counter rows have no matching kernel dispatch "
                      f"(by {col})")
        return
    load.warn(f"{s.label}: counter rows cannot be linked to kernels (no common Dispatch_Id or "
              "Correlation_Id)")


def kernels_from_counters(cnt: dict, s: CsvSet, load: Load) -> dict | None:
    """Kernels built from the counter rows' distinct dispatches (no kernel_trace)."""
    n = len(cnt["counter"])
    cnt["kernel_index"] = np.full(n, -1, dtype=np.int32)
    if n == 0:
        return None
    idcol = "dispatch_id" if cnt.get("dispatch_id") is not None else "correlation_id"
    if cnt.get(idcol) is None:
        load.warn(f"{s.label}: counter rows have neither Dispatch_Id nor Correlation_Id; no "
                  "kernels can be built from them")
        return None
    ids = np_column(cnt[idcol], -1)
    pid = np_column(cnt.get("pid"), -1) if cnt.get("pid") is not None else np.full(n, -1)
    key = (pid.astype(np.int64) << 40) ^ ids
    _uk, first, inv = np.unique(key, return_index=True, return_inverse=True)
    has_times = "start" in cnt and "end" in cnt
    first_rows = from_numpy(first)
    if has_times:
        start = cnt["start"].take(first_rows)
        end = cnt["end"].take(first_rows)
        # end < start passes through: the shared interval rule drops it
        ok = to_numpy(pc.and_(start.is_valid(), end.is_valid()))
    else:
        ok = np.zeros(len(first), dtype=bool)
    nk = len(first)
    if not ok.any():
        load.warn(f"{s.label}: counter_collection has {nk:,} dispatches but no "
                  "Start/End_Timestamp (ROCm <= 6.3 layout) and there is no kernel_trace: "
                  "no kernels are shown; counters keep no kernel link")
        return None
    if not ok.all():
        load.warn(f"{s.label}: {int((~ok).sum()):,} counter dispatches have no start/end "
                  "and are not shown as kernels; their counters keep no kernel link")
        load.drop("counter dispatches without times", int((~ok).sum()))
    keep = np.nonzero(ok)[0]
    new_index = np.full(nk, -1, dtype=np.int32)
    new_index[keep] = np.arange(len(keep), dtype=np.int32)
    cnt["kernel_index"] = new_index[inv]
    rows = from_numpy(first[keep])
    kern: dict[str, Any] = {}
    for c in ("agent", "name", "queue_raw", "pid", "tid", "correlation_id", "dispatch_id",
              "start", "end", "lds_bytes", "scratch_bytes", "vgpr", "accum_vgpr", "sgpr"):
        if cnt.get(c) is not None:
            kern[c] = cnt[c].take(rows)
    if "agent" not in kern:
        load.warn(f"{s.label}: counter rows have no Agent_Id; no kernels can be built")
        cnt["kernel_index"] = np.full(n, -1, dtype=np.int32)
        return None
    load.provenance["kernels (from counters)"] = (
        "built from counter_collection.csv's distinct dispatches (no kernel_trace.csv); "
        "Grid_Size/Workgroup_Size are products and are not split into x/y/z")
    return kern
