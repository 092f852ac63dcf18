"""One duration text: a run's length reads the same in `hipscope runs`, the Run and Runs
panels and the report (model.units.fmt_duration), not in three spellings."""

from __future__ import annotations

import pytest

from hipscope.cli.run_cmd import _fmt_duration
from hipscope.views.run_panel import fmt_seconds


@pytest.mark.parametrize("seconds,text", [(0.25, "250 ms"), (12.34, "12.3 s"),
                                          (65.0, "65.0 s"), (7322.0, "2.03 h")])
def test_run_lengths_read_like_every_other_duration(seconds, text):
    assert _fmt_duration(seconds) == fmt_seconds(seconds) == text


def test_unknown_length_is_a_dash():
    assert _fmt_duration(None) == fmt_seconds(None) == "-"
