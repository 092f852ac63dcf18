"""Duration text for people: the one formatter every view, report and proposal uses.

Times are int64 ns; they are shown in the unit that suits their size (ns, µs, ms, s;
h and days only past an hour, for clocks gone wrong) with about three significant
digits, so "44.6 s", never "44603.1 ms". Qt-free.
"""

from __future__ import annotations

import math

_TIME_UNITS = ((86_400e9, "days"), (3_600e9, "h"), (1e9, "s"), (1e6, "ms"), (1e3, "µs"),
               (1.0, "ns"))
_CLOCK_UNITS = _TIME_UNITS[2:-1]          # relative times: s, ms, µs (then ns)


def _is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt_duration(ns, digits: int = 3) -> str:
    """A duration in the unit its size asks for: '850 ns', '12.3 µs', '4.56 ms', '44.6 s'.

    Rounding that reaches the next unit moves to it (999,999 ns is '1.00 ms'). Below
    1 ns the value is shown in ns; missing values (None, NaN) give ''."""
    if _is_missing(ns):
        return ""
    ns = float(ns)
    if math.isinf(ns):
        return "∞" if ns > 0 else "-∞"
    a = abs(ns)
    for i, (scale, unit) in enumerate(_TIME_UNITS):
        if a >= scale or unit == "ns":
            v = ns / scale
            if unit == "ns" and a < 1:
                return f"{v:.{digits - 1}g} ns" if a else "0 ns"
            dec = 0 if unit == "ns" else max(0, digits - 1 - int(math.floor(math.log10(a / scale))))
            if dec and abs(round(v, dec)) >= 10 ** (digits - dec):     # 9.999 -> 10.0, not 10.00
                dec -= 1
            text = f"{v:.{dec}f}"
            if i > 0 and abs(float(text)) * scale >= _TIME_UNITS[i - 1][0]:   # rounded up into it
                up_scale, up_unit = _TIME_UNITS[i - 1]
                return f"{ns / up_scale:.{digits - 1}f} {up_unit}"
            return f"{text} {unit}"
    return f"{ns:.0f} ns"


def fmt_time(ns, span_ns: float | None = None) -> str:
    """A time relative to the trace start. The unit follows ``span_ns`` (the trace's
    length) when given, so a column of starts shares one unit and sorts by eye."""
    if _is_missing(ns):
        return ""
    ns = float(ns)
    ref = abs(span_ns) if span_ns else abs(ns)
    for scale, unit in _CLOCK_UNITS:
        if ref >= scale:
            return f"{ns / scale:,.6f} {unit}" if unit == "s" else f"{ns / scale:,.3f} {unit}"
    return f"{ns:,.0f} ns"
