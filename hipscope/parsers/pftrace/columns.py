"""Columns of many slices at once for pftrace/tables.py: integer annotations (read by
``_pftscan.ann_ints`` when the extension is built), pid/tid, times, API domains."""

from __future__ import annotations

from typing import Any

from .._intervals import int64_sat as _i64
from .proto import ann_as_int, api_domain

_pftscan: Any
try:
    from .. import _pftscan  # type: ignore[attr-defined,unused-ignore]
except ImportError:  # pragma: no cover - the extension is optional
    _pftscan = None

_ABSENT = object()  # "pid" not annotated (the track's pid applies)
_PIECE = 1 << 16


def ann_ints(anns: list[dict], keys: tuple) -> dict[str, list]:
    """``ann_as_int`` of the annotations ``keys`` of every slice (None where absent; "pid"
    _ABSENT). Each dict is read once for all keys, a piece of slices at a time."""
    defaults = [_ABSENT if k == "pid" else None for k in keys]
    if _pftscan is not None:
        cols, exact = _pftscan.ann_ints(anns, tuple(keys), tuple(defaults))
        return {k: col if ok else [v if v is None or v is _ABSENT or type(v) is int else
                                   ann_as_int(v) for v in col]
                for k, col, ok in zip(keys, cols, exact)}
    out: dict[str, list] = {k: [] for k in keys}
    for p in range(0, len(anns), _PIECE):
        rows = [list(map(a.get, keys, defaults)) for a in anns[p:p + _PIECE]]
        for k, col in zip(keys, zip(*rows)):
            out[k] += [v if v is None or v is _ABSENT or type(v) is int else ann_as_int(v)
                       for v in col]
    return out


def i64_list(vals: list[int]) -> list[int]:
    """Times saturated into int64 (the list itself when every one fits)."""
    if not vals or (min(vals) >= -(1 << 63) and max(vals) < (1 << 63)):
        return vals
    return [_i64(v) for v in vals]


def api_domains(api: list) -> list[str]:
    """The domain of each API slice: an ``api:<domain>`` category after the first, else
    from the first category and the name; once per distinct (categories, name)."""
    memo: dict[tuple, str] = {}
    out = []
    for s in api:
        key = (s[4], s[3])
        d = memo.get(key)
        if d is None:
            d = next((c[4:] for c in s[4][1:] if c.startswith("api:")), None)
            d = memo[key] = d if d is not None else api_domain(s[4][0], s[3])
        out.append(d)
    return out


def pid_tid(ints: dict[str, list], tis: list[dict]) -> tuple[list, list]:
    """pid and tid columns: the annotations, else the track's."""
    pids = [ti.get("pid") if p is _ABSENT else p for p, ti in zip(ints["pid"], tis)]
    tids = [t if t is not None else ti.get("tid") for t, ti in zip(ints["tid"], tis)]
    return pids, tids
