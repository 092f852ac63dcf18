"""Issue 16 item 7: axis labels at deep zoom and over long spans."""

from __future__ import annotations

import re

from hipscope.analysis.timeline_model.ruler import axis_ticks, fmt_offset

S = 1_000_000_000


def test_deep_zoom_shows_a_base_time_and_short_offsets():
    base, ticks = axis_ticks(12_775_040_000, 12_775_160_000, 0, 1600)
    assert base == "12.77504 s"
    labels = [lab for _, lab in ticks]
    assert labels[0] == "+0" and labels[1] == "+10 µs"
    assert all(lab.startswith("+") and len(lab) <= 8 for lab in labels)
    assert not any("12.775" in lab for lab in labels)


def test_short_windows_keep_plain_labels():
    base, ticks = axis_ticks(0, 15 * S, 0, 1600)
    assert base == "" and [lab for _, lab in ticks][:3] == ["0 s", "2 s", "4 s"]


def test_long_spans_read_in_days_hours_minutes():
    _, ticks = axis_ticks(0, 3_500_000 * S, 0, 1600)
    labels = [lab for _, lab in ticks]
    assert "5 d" in labels and not any(re.search(r"\d{5}", lab) for lab in labels)
    _, ticks = axis_ticks(0, 2 * 3600 * S, 0, 1600)
    assert "1 h 00 min" in [lab for _, lab in ticks]


def test_deep_zoom_in_a_long_trace_has_an_hour_minute_base():
    base, ticks = axis_ticks(3725 * S, 3725 * S + 80_000, 0, 1600)
    assert base == "1 h 02 min 05.00000 s" and ticks[1][1] == "+10 µs"


def test_thousands_separators():
    assert fmt_offset(1_250 * 86_400 * S, 100 * 86_400 * S) == "1,250 d"
    assert fmt_offset(1_500_000, 1_000) == "1.500 ms"
