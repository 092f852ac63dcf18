"""The one duration formatter (hipscope.model.units) and the texts that use it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hipscope.analysis.report import format_text
from hipscope.model.units import fmt_duration, fmt_time

ROOT = Path(__file__).resolve().parents[2] / "hipscope"


@pytest.mark.parametrize("ns,text", [
    (0, "0 ns"), (850, "850 ns"), (999.6, "1.00 µs"), (1_000, "1.00 µs"),
    (12_345, "12.3 µs"), (123_456, "123 µs"), (999_999, "1.00 ms"), (4_560_000, "4.56 ms"),
    (44_603_100_000, "44.6 s"), (25_000_000_000, "25.0 s"), (-1_500, "-1.50 µs"),
    (3_599 * 10**9, "3599 s"), (3_600 * 10**9, "1.00 h"), (9.99999 * 86_400e9, "10.0 days"),
    (None, ""), (float("nan"), ""),
])
def test_fmt_duration_picks_the_unit_by_size(ns, text):
    assert fmt_duration(ns) == text


def test_no_duration_reads_in_thousands_of_a_unit():
    """'44603.1 ms' must never happen: below a second every value shows < 1000 of its
    unit, seconds run to an hour and hours to a day."""
    for exp in range(0, 13):
        for mant in (1.0, 1.5, 9.99, 9.9996):
            num, unit = fmt_duration(mant * 10**exp).split()
            limit = {"ns": 1000, "µs": 1000, "ms": 1000, "s": 3600, "h": 24}[unit]
            assert abs(float(num)) < limit, (mant * 10**exp, num, unit)


def test_fmt_time_shares_the_span_unit():
    assert fmt_time(1_234_567, 5e9) == "0.001235 s"
    assert fmt_time(1_234_567, 5e6) == "1.235 ms"


def test_report_text_uses_the_formatter():
    rep = {"format": "x", "sources": [], "metadata": {}, "span_ns": 44_603_100_000,
           "kernel_count": 0, "api_call_count": 0, "marker_count": 0, "counter_count": 0,
           "devices": [], "queue_delay_ns": None, "idle_breakdown_ns": None,
           "top_kernels": [], "copies": [], "warnings": []}
    text = format_text(rep)
    assert "Span:     44.6 s" in text and "44603" not in text


def _formats_a_unit(path: Path) -> bool:
    """An f-string that writes a number then ' ms' / ' µs' / ' us' / ' ns': a home-made
    duration formatter."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            for a, b in zip(node.values, node.values[1:]):
                if isinstance(a, ast.FormattedValue) and isinstance(b, ast.Constant) \
                        and str(b.value).split(" ")[1:2] in (["ms"], ["µs"], ["us"], ["ns"]):
                    return True
    return False


def test_no_other_duration_formatter_in_the_package():
    """Durations are written by model/units.py only. The standalone probe script and
    the bundled workloads run where hipscope is not installed."""
    allowed = {"model/units.py", "probe/run.py"}
    offenders = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
                 if str(p.relative_to(ROOT)) not in allowed
                 and not str(p.relative_to(ROOT)).startswith("resources/")
                 and _formats_a_unit(p)]
    assert offenders == []
