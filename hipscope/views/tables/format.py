"""Number formatting shared by the tables and the details panel (Qt-free helpers).

Times are int64 ns, shown by :mod:`hipscope.model.units` (the one duration
formatter) so that a column of durations stays readable from 800 ns to 12 s.
"""

from __future__ import annotations

import math
from functools import lru_cache

from ...analysis.timeline_model.names import short_name
from ...model.units import fmt_duration, fmt_time

# durations and times: the one formatter (hipscope.model.units), shared with the core
__all__ = ["fmt_duration", "fmt_time", "fmt_bytes", "fmt_int", "fmt_id", "fmt_dims",
           "fmt_percent", "fmt_kernel_name", "parse_duration"]


def _is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt_bytes(n) -> str:
    if _is_missing(n):
        return ""
    n = float(n)
    for scale, unit in ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} B"


def fmt_int(v) -> str:
    if _is_missing(v):
        return ""
    return f"{int(v):,}"


def fmt_id(v) -> str:
    """Ids (pid, tid, correlation) without thousands separators."""
    if _is_missing(v):
        return ""
    return str(int(v))


def fmt_dims(x, y, z) -> str:
    """Grid/block dimensions: '1024×1×1'; '256' when only x is known; '' for none."""
    vals = [x, y, z]
    while vals and _is_missing(vals[-1]):
        vals.pop()                       # trailing unknown dimensions are left out
    return "×".join("?" if _is_missing(v) else str(int(v)) for v in vals)


@lru_cache(maxsize=8192)
def fmt_kernel_name(name: str) -> str:
    """A kernel name as the tables show it: a mangled name reads like the timeline's
    label (``a::b::c``), the mangled text after it (it tells overloads apart)."""
    if name.startswith("_Z"):
        short = short_name(name)
        if short != name:
            return f"{short}  ·  {name}"
    return name


def fmt_percent(f) -> str:
    if _is_missing(f):
        return ""
    return f"{100.0 * float(f):.1f} %"


def parse_duration(text: str) -> int | None:
    """'10us', '1.5 ms', '200' (ns), '' -> None. Raises ValueError on nonsense."""
    t = text.strip().lower().replace("µ", "u").replace(" ", "")
    if not t:
        return None
    for suffix, scale in (("ns", 1), ("us", 1e3), ("ms", 1e6), ("s", 1e9)):
        if t.endswith(suffix):
            return int(round(float(t[: -len(suffix)]) * scale))
    return int(round(float(t)))
