"""PyTorch profiler (Kineto) Chrome-trace JSON, AMD (roctracer) and NVIDIA (CUPTI).

Reference: docs FORMATS.md section 10. Speed: the whole file is decoded once by msgspec
into typed Structs (``args`` kept as raw JSON), with the garbage collector off; then
numpy columns are built per category, and ``args`` are decoded in one go (one JSON
array per category group) only for the events that need them: GPU kernels and
copies, runtime/driver calls and cuda_sync.

Time: ``ts``/``dur`` are µs with 3 decimals. New files (``baseTimeNanoseconds``):
epoch ns = base + ts*1000 (ts relative); old files: ts is absolute epoch µs. The
conversion is exact to the ns for the printed 3 decimals (whole µs and fraction are
converted separately).
"""

from __future__ import annotations

import gc
import mmap
import os
import re
from itertools import chain
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from ..model import Trace, build_table, categorical, link_by_correlation
from .base import (
    Cancelled,
    TraceFormatError,
    check_cancel,
    head_text,
    is_gzip,
    read_bytes_tolerant,
    register,
)

# --------------------------------------------------------------------------- structs


class _Args(msgspec.Struct, gc=False):
    """The args the tables use; every other key is skipped while decoding. Values are
    left untyped (coerced later, vectorised) so that no odd value fails the decode."""

    correlation: Any = None
    device: Any = None
    stream: Any = None
    grid: Any = None
    block: Any = None
    registers: Any = msgspec.field(default=None, name="registers per thread")
    shared: Any = msgspec.field(default=None, name="shared memory")
    bytes: Any = None
    size: Any = None
    kind: Any = None
    name: Any = None      # ph M process_name / thread_name
    labels: Any = None    # ph M process_labels


_EMPTY_ARGS = _Args()


class _Ev(msgspec.Struct, gc=False):
    ph: Any = ""
    cat: Any = ""
    name: Any = ""
    pid: Any = -1
    tid: Any = -1
    ts: Any = None
    dur: Any = None
    id: Any = None
    bp: Any = None
    args: _Args | None = None


_TOP_FIELDS = dict(
    schemaVersion=None, deviceProperties=None, distributedInfo=None,
    baseTimeNanoseconds=None, displayTimeUnit=None, traceName=None, trace_id=None,
    cupti_version=None, cuda_runtime_version=None, cuda_driver_version=None,
    roctracer_version=None, hip_runtime_version=None, hip_driver_version=None)


class _Top(msgspec.Struct):
    traceEvents: list[_Ev]
    schemaVersion: Any = None
    deviceProperties: Any = None
    distributedInfo: Any = None
    baseTimeNanoseconds: Any = None
    displayTimeUnit: Any = None
    traceName: Any = None
    trace_id: Any = None
    cupti_version: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None
    roctracer_version: Any = None
    hip_runtime_version: Any = None
    hip_driver_version: Any = None


class _LooseTop(msgspec.Struct):
    traceEvents: list[Any]
    schemaVersion: Any = None
    deviceProperties: Any = None
    distributedInfo: Any = None
    baseTimeNanoseconds: Any = None
    displayTimeUnit: Any = None
    traceName: Any = None
    trace_id: Any = None
    cupti_version: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None
    roctracer_version: Any = None
    hip_runtime_version: Any = None
    hip_driver_version: Any = None


_ARG_FIELDS = ("correlation", "device", "stream", "registers", "shared", "bytes", "size")

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
API_CATS = ("cuda_runtime", "cuda_driver", "cuda_sync")
HOST_MARKER_CATS = ("user_annotation", "cpu_op", "python_function")
GPU_MARKER_CATS = ("gpu_user_annotation",)

# grid of these AMD launch calls is the global work size (work-items), not blocks
_AMD_GLOBAL_SIZE_LAUNCHES = ("hipExtModuleLaunchKernel", "hipHccModuleLaunchKernel")
_AMD_ARCH = (("MI355", "gfx950"), ("MI350", "gfx950"), ("MI325", "gfx942"),
             ("MI300", "gfx942"), ("MI250", "gfx90a"), ("MI210", "gfx90a"),
             ("MI200", "gfx90a"), ("MI100", "gfx908"), ("MI50", "gfx906"),
             ("MI60", "gfx906"))
_COPY_RE = re.compile(r"\b(HtoD|DtoH|DtoD|HtoH|PtoP|HtoA|AtoH|AtoA|AtoD|DtoA)\b")
_HIP_MEMCPY_KIND = {0: "HtoH", 1: "HtoD", 2: "DtoH", 3: "DtoD"}

_NULL = -(1 << 62)


# --------------------------------------------------------------------------- helpers


def _human_hip(v: Any) -> str | None:
    """70226015 -> '7.2' (HIP_VERSION = major*10^7 + minor*10^5 + patch)."""
    if not isinstance(v, int) or v <= 0:
        return None
    return f"{v // 10_000_000}.{(v // 100_000) % 100}"


def _human_cuda(v: Any) -> str | None:
    """12040 -> '12.4' (CUDA_VERSION = major*1000 + minor*10)."""
    if not isinstance(v, int) or v <= 0:
        return None
    return f"{v // 1000}.{(v % 1000) // 10}"


def _to_int(x: Any) -> int:
    """Best-effort int from a JSON value; _NULL when there is none."""
    if isinstance(x, bool) or x is None:
        return _NULL
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        return int(x) if x == x and abs(x) < 9e18 else _NULL
    if isinstance(x, str):
        s = x.strip()
        try:
            return int(s, 16) if s.lower().startswith("0x") else int(s)
        except ValueError:
            m = re.search(r"-?\d+", s)
            return int(m.group()) if m else _NULL
    return _NULL


def _int_col(values: list, null: int = _NULL) -> np.ndarray:
    """int64 column from JSON values (None/invalid -> ``null``)."""
    try:
        return np.fromiter(values, np.int64, len(values))
    except (TypeError, ValueError, OverflowError):
        pass
    try:
        a = np.array(values, dtype=np.float64)
        if a.ndim != 1:
            raise ValueError
        bad = np.isnan(a) | (np.abs(a) > 9e15)
        out = np.where(bad, 0, a).astype(np.int64)
        if bad.any():
            out[bad] = null
        return out
    except (TypeError, ValueError, OverflowError):
        out = np.fromiter((_to_int(v) for v in values), np.int64, len(values))
        if null != _NULL:
            out[out == _NULL] = null
        return out


def _float_col(values: list) -> np.ndarray:
    try:
        a = np.array(values, dtype=np.float64)
        if a.ndim != 1:
            raise ValueError
        return a
    except (TypeError, ValueError, OverflowError):
        def f(v: Any) -> float:
            if isinstance(v, bool):
                return np.nan
            if isinstance(v, (int, float)):
                return float(v)
            if isinstance(v, str):
                try:
                    return float(v)
                except ValueError:
                    return np.nan
            return np.nan
        return np.fromiter((f(v) for v in values), np.float64, len(values))


def _us_to_ns(us: np.ndarray) -> np.ndarray:
    """µs floats (3 printed decimals) -> int64 ns, exact for values < 2^43 µs."""
    whole = np.floor(us)
    frac = us - whole
    return whole.astype(np.int64) * 1000 + np.rint(frac * 1000.0).astype(np.int64)


def _codes(strings: list) -> tuple[np.ndarray, list[str]]:
    """Categorical codes for a list of str (first-seen order)."""
    try:
        uniq = dict.fromkeys(strings)
    except TypeError:
        strings = [s if isinstance(s, str) else str(s) for s in strings]
        uniq = dict.fromkeys(strings)
    cats = [s if isinstance(s, str) else str(s) for s in uniq]
    m = {k: i for i, k in enumerate(uniq)}
    codes = np.fromiter(map(m.__getitem__, strings), np.int32, len(strings))
    return codes, cats


def _names(strings: list) -> Any:
    codes, cats = _codes(strings)
    return categorical(codes, cats)


def _opt(values: np.ndarray, lo: int, hi: int) -> Any:
    """Nullable pyarrow array: _NULL and out-of-range values become nulls."""
    bad = (values == _NULL) | (values < lo) | (values > hi)
    if bad.all():
        return None
    v = np.where(bad, 0, values)
    import pyarrow as pa

    return pa.array(v, mask=bad if bad.any() else None)


def _depth(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Nesting depth of intervals per group: how many ranges of the same group are
    open when each one starts (a range ending exactly at a start does not count; a
    zero-length range contains nothing). Vectorised: one lexsort of starts and ends."""
    n = len(start)
    if n == 0:
        return np.zeros(0, dtype=np.int16)
    zero = end <= start
    # events: starts (+1) and ends (-1); zero-length ranges are queries only (0).
    # Order: group, time, ends before starts before zero-length queries, longer first
    g = np.concatenate([group, group])
    t = np.concatenate([start, end])
    kind = np.concatenate([np.where(zero, 2, 1), np.zeros(n, np.int64)]).astype(np.int8)
    neg_end = np.concatenate([-end, np.zeros(n, np.int64)])
    order = np.lexsort((neg_end, kind, t, g))
    is_start = order < n
    step = np.where(is_start, 1, -1).astype(np.int64)
    step[np.concatenate([zero, zero])[order]] = 0
    open_before = np.cumsum(step) - step
    depth = np.empty(n, dtype=np.int64)
    depth[order[is_start]] = open_before[is_start]
    return np.clip(depth, 0, 32767).astype(np.int16)


def _err_place(msg: str, buf: bytes) -> str | None:
    m = re.search(r"\(byte (\d+)\)", msg)
    if m:
        off = int(m.group(1))
        line = buf.count(b"\n", 0, off) + 1
        return f"byte {off} (line {line})"
    m = re.search(r"\$\.traceEvents\[(\d+)\]", msg)
    if m:
        return f"record {m.group(1)} of traceEvents"
    return None


# --------------------------------------------------------------------------- decoding


def _decode_strict(buf: bytes) -> _Top:
    was = gc.isenabled()
    gc.disable()
    try:
        return msgspec.json.decode(buf, type=_Top)
    finally:
        if was:
            gc.enable()


def _loose_event(obj: Any) -> _Ev | None:
    if not isinstance(obj, dict):
        return None
    args = obj.get("args")
    try:
        a = msgspec.convert(args, _Args) if isinstance(args, dict) else None
    except msgspec.ValidationError:
        a = None
    return _Ev(ph=obj.get("ph", ""), cat=obj.get("cat", ""), name=obj.get("name", ""),
               pid=obj.get("pid", -1), tid=obj.get("tid", -1), ts=obj.get("ts"),
               dur=obj.get("dur"), id=obj.get("id"), bp=obj.get("bp"), args=a)


def _decode_loose(path: Path, buf: bytes) -> tuple[_Top, int]:
    """Decode with generic types and coerce: for files whose values have unusual
    types. Returns the top object and the count of records that were not objects."""
    try:
        loose = msgspec.json.decode(buf, type=_LooseTop)
    except msgspec.ValidationError as exc:
        msg = str(exc)
        raise TraceFormatError(path, "top level",
                               "a JSON object with a 'traceEvents' list (PyTorch profiler trace)",
                               msg) from None
    evs = []
    bad = 0
    for obj in loose.traceEvents:
        ev = _loose_event(obj)
        if ev is None:
            bad += 1
        else:
            evs.append(ev)
    fields = {f: getattr(loose, f) for f in _Top.__struct_fields__ if f != "traceEvents"}
    return _Top(traceEvents=evs, **fields), bad


def _decode_any(path: Path, buf: bytes) -> tuple[_Top, int]:
    """Typed decode, falling back to a generic one when values have odd types.
    Raises msgspec.DecodeError for text that is not JSON (or cut short)."""
    try:
        return _decode_strict(buf), 0
    except msgspec.ValidationError:
        return _decode_loose(path, buf)


def _recover_truncated(path: Path, buf: bytes) -> tuple[_Top, int, int] | None:
    """A JSON text cut short: close it after the last whole element and decode.
    Returns (top, records that were not objects, bytes dropped) or None when no cut
    point works."""
    start = buf.find(b'"traceEvents"')
    if start < 0:
        return None
    tries = 0
    window = 1 << 20
    seen: set[int] = set()
    while tries < 10:
        lo = max(start, len(buf) - window)
        cands = []
        for m in re.finditer(rb"([}\]])\s*,", buf[lo:]):
            pos = lo + m.start(1)
            if pos not in seen:
                cands.append((pos, m.group(1)))
        for pos, ch in reversed(cands):
            seen.add(pos)
            tail = b"]}" if ch == b"}" else b"}"
            tries += 1
            try:
                top, bad = _decode_any(path, buf[:pos + 1] + tail)
            except (msgspec.DecodeError, TraceFormatError):
                if tries >= 10:
                    break
                continue
            return top, bad, len(buf) - pos - 1
        if lo == start:
            break
        window *= 16
    return None


# --------------------------------------------------------------------------- reader


@register
class KinetoReader:
    name = "kineto"
    description = "PyTorch profiler (Kineto) trace"
    patterns = ("*.json", "*.json.gz", "*.pt.trace.json", "*.pt.trace.json.gz")
    priority = 50
    directories = False

    def sniff(self, path: Path) -> float:
        if path.is_dir():
            return 0.0
        head = head_text(path, 1 << 16)
        if not head.lstrip().startswith("{"):
            return 0.0
        if "rocprofiler-sdk-tool" in head:
            return 0.0
        compact = re.sub(r"\s+", "", head[:256])
        markers = ('"schemaVersion"', '"deviceProperties"', '"baseTimeNanoseconds"',
                   '"cuda_runtime"', '"cpu_op"', '"Record function id"', '"python_function"',
                   '"roctracer_version"', '"cupti_version"', '"PyTorch Profiler',
                   '"torch_profiler_kwargs"', '"ac2g"')
        kin = sum(1 for m in markers if m in head)
        kin += 1 if re.search(r'"cat":\s*"kernel"', head) else 0
        if compact.startswith('{"traceEvents":[{}') or ('"otherData"' in head and kin == 0):
            return 0.2  # legacy rocprof results.json
        has_te = '"traceEvents"' in head
        if has_te and kin >= 2:
            return 0.95
        if has_te and kin == 1:
            return 0.85
        if kin >= 2:
            return 0.6  # long metadata header before traceEvents (TraceLens files)
        if has_te and '"ph"' in head:
            return 0.4  # some Chrome trace
        return 0.0

    # ------------------------------------------------------------------ read
    def read(self, path, progress, cancelled) -> Trace:
        path = Path(path)
        was = gc.isenabled()
        gc.disable()  # millions of small objects: no cyclic GC passes while reading
        try:
            return self._read(path, progress, cancelled)
        except (TraceFormatError, Cancelled):
            raise
        except MemoryError:
            raise TraceFormatError(path, None, "a trace that fits in memory",
                                   "not enough memory") from None
        except Exception as exc:  # noqa: BLE001 - contract: nothing else escapes read()
            raise TraceFormatError(path, None, "a readable PyTorch profiler (Kineto) trace",
                                   f"{type(exc).__name__}: {exc}") from exc
        finally:
            if was:
                gc.enable()

    def _read(self, path: Path, progress, cancelled) -> Trace:
        warnings: list[str] = []
        dropped: dict[str, int] = {}
        try:
            if is_gzip(path):
                buf, gz_warn = read_bytes_tolerant(path)
                if gz_warn:
                    warnings.append(gz_warn)
                top = self._decode(path, buf, warnings, dropped)
                del buf
            else:
                # plain JSON: decode straight from a memory map (no copy into the heap;
                # nothing decoded keeps a reference into it)
                with open(path, "rb") as fh:
                    if os.fstat(fh.fileno()).st_size == 0:
                        raise TraceFormatError(path, "byte 0", "a JSON object with a "
                                               "'traceEvents' list", "an empty file")
                    with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                        top = self._decode(path, mm, warnings, dropped)
        except OSError as exc:
            raise TraceFormatError(path, None, "a readable file", str(exc)) from None
        progress(0.55)
        check_cancel(cancelled)
        return _build(path, top, warnings, dropped, progress, cancelled)

    def _decode(self, path: Path, buf, warnings: list[str], dropped: dict[str, int]) -> _Top:
        bad = 0
        try:
            top, bad = _decode_any(path, buf)
        except msgspec.DecodeError as exc:
            msg = str(exc)
            buf = bytes(buf)
            if not buf.strip():
                raise TraceFormatError(path, "byte 0", "a JSON object with a 'traceEvents' "
                                       "list", "an empty file") from None
            m = re.search(r"\(byte (\d+)\)", msg)
            cut_short = "truncated" in msg or (m is not None and int(m.group(1)) >= len(buf) - 64)
            rec = _recover_truncated(path, buf) if cut_short else None
            if rec is None:
                where = _err_place(msg, buf) or f"byte {len(buf)} (end of data)"
                raise TraceFormatError(path, where,
                                       "JSON text: an object with a 'traceEvents' list",
                                       msg) from None
            top, bad, lost = rec
            n_ok = len(top.traceEvents)
            warnings.append(
                f"{path}: the JSON text ends early ({msg}); kept {n_ok:,} whole events of "
                f"traceEvents and dropped the last {lost:,} bytes (a partial event and any "
                "top-level keys after it)")
            dropped["bytes"] = lost
        if bad:
            dropped["records that are not objects"] = bad
            warnings.append(f"{path}: {bad:,} elements of traceEvents are not objects "
                            "and were skipped")
        return top



# --------------------------------------------------------------------------- building


def _args_of(sub: list) -> list:
    return [e.args or _EMPTY_ARGS for e in sub]


def _args_cols(args: list, fields: tuple[str, ...] = _ARG_FIELDS) -> dict[str, np.ndarray]:
    out = {}
    for f in _ARG_FIELDS:
        if f in fields:
            out[f] = _int_col(list(map(attrgetter(f), args)))
        else:
            out[f] = np.full(len(args), _NULL, dtype=np.int64)
    return out


def _xyz(args: list, field: str) -> np.ndarray:
    vals = [getattr(a, field) for a in args]
    out = np.full((len(vals), 3), _NULL, dtype=np.int64)
    for i, v in enumerate(vals):
        if isinstance(v, list) and len(v) == 3:
            for j in range(3):
                x = v[j]
                if isinstance(x, int) and not isinstance(x, bool):
                    out[i, j] = x
    return out


def _xyz_fast(args: list, field: str) -> np.ndarray:
    vals = list(map(attrgetter(field), args))
    if not any(vals):
        return np.full((len(vals), 3), _NULL, dtype=np.int64)
    try:
        if all(len(v) == 3 for v in vals):
            return np.fromiter(chain.from_iterable(vals), np.int64, 3 * len(vals)).reshape(-1, 3)
    except (TypeError, ValueError, OverflowError):
        pass
    return _xyz(args, field)


def _pid_tid(sub: list) -> tuple[np.ndarray, np.ndarray]:
    return _int_col([e.pid for e in sub]), _int_col([e.tid for e in sub])


def _times(sub: list, base: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """start, end (int64 ns) and a mask of rows with a valid ts."""
    ts = _float_col([e.ts for e in sub])
    dur = _float_col([e.dur for e in sub])
    ok = np.isfinite(ts)
    dur = np.where(np.isfinite(dur) & (dur > 0), dur, 0.0)
    start = _us_to_ns(np.where(ok, ts, 0.0)) + base
    end = start + _us_to_ns(dur)
    return start, end, ok


def _build(path: Path, top: _Top, warnings: list[str], dropped: dict[str, int],
           progress, cancelled) -> Trace:
    evs = top.traceEvents
    n = len(evs)
    base = top.baseTimeNanoseconds
    if isinstance(base, float) and base == base:
        base = int(base)
    if not isinstance(base, int) or isinstance(base, bool):
        base = 0
    provenance: dict[str, str] = {}

    cats = [e.cat for e in evs]
    cat_codes, cat_names = _codes(cats)
    del cats
    cat_index = {c: i for i, c in enumerate(cat_names)}

    def select(names: tuple[str, ...], phase: str | None = "X") -> list:
        wanted = [cat_index[c] for c in names if c in cat_index]
        if not wanted:
            return []
        idx = np.flatnonzero(np.isin(cat_codes, wanted))
        sub = list(map(evs.__getitem__, idx.tolist()))
        if phase is not None:
            sub = [e for e in sub if e.ph == phase]
        return sub

    # ---- process/thread metadata ------------------------------------------------
    proc_labels: dict[int, str] = {}
    thread_names: dict[tuple[int, int], str] = {}
    for e in select(("",), phase="M"):
        a = e.args
        if a is None:
            continue
        pid = _to_int(e.pid)
        if e.name == "process_labels" and isinstance(a.labels, str):
            proc_labels[pid] = a.labels
        elif e.name == "thread_name" and isinstance(a.name, str):
            thread_names[(pid, _to_int(e.tid))] = a.name.strip()
    check_cancel(cancelled)

    props = top.deviceProperties if isinstance(top.deviceProperties, list) else []
    props = [p for p in props if isinstance(p, dict)]
    vendor = _vendor(top, props)

    # ---- API (host runtime / driver / sync) ---------------------------------------
    api_sub = select(API_CATS)
    api_args = _args_of(api_sub)
    n_api = len(api_sub)
    a_start, a_end, a_ok = _times(api_sub, base)
    a_pid, a_tid = _pid_tid(api_sub)
    a_cols = _args_cols(api_args, ("correlation", "stream", "device", "shared", "size", "bytes")
                        if vendor == "AMD" else ("correlation", "stream", "device"))
    a_dom_codes, a_dom = _codes([e.cat for e in api_sub])
    a_name_list = [e.name for e in api_sub]
    a_is_sync = np.zeros(n_api, bool)
    if "cuda_sync" in a_dom:
        a_is_sync = a_dom_codes == a_dom.index("cuda_sync")
    a_corr = a_cols["correlation"]
    a_stream = a_cols["stream"]
    a_stream = np.where(a_stream == 0xFFFFFFFF, _NULL, a_stream)
    check_cancel(cancelled)

    # ---- GPU kernels / copies -----------------------------------------------------
    k_sub = select(("kernel",))
    k_args = _args_of(k_sub)
    c_sub = select(("gpu_memcpy", "gpu_memset"))
    c_args = _args_of(c_sub)
    ga_sub = select(GPU_MARKER_CATS)
    progress(0.7)
    check_cancel(cancelled)

    k_start, k_end, k_ok = _times(k_sub, base)
    k_pid, k_tid = _pid_tid(k_sub)
    kc = _args_cols(k_args, ("correlation", "device", "stream", "registers", "shared"))
    k_dev_raw = np.where(kc["device"] != _NULL, kc["device"], k_pid)
    k_stream = np.where(kc["stream"] != _NULL, kc["stream"], k_tid)
    k_corr = kc["correlation"]

    c_start, c_end, c_ok = _times(c_sub, base)
    c_pid, c_tid = _pid_tid(c_sub)
    cc = _args_cols(c_args, ("correlation", "device", "stream", "bytes"))
    c_dev_raw = np.where(cc["device"] != _NULL, cc["device"], c_pid)
    c_stream = np.where(cc["stream"] != _NULL, cc["stream"], c_tid)
    c_corr = cc["correlation"]

    ga_start, ga_end, ga_ok = _times(ga_sub, base)
    ga_pid, ga_tid = _pid_tid(ga_sub)

    sync_dev_raw = np.where(a_is_sync, a_cols["device"], _NULL)

    # ---- flows: correlation when args lack it --------------------------------------
    if (k_corr == _NULL).any() or (c_corr == _NULL).any() or (a_corr[~a_is_sync] == _NULL).any():
        _corr_from_flows(select(("ac2g",), phase=None), base,
                         (k_sub, k_start, k_pid, k_tid, k_corr),
                         (c_sub, c_start, c_pid, c_tid, c_corr),
                         (api_sub, a_start, a_pid, a_tid, a_corr))
        provenance["correlation_id"] = ("args.correlation; where absent, the id of the ac2g "
                                        "flow (ph s at the runtime call, ph f at the GPU event)")
    else:
        provenance["correlation_id"] = "args.correlation"

    # ---- devices -------------------------------------------------------------------
    used = np.unique(np.concatenate([
        k_dev_raw[k_dev_raw != _NULL], c_dev_raw[c_dev_raw != _NULL],
        ga_pid[ga_pid != _NULL], sync_dev_raw[sync_dev_raw != _NULL]]).astype(np.int64))
    used = used[(used >= 0) & (used < 32768)]
    dev_map, devices = _devices(top, props, used, vendor, provenance, warnings)

    def map_dev(raw: np.ndarray) -> np.ndarray:
        out = np.full(len(raw), _NULL, dtype=np.int64)
        for r, d in dev_map.items():
            out[raw == r] = d
        return out

    k_dev = map_dev(k_dev_raw)
    c_dev = map_dev(c_dev_raw)
    ga_dev = map_dev(ga_pid)
    a_dev = map_dev(sync_dev_raw)

    # ---- linking -------------------------------------------------------------------
    launch_rows = np.flatnonzero(~a_is_sync & (a_corr != _NULL))
    lr_corr = a_corr[launch_rows]

    def link(corr: np.ndarray) -> np.ndarray:
        out = np.full(len(corr), -1, dtype=np.int64)
        has = corr != _NULL
        if has.any() and len(launch_rows):
            li = link_by_correlation(corr[has], None, lr_corr, None)
            out[has] = np.where(li >= 0, launch_rows[np.maximum(li, 0)], -1)
        return out

    k_api = link(k_corr)
    c_api = link(c_corr)
    n_unlinked = int((k_api < 0).sum())
    if len(k_sub) and n_api and n_unlinked:
        warnings.append(f"{path}: {n_unlinked:,} of {len(k_sub):,} kernels have no runtime "
                        "call with the same correlation id (the call was outside the "
                        "profiling window or not recorded)")
    check_cancel(cancelled)

    # ---- kernels ---------------------------------------------------------------------
    grid = _xyz_fast(k_args, "grid")
    block = _xyz_fast(k_args, "block")
    linked = k_api >= 0
    li = np.maximum(k_api, 0)
    api_name_codes, api_name_cats = _codes(a_name_list)
    if n_api:
        a_grid = _xyz_fast(api_args, "grid")
        a_block = _xyz_fast(api_args, "block")
        fill = linked & (grid[:, 0] == _NULL)
        if fill.any():
            grid[fill] = a_grid[li[fill]]
            block[fill] = np.where(block[fill] == _NULL, a_block[li[fill]], block[fill])
            provenance["grid_x"] = "kernel args.grid, else the launching call's args.grid"
    if vendor == "AMD":
        gs_codes = [i for i, nm in enumerate(api_name_cats) if nm in _AMD_GLOBAL_SIZE_LAUNCHES]
        if n_api:
            is_global = linked & np.isin(api_name_codes[li], gs_codes)
        else:
            is_global = np.zeros(len(k_sub), bool)
        blocks_known = linked & ~is_global
        gx = np.where(is_global[:, None], grid,
                      np.where(blocks_known[:, None], grid * block, _NULL))
        gx = np.where((grid == _NULL) | (block == _NULL), _NULL, gx)
        provenance["grid_x"] = (
            "Kineto args.grid x args.block (grid counted workgroups) for hipLaunchKernel/"
            "hipModuleLaunchKernel launches; as printed for hipExtModuleLaunchKernel/"
            "hipHccModuleLaunchKernel, whose grid is already the global size in work-items; "
            "null for kernels without a linked launch call (unit unknown)")
    else:
        gx = np.where((grid == _NULL) | (block == _NULL), _NULL, grid * block)
        provenance["grid_x"] = ("Kineto args.grid (blocks) x args.block (threads per block): "
                                "grid_* are work-items (threads), as everywhere in hipscope")
    provenance["block_x"] = "Kineto args.block (threads per block)"

    k_cols: dict[str, Any] = {
        "name": _names([e.name for e in k_sub]),
        "device": k_dev,
        "start": k_start,
        "end": k_end,
        "stream": _opt(k_stream, -(1 << 31), (1 << 31) - 1),
        "correlation_id": _opt(k_corr, -(1 << 63) + 1, (1 << 63) - 1),
        "api_index": _opt(np.where(linked, k_api, _NULL), 0, (1 << 31) - 1),
        "pid": _opt(np.where(linked, a_pid[li] if n_api else _NULL, _NULL), 0, (1 << 31) - 1),
        "tid": _opt(np.where(linked, a_tid[li] if n_api else _NULL, _NULL), 0, (1 << 62)),
        "grid_x": _opt(gx[:, 0], 0, (1 << 31) - 1),
        "grid_y": _opt(gx[:, 1], 0, (1 << 31) - 1),
        "grid_z": _opt(gx[:, 2], 0, (1 << 31) - 1),
        "block_x": _opt(block[:, 0], 0, 32767),
        "block_y": _opt(block[:, 1], 0, 32767),
        "block_z": _opt(block[:, 2], 0, 32767),
        "registers": _opt(kc["registers"], 0, 32767),
        "lds_bytes": _opt(kc["shared"], 0, (1 << 31) - 1),
    }
    if kc["shared"].size and (kc["shared"] != _NULL).any():
        provenance["lds_bytes"] = ("NVIDIA Kineto args['shared memory'] = static + dynamic "
                                   "shared memory per block")
    if kc["registers"].size and (kc["registers"] != _NULL).any():
        provenance["registers"] = "Kineto args['registers per thread']"
    if vendor == "AMD" and n_api:
        dyn = np.where(linked, a_cols["shared"][li], _NULL)
        k_cols["dyn_lds_bytes"] = _opt(dyn, 0, (1 << 31) - 1)
        provenance["dyn_lds_bytes"] = ("the launching HIP call's args['shared memory'] "
                                       "(dynamic LDS requested at launch)")
    overflow = ((gx != _NULL) & (gx > (1 << 31) - 1)).any(axis=1)
    if overflow.any():
        warnings.append(f"{path}: {int(overflow.sum()):,} kernels have a grid over 2^31 "
                        "work-items in one dimension; stored as null")
    keep = k_ok & (k_dev != _NULL)
    n_bad = int((~keep).sum())
    if n_bad:
        dropped["kernels without ts or device"] = n_bad
        warnings.append(f"{path}: {n_bad:,} kernel events without a timestamp or device "
                        "were skipped")
    kernels = _filtered_table("kernels", k_cols, keep, len(k_sub))

    # ---- copies ----------------------------------------------------------------------
    c_linked = c_api >= 0
    cli = np.maximum(c_api, 0)
    directions = []
    for e, a in zip(c_sub, c_args):
        if e.cat == "gpu_memset":
            directions.append("memset")
            continue
        m = _COPY_RE.search(e.name)
        d = m.group(1) if m else None
        if d is None and isinstance(a.kind, str) and a.kind in ("HtoD", "DtoH", "DtoD",
                                                                "HtoH", "PtoP"):
            d = a.kind
        directions.append(d if d in ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP") else "other")
    if n_api and len(c_sub):
        # AMD: the copy's bytes may only be on the runtime call (args.size)
        a_size = a_cols["size"]
        a_bytes = a_cols["bytes"]
        c_bytes = np.where(cc["bytes"] != _NULL, cc["bytes"],
                           np.where(c_linked, np.where(a_bytes[cli] != _NULL, a_bytes[cli],
                                                       a_size[cli]), _NULL))
        if ((cc["bytes"] == _NULL) & (c_bytes != _NULL)).any():
            provenance["bytes"] = ("GPU event args.bytes, else the runtime call's "
                                   "args.size/args.bytes")
    else:
        c_bytes = cc["bytes"]
    c_cols: dict[str, Any] = {
        "direction": _names(directions),
        "start": c_start,
        "end": c_end,
        "name": _names([e.name for e in c_sub]),
        "bytes": _opt(c_bytes, 0, (1 << 62)),
        "device": _opt(c_dev, 0, 32767),
        "stream": _opt(c_stream, -(1 << 31), (1 << 31) - 1),
        "correlation_id": _opt(c_corr, -(1 << 63) + 1, (1 << 63) - 1),
        "api_index": _opt(np.where(c_linked, c_api, _NULL), 0, (1 << 31) - 1),
        "pid": _opt(np.where(c_linked, a_pid[cli] if n_api else _NULL, _NULL), 0, (1 << 31) - 1),
        "tid": _opt(np.where(c_linked, a_tid[cli] if n_api else _NULL, _NULL), 0, (1 << 62)),
    }
    copies = _filtered_table("copies", c_cols, c_ok, len(c_sub))

    # ---- api ---------------------------------------------------------------------------
    # cuda_sync events sit on the GPU row (pid = device, tid = stream): no OS pid/tid
    a_cols_t: dict[str, Any] = {
        "name": categorical(api_name_codes, api_name_cats),
        "domain": categorical(a_dom_codes, a_dom),
        "start": a_start,
        "end": a_end,
        "pid": _opt(np.where(a_is_sync, _NULL, a_pid), 0, (1 << 31) - 1),
        "tid": _opt(np.where(a_is_sync, _NULL, a_tid), 0, (1 << 62)),
        "correlation_id": _opt(a_corr, -(1 << 63) + 1, (1 << 63) - 1),
        "stream": _opt(a_stream, 0, (1 << 31) - 1),
        "device": _opt(a_dev, 0, 32767),
    }
    api = build_table("api", a_cols_t, n=n_api)
    if not a_ok.all():
        # calls without ts cannot be placed in time: drop them, renumber the links
        n_bad = int((~a_ok).sum())
        warnings.append(f"{path}: {n_bad:,} runtime calls without a timestamp were skipped")
        dropped["api calls without ts"] = n_bad
        api, kernels, copies = _drop_api_rows(api, a_ok, kernels, copies)
    provenance["api.stream"] = ("cuda_sync args.stream; HIP calls print the stream as a hex "
                                "handle which is kept only when it fits (the null stream 0x0)")
    progress(0.8)
    check_cancel(cancelled)

    # ---- markers -------------------------------------------------------------------------
    h_sub = select(HOST_MARKER_CATS)
    h_start, h_end, h_ok = _times(h_sub, base)
    h_pid, h_tid = _pid_tid(h_sub)
    ga_stream = ga_tid
    m_name = [e.name for e in h_sub] + [e.name for e in ga_sub]
    m_dom = [e.cat for e in h_sub] + [e.cat for e in ga_sub]
    nh, ng = len(h_sub), len(ga_sub)
    start = np.concatenate([h_start, ga_start])
    end = np.concatenate([h_end, ga_end])
    ok = np.concatenate([h_ok, ga_ok])
    # one group per host (pid, tid) and per GPU (device, stream)
    gkey_pid = np.concatenate([h_pid, ga_dev])
    gkey_tid = np.concatenate([h_tid, ga_stream])
    gkind = np.concatenate([np.zeros(nh, np.int64), np.ones(ng, np.int64)])
    group = _group_ids(gkind, gkey_pid, gkey_tid)
    depth = _depth(group[ok], start[ok], end[ok])
    full_depth = np.zeros(nh + ng, dtype=np.int16)
    full_depth[ok] = depth
    mk_cols: dict[str, Any] = {
        "name": _names(m_name),
        "domain": _names(m_dom),
        "start": start,
        "end": end,
        "depth": full_depth,
        "pid": _opt(np.concatenate([h_pid, np.full(ng, _NULL, np.int64)]), -(1 << 31),
                    (1 << 31) - 1),
        "tid": _opt(np.concatenate([h_tid, np.full(ng, _NULL, np.int64)]), -(1 << 62),
                    (1 << 62)),
        "device": _opt(np.concatenate([np.full(nh, _NULL, np.int64), ga_dev]), 0, 32767),
        "stream": _opt(np.concatenate([np.full(nh, _NULL, np.int64), ga_stream]),
                       -(1 << 31), (1 << 31) - 1),
    }
    markers = _filtered_table("markers", mk_cols, ok, nh + ng)
    provenance["markers.depth"] = ("nesting computed from the intervals per host (pid, tid) "
                                   "and per GPU (device, stream)")
    progress(0.9)

    # ---- streams -------------------------------------------------------------------------
    streams = _streams(np.concatenate([k_dev, c_dev]), np.concatenate([k_stream, c_stream]),
                       np.concatenate([k_dev_raw, c_dev_raw]), thread_names)

    # ---- meta ------------------------------------------------------------------------------
    meta = _meta(path, top, base, vendor, a_pid[~a_is_sync], proc_labels, warnings, dropped,
                 provenance, n)
    progress(1.0)
    return Trace(kernels=kernels, api=api, copies=copies, markers=markers, devices=devices,
                 streams=streams, meta=meta)


def _group_ids(*cols: np.ndarray) -> np.ndarray:
    """An int64 key per row, equal for equal rows of the given int64 columns (dense
    ids only when the mixed-radix key would not fit in 62 bits)."""
    n = len(cols[0])
    if n == 0:
        return np.zeros(0, np.int64)
    key = np.zeros(n, np.int64)
    span_total = 1
    for c in cols:
        lo, hi = int(c.min()), int(c.max())
        span = hi - lo + 1
        span_total *= span
        if span_total >= (1 << 62):
            break
        key = key * span + (c - lo)
    else:
        return key
    group = np.zeros(n, np.int64)
    for c in cols:
        u, inv = np.unique(c, return_inverse=True)
        _g, group = np.unique(group * len(u) + inv.reshape(-1), return_inverse=True)
        group = group.reshape(-1).astype(np.int64)
    return group


def _list_table(name: str, cols: dict[str, list]):
    """A small table from Python lists (typed here: build_table would import pandas)."""
    import pyarrow as pa

    from ..model.schema import SPECS

    spec = SPECS[name]
    n = len(next(iter(cols.values()))) if cols else 0
    arrays = {}
    for c, vals in cols.items():
        t = spec.by_name[c].type
        arrays[c] = pa.array(vals, type=pa.string()) if pa.types.is_dictionary(t) else (
            pa.array(vals, type=t))
    return build_table(name, arrays, n=n)


def _filtered_table(name: str, cols: dict[str, Any], keep: np.ndarray, n: int):
    if n == 0 or keep.all():
        return build_table(name, cols, n=n)
    t = build_table(name, cols, n=n)
    return t.take(np.flatnonzero(keep))


def _drop_api_rows(api, ok: np.ndarray, kernels, copies):
    """Remove API rows without a timestamp and renumber api_index links."""
    import pyarrow as pa
    import pyarrow.compute as pc

    new_index = np.cumsum(ok) - 1
    new_index = np.where(ok, new_index, -1)
    api = api.take(np.flatnonzero(ok))
    out = [api]
    for t in (kernels, copies):
        if "api_index" in t.data.column_names:
            col = t.column("api_index")
            vals = pc.fill_null(col, 0).to_numpy(zero_copy_only=False)
            nv = new_index[vals]
            mask = (~col.is_valid().to_numpy(zero_copy_only=False)) | (nv < 0)
            arr = pa.array(np.where(mask, 0, nv).astype(np.int32), mask=mask)
            data = t.data.set_column(t.data.column_names.index("api_index"), "api_index", arr)
            from ..model.table import Table

            t = Table(t.spec, data)
        out.append(t)
    return out


def _corr_from_flows(flows: list, base: int, *groups) -> None:
    """Fill missing correlation ids (in place) from ac2g flows: ``s`` at the runtime
    call and ``f``/``bp:e`` at the GPU event share an id; both sit at their event's
    (pid, tid, ts)."""
    if not flows:
        return
    f_start, _e, f_ok = _times(flows, base)
    by_key: dict[tuple[int, int, int], int] = {}
    for e, t, ok in zip(flows, f_start.tolist(), f_ok.tolist()):
        if not ok:
            continue
        fid = _to_int(e.id)
        if fid == _NULL:
            continue
        by_key[(_to_int(e.pid), _to_int(e.tid), t)] = fid
    for sub, start, pid, tid, corr in groups:
        miss = np.flatnonzero(corr == _NULL)
        for i in miss.tolist():
            fid = by_key.get((int(pid[i]), int(tid[i]), int(start[i])))
            if fid is not None:
                corr[i] = fid


def _vendor(top: _Top, props: list[dict]) -> str | None:
    if top.hip_runtime_version is not None or top.roctracer_version is not None \
            or top.hip_driver_version is not None:
        return "AMD"
    if top.cuda_runtime_version is not None or top.cupti_version is not None \
            or top.cuda_driver_version is not None:
        return "NVIDIA"
    for p in props:
        name = str(p.get("name", ""))
        if p.get("warpSize") == 64 or any(w in name for w in ("AMD", "Instinct", "Radeon", "gfx")):
            return "AMD"
        if "NVIDIA" in name or p.get("warpSize") == 32:
            return "NVIDIA"
    return None


def _devices(top: _Top, props: list[dict], used: np.ndarray, vendor: str | None,
             provenance: dict[str, str], warnings: list[str]):
    """Map Kineto GPU ids (kernel args.device / GPU pid) to device indices."""
    prop_ids = []
    for i, p in enumerate(props):
        pid = p.get("id", i)
        prop_ids.append(pid if isinstance(pid, int) and not isinstance(pid, bool) else i)
    used_l = [int(u) for u in used.tolist()]
    dev_map: dict[int, int] = {u: u for u in used_l}
    raw_of: dict[int, str] = {}
    ids_sorted = sorted(prop_ids)
    mismatch = bool(used_l) and bool(prop_ids) and (
        any(u not in prop_ids for u in used_l)
        or (vendor == "AMD" and min(used_l) > min(ids_sorted)))
    if mismatch and len(used_l) <= len(ids_sorted):
        dev_map = {u: ids_sorted[k] for k, u in enumerate(used_l)}
        provenance["device"] = (
            "Kineto GPU ids (kernel args.device / GPU pid) "
            f"{used_l} do not match deviceProperties ids {ids_sorted} (the roctracer "
            "backend numbers HSA agents counting CPU agents first): mapped in sorted order "
            f"onto deviceProperties ({', '.join(f'{u}->{d}' for u, d in dev_map.items())}); "
            "the Kineto id is kept in devices.raw_id")
        raw_of = {d: str(u) for u, d in dev_map.items()}
    else:
        provenance["device"] = "Kineto args.device (GPU pid when absent) = deviceProperties id"
        raw_of = {u: str(u) for u in used_l}
        if used_l and not prop_ids:
            warnings.append("the trace has no deviceProperties: devices are named by id only")
    rows = []
    known = set()
    for p, did in zip(props, prop_ids):
        if did in known or not (0 <= did < 32768):
            continue
        known.add(did)
        name = str(p.get("name") or f"GPU {did}")
        major, minor = p.get("computeMajor"), p.get("computeMinor")
        dvendor = vendor
        if dvendor is None:
            dvendor = "AMD" if p.get("warpSize") == 64 else ("NVIDIA" if "NVIDIA" in name else None)
        arch = None
        if dvendor == "NVIDIA" and isinstance(major, int) and isinstance(minor, int):
            arch = f"sm_{major}{minor}"
        elif dvendor == "AMD":
            for key, gfx in _AMD_ARCH:
                if key in name:
                    arch = gfx
                    break
            m = re.search(r"gfx[0-9a-f]+", name)
            if m:
                arch = m.group()
        sms, mem = p.get("numSms"), p.get("totalGlobalMem")
        rows.append({"index": did, "name": name, "vendor": dvendor, "arch": arch,
                     "compute_units": sms if isinstance(sms, int) and 0 < sms < 1 << 31 else None,
                     "raw_id": raw_of.get(did, None if mismatch else str(did)),
                     "memory_bytes": mem if isinstance(mem, int) and 0 <= mem < 1 << 62 else None})
    for u, d in dev_map.items():
        if d not in known and 0 <= d < 32768:
            known.add(d)
            rows.append({"index": d, "name": f"GPU {d}", "vendor": vendor, "arch": None,
                         "compute_units": None, "raw_id": str(u), "memory_bytes": None})
    if vendor == "AMD":
        provenance["devices.arch"] = "from the product name (deviceProperties has no gfx id)"
    rows.sort(key=lambda r: r["index"])
    cols = {c: [r[c] for r in rows] for c in
            ("index", "name", "vendor", "arch", "compute_units", "raw_id", "memory_bytes")}
    return dev_map, _list_table("devices", cols)


def _streams(dev: np.ndarray, stream: np.ndarray, raw_dev: np.ndarray,
             thread_names: dict[tuple[int, int], str]):
    ok = (dev != _NULL) & (stream != _NULL) & (np.abs(stream) < (1 << 31))
    if not ok.any():
        return build_table("streams", {}, n=0)
    dev, stream, raw_dev = dev[ok], stream[ok], raw_dev[ok]
    _g, first = np.unique(_group_ids(dev, stream, raw_dev), return_index=True)
    pairs = sorted(zip(dev[first].tolist(), stream[first].tolist(), raw_dev[first].tolist()))
    cols: dict[str, list] = {"stream": [], "device": [], "raw_id": [], "name": []}
    for d, s, r in pairs:
        cols["stream"].append(s)
        cols["device"].append(d)
        cols["raw_id"].append(str(s))
        cols["name"].append(thread_names.get((r, s)) or f"stream {s}")
    return _list_table("streams", cols)


def _meta(path: Path, top: _Top, base: int, vendor: str | None, host_pids: np.ndarray,
          proc_labels: dict[int, str], warnings: list[str], dropped: dict[str, int],
          provenance: dict[str, str], n_events: int) -> dict[str, Any]:
    def scalar(v: Any) -> Any:
        return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)

    meta: dict[str, Any] = {
        "format": "kineto",
        "sources": [str(path)],
        "clock": "unix epoch (Kineto)",
        "tool": "PyTorch profiler (Kineto)",
        "schemaVersion": scalar(top.schemaVersion),
        "vendor": vendor,
        "events": n_events,
    }
    if base:
        meta["baseTimeNanoseconds"] = base
        provenance["start"] = "baseTimeNanoseconds + ts (µs, relative) x 1000"
    else:
        provenance["start"] = "ts (absolute epoch µs) x 1000"
    provenance.setdefault("end", "start + dur x 1000")
    for key in ("cupti_version", "cuda_runtime_version", "cuda_driver_version",
                "roctracer_version", "hip_runtime_version", "hip_driver_version",
                "traceName", "trace_id", "displayTimeUnit"):
        v = getattr(top, key)
        if v is not None:
            meta[key] = scalar(v)
    if _human_cuda(top.cuda_runtime_version):
        meta["cuda_version"] = _human_cuda(top.cuda_runtime_version)
    if _human_cuda(top.cuda_driver_version):
        meta["driver_version"] = _human_cuda(top.cuda_driver_version)
    if _human_hip(top.hip_runtime_version):
        meta["hip_version"] = _human_hip(top.hip_runtime_version)
    if _human_hip(top.hip_driver_version):
        meta.setdefault("driver_version", _human_hip(top.hip_driver_version))
    di = top.distributedInfo
    if isinstance(di, dict):
        meta["distributedInfo"] = msgspec.json.decode(msgspec.json.encode(di))
        for k in ("rank", "world_size", "backend"):
            if k in di:
                meta[k] = scalar(di[k])
    pids = sorted({int(p) for p in np.unique(host_pids).tolist() if p != _NULL and p >= 0}
                  | {p for p, lab in proc_labels.items() if lab == "CPU" and p >= 0})
    meta["pids"] = pids
    meta["provenance"] = provenance
    meta["warnings"] = warnings
    if dropped:
        meta["dropped"] = dropped
    return meta


__all__ = ["KinetoReader"]
