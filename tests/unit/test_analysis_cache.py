"""The analysis cache (issue 14 "Analyses"): the service's results kept beside the cached
trace, so a reopened trace computes nothing; damaged files are discarded, never served."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from hipscope.analysis import persist
from hipscope.analysis import queue_delay as qd
from hipscope.analysis.context import analyses_of
from hipscope.analysis.report import build_report
from hipscope.cli.main import main
from hipscope.parsers import open_trace
from tests.conftest import DATA

LINKED = DATA / "gpu" / "launch_bound.json.gz"
OTHER = DATA / "gpu" / "sync_bound.json.gz"


def _files(trace) -> list[Path]:
    d = Path(os.environ["HIPSCOPE_CACHE_DIR"]) / trace.meta["cache_key"] / "analyses"
    return sorted(p for p in d.iterdir() if not p.name.startswith("."))


def _report(trace) -> str:
    return json.dumps(build_report(trace), sort_keys=True)


def test_reopen_computes_nothing_and_reports_the_same(monkeypatch):
    first = open_trace(LINKED, use_cache=True)
    want = _report(first)
    assert analyses_of(first).computed["queue_delays"] == 1
    calls = []
    real = qd.queue_delays
    monkeypatch.setattr(qd, "queue_delays", lambda tr: calls.append(tr) or real(tr))
    again = open_trace(LINKED, use_cache=True)
    assert again is not first and again.meta.get("cached")
    assert _report(again) == want
    assert analyses_of(again).computed == {} and calls == []


def test_the_cli_report_from_the_cache_is_the_same(capsys):
    outs = []
    for _ in range(2):
        assert main(["report", "--json", str(LINKED)]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0] == outs[1]
    assert outs[0]["queue_delay_ns"]["from_api_start"]["count"] > 0


@pytest.mark.parametrize("damage", ["flip", "cut", "empty"])
def test_a_damaged_result_is_removed_and_computed_again(caplog, damage):
    want = _report(open_trace(LINKED, use_cache=True))
    tr = open_trace(LINKED, use_cache=True)
    victim = next(p for p in _files(tr) if p.name.startswith("queue_delay_summary-"))
    raw = bytearray(victim.read_bytes())
    if damage == "flip":
        raw[-20] ^= 0xFF
    victim.write_bytes(bytes(raw[: len(raw) // 2] if damage == "cut" else
                             b"" if damage == "empty" else raw))
    with caplog.at_level(logging.WARNING, logger="hipscope.analysis.persist"):
        assert _report(tr) == want
    assert analyses_of(tr).computed == {"queue_delay_summary": 1}
    assert "damaged" in caplog.text
    third = open_trace(LINKED, use_cache=True)        # stored again, whole: served
    assert _report(third) == want and analyses_of(third).computed == {}


def test_a_result_of_another_trace_is_not_served():
    a = open_trace(LINKED, use_cache=True)
    b = open_trace(OTHER, use_cache=True)
    want_b = _report(b)
    _report(a)
    fa = {p.name.split("-")[0]: p for p in _files(a)}
    for p in _files(b):          # b's files replaced by a's, under b's names
        p.write_bytes(fa[p.name.split("-")[0]].read_bytes())
    again = open_trace(OTHER, use_cache=True)
    assert _report(again) == want_b
    assert analyses_of(again).computed["queue_delays"] == 1


def test_uncached_and_merged_traces_keep_no_analyses(tmp_path):
    assert "cache_key" not in open_trace(LINKED, use_cache=False).meta
    merged = open_trace([LINKED, OTHER], use_cache=True)
    assert "cache_key" not in merged.meta
    assert analyses_of(merged).store is None


def test_codec_round_trips_every_stored_result():
    tr = open_trace(LINKED, use_cache=False)
    svc = analyses_of(tr)
    build_report(tr)
    svc.steps()
    for key, value in list(svc._values.items()):
        try:
            payload = persist.to_bytes(value)
        except persist.NotStorable:
            continue
        back = persist.from_bytes(payload)
        assert persist.to_bytes(back) == payload, key


def test_a_cache_that_cannot_be_written_never_fails_the_report(caplog):
    tr = open_trace(LINKED, use_cache=True)
    folder = Path(os.environ["HIPSCOPE_CACHE_DIR"]) / tr.meta["cache_key"] / "analyses"
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("a file where the folder should be")
    with caplog.at_level(logging.WARNING, logger="hipscope.analysis.persist"):
        rep = build_report(tr)
    assert rep["queue_delay_ns"]["from_api_start"]["count"] > 0
    assert "cannot store" in caplog.text


def test_codec_keeps_every_array_shape_and_aliases_once():
    import numpy as np

    a = np.arange(10, dtype=np.int64)
    value = {"a": a, "alias": a, "empty2d": np.zeros((0, 2), np.int64),
             "grid": np.arange(6, dtype=np.float32).reshape(2, 3), "nan": np.array([np.nan]),
             "bools": np.array([True, False, True]), "scalar": np.array(7, np.int16),
             "t": (1, "x", None, [np.uint8(3)])}
    back = persist.from_bytes(persist.to_bytes(value))
    for k in ("a", "alias", "empty2d", "grid", "bools", "scalar"):
        assert back[k].dtype == value[k].dtype and back[k].shape == value[k].shape, k
        assert np.array_equal(back[k], value[k]), k
    assert np.isnan(back["nan"][0]) and back["t"] == (1, "x", None, [3])
    assert back["a"] is back["alias"]                      # stored once
    assert back["a"].flags.writeable                      # copies unless mapped


def test_a_reopened_report_reads_only_the_delay_summary():
    want = _report(open_trace(LINKED, use_cache=True))
    again = open_trace(LINKED, use_cache=True)
    assert _report(again) == want
    svc = analyses_of(again)
    assert svc.loaded["queue_delay_summary"] == 1
    assert "queue_delays" not in svc.loaded and svc.computed == {}   # no per-kernel arrays
