"""Number formatting shared by the tables and the details panel (Qt-free helpers).

Times are int64 ns; they are shown in adaptive units (ns, µs, ms, s) so that a
column of durations stays readable from 800 ns to 12 s.
"""

from __future__ import annotations

import math

_TIME_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"))


def _is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt_duration(ns, digits: int = 3) -> str:
    """A duration in adaptive units: '850 ns', '12.3 µs', '4.56 ms', '1.23 s'."""
    if _is_missing(ns):
        return ""
    ns = float(ns)
    a = abs(ns)
    for scale, unit in _TIME_UNITS:
        if a >= scale:
            v = ns / scale
            # keep ~`digits` significant digits: 12.3, 123, 1.23
            dec = max(0, digits - 1 - int(math.floor(math.log10(abs(v)))))
            return f"{v:.{dec}f} {unit}"
    return f"{ns:.0f} ns"


def fmt_time(ns, span_ns: float | None = None) -> str:
    """A time relative to the trace start. The unit follows ``span_ns`` (the trace's
    length) when given, so a column of starts shares one unit and sorts by eye."""
    if _is_missing(ns):
        return ""
    ns = float(ns)
    ref = abs(span_ns) if span_ns else abs(ns)
    for scale, unit in _TIME_UNITS:
        if ref >= scale:
            return f"{ns / scale:,.6f} {unit}" if unit == "s" else f"{ns / scale:,.3f} {unit}"
    return f"{ns:,.0f} ns"


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
