"""Issue 16 item 7: evidence figures read as text for people, not raw dicts."""

from __future__ import annotations

from hipscope.views.tuner_parts import fmt_figure


def test_counts_by_name_read_as_a_list():
    assert fmt_figure("by_name", {"cudaStreamSynchronize": 3, "hipDeviceSynchronize": 1200}) \
        == ("by name", "cudaStreamSynchronize × 3, hipDeviceSynchronize × 1,200")


def test_durations_in_a_list_use_the_one_formatter():
    assert fmt_figure("gaps_ns", [265_322_000, 44_603_100_000]) == ("gaps", "265 ms, 44.6 s")
    assert "{" not in fmt_figure("x", {"a": {"b": 1}})[1]
