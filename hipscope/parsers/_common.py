"""Helpers every reader shares: nesting depth of ranges, row grouping and dense ids,
copy directions, device tables and meta assembly. numpy only, no Qt, no I/O."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..model import build_table
from ..model.intervals import nesting_depth  # noqa: F401 - the readers' name for it

# --------------------------------------------------------------------------- grouping


def group_key(*cols: np.ndarray) -> np.ndarray:
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


def group_rows(*cols: np.ndarray) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Distinct rows of several int64 columns in sorted order: ``(distinct columns,
    each row's group 0..k-1, first row of each group)``."""
    n = len(cols[0])
    order = np.lexsort(cols[::-1])
    sc = [np.asarray(c)[order] for c in cols]
    new = np.ones(n, dtype=bool)
    if n:
        new[1:] = np.any([c[1:] != c[:-1] for c in sc], axis=0)
    gid_sorted = np.cumsum(new) - 1
    inverse = np.empty(n, np.int64)
    inverse[order] = gid_sorted
    return [c[new] for c in sc], inverse, order[new]


def rank_within(first: np.ndarray) -> np.ndarray:
    """0..k-1 within each run of equal values of a sorted column."""
    n = len(first)
    if n == 0:
        return np.zeros(0, np.int64)
    start = np.ones(n, dtype=bool)
    start[1:] = first[1:] != first[:-1]
    run_first = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    return np.arange(n) - run_first


def number_per_device(device: np.ndarray, *raw: np.ndarray,
                      valid: np.ndarray | None = None
                      ) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Small ids 0..k-1 per device for raw handles (queues, streams).

    Distinct ``(device, *raw)`` rows are numbered per device in sorted order. Returns
    each row's small id (-1 where not ``valid``), the distinct key columns and their
    small ids."""
    device = np.asarray(device, np.int64)
    out = np.full(len(device), -1, dtype=np.int64)
    sel = np.arange(len(device)) if valid is None else np.flatnonzero(valid)
    keys = [device[sel], *(np.asarray(r, np.int64)[sel] for r in raw)]
    if not len(sel):
        return out, [k[:0] for k in keys], np.zeros(0, np.int64)
    uniq, inverse, _first = group_rows(*keys)
    small = rank_within(uniq[0])
    out[sel] = small[inverse]
    return out, uniq, small


# --------------------------------------------------------------------------- nesting


# nesting_depth: its one home is hipscope.model.intervals (imported above)


def dense_codes(values: Iterable[Any]) -> np.ndarray:
    """0..k-1 per distinct hashable value, in first-seen order (any Python values)."""
    seen: dict[Any, int] = {}
    return np.fromiter((seen.setdefault(v, len(seen)) for v in values), np.int64)


# --------------------------------------------------------------------------- copies

COPY_DIRECTIONS = ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "memset")
# (keyword in the folded text, direction): the first that matches wins
_DIRECTION_WORDS = (
    (("hosttodevice", "htod"), "HtoD"),
    (("devicetohost", "dtoh"), "DtoH"),
    (("devicetodevice", "dtod"), "DtoD"),
    (("hosttohost", "htoh"), "HtoH"),
    (("peer", "ptop"), "PtoP"),
    (("fill", "memset"), "memset"),
    # CUDA array copies: named, but none of hipscope's directions
    (("htoa", "atoh", "atoa", "atod", "dtoa"), "other"),
)


def copy_direction(text: Any, default: str | None = "other") -> str | None:
    """hipscope's copy direction for any spelling: ``MEMORY_COPY_HOST_TO_DEVICE``,
    ``HOST_TO_DEVICE``, ``CopyHostToDevice``, ``Memcpy HtoD (Pageable -> Device)``,
    ``FillBuffer``... -> HtoD/DtoH/DtoD/HtoH/PtoP/memset; ``default`` when no word of a
    direction is in the text."""
    low = str(text or "").lower().replace("_", "").replace(" ", "").replace("-", "")
    for words, direction in _DIRECTION_WORDS:
        if any(w in low for w in words):
            return direction
    return default


def copy_directions(names: Sequence[Any]) -> list[str]:
    """:func:`copy_direction` of each name (each distinct name is folded once)."""
    memo: dict[Any, str] = {}
    return [memo[n] if n in memo else memo.setdefault(n, copy_direction(n)) for n in names]


# --------------------------------------------------------------------------- tables

DEVICE_COLUMNS = ("index", "name", "vendor", "arch", "compute_units", "raw_id", "host",
                  "memory_bytes")


def rows_to_columns(rows: Sequence[Mapping[str, Any]],
                    columns: Iterable[str]) -> dict[str, list]:
    """Column lists from row dicts (a key a row lacks is None)."""
    return {c: [r.get(c) for r in rows] for c in columns}


def devices_table(rows: Sequence[Mapping[str, Any]], columns: Iterable[str] = DEVICE_COLUMNS):
    """The devices table from one dict per device."""
    return build_table("devices", rows_to_columns(rows, columns), n=len(rows))


# --------------------------------------------------------------------------- meta


def new_meta(fmt: str, sources: Iterable[str], clock: str, **extra: Any) -> dict[str, Any]:
    """The keys every trace's meta starts with (docs/readers.md rule 6)."""
    return {"format": fmt, "sources": [str(s) for s in sources], "clock": clock, **extra}


def finish_meta(meta: dict[str, Any], warnings: list[str] | None = None,
                dropped: Mapping[str, int] | None = None,
                keep_empty_warnings: bool = True) -> dict[str, Any]:
    """Put ``warnings`` and (when any) ``dropped`` into ``meta``; with
    ``keep_empty_warnings=False`` an empty warnings list is left out."""
    if warnings is None:
        warnings = meta.get("warnings")
    if warnings or (keep_empty_warnings and warnings is not None):
        meta["warnings"] = warnings
    else:
        meta.pop("warnings", None)
    if dropped:
        meta["dropped"] = dict(dropped) if not isinstance(dropped, dict) else dropped
    return meta


NO_KERNELS = "the profiler recorded no kernels"


def warn_no_kernels(warnings: list[str], where: object, detail: str = "") -> None:
    """The one rule for an empty but well-formed output (issue 13 item 10): the trace
    loads, with this warning (``detail``: what the input does hold)."""
    from ..model.diagnostics import coded

    warnings.append(coded("trace.no_kernels",
                          f"{where}: {NO_KERNELS}" + (f" ({detail})" if detail else ""), where))


def warn(warnings: list[str], code: str, message: str, where: object = None,
         severity: str = "warning") -> None:
    """Append ``message`` to a reader's warnings with its stable diagnostic ``code``
    (listed in docs/readers.md): the one way a reader warns."""
    from ..model.diagnostics import coded

    warnings.append(coded(code, message, where, severity))


def add_count(counts: dict[str, int], what: str, n: int = 1) -> None:
    """``counts[what] += n`` (for meta['dropped'] / meta['skipped'])."""
    if n:
        counts[what] = counts.get(what, 0) + int(n)


# --------------------------------------------------------------------------- input


def read_input(path, warnings: list[str]) -> bytes:
    """The whole file, un-gzipped (a gzip cut short gives what is whole, with a
    warning appended to ``warnings``); an unreadable file is a TraceFormatError."""
    from .base import TraceFormatError, read_bytes_tolerant

    try:
        data, gz_warning = read_bytes_tolerant(path)
    except OSError as exc:
        raise TraceFormatError(path, None, "a readable file", str(exc)) from None
    if gz_warning:
        warnings.append(gz_warning)
    return data
