"""The timeline's level-of-detail arrays in the analysis cache (issue 14 "First frame"):
a reopened trace's first frame reads its rows from the disk cache (nothing computed),
they equal the freshly built ones on every real sample, they are read-only views of the
file (a recolouring replaces them, never writes into them) and a changed trace builds
them again."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from hipscope.analysis import lod
from hipscope.analysis.context import analyses_of
from hipscope.analysis.timeline_model.prepare import coloured_model
from hipscope.parsers import TraceFormatError, open_trace
from tests.conftest import DATA, SAMPLES

LINKED = DATA / "gpu" / "launch_bound.json.gz"


def _same(a, b, where="model") -> None:
    """Deep equality of two models (arrays by value, dataclasses field by field)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), where
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), where
    elif dataclasses.is_dataclass(a):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), where
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    else:
        assert a == b, (where, a, b)


def _first_frame(trace, grouping="queue", mode="name"):
    model, scale, _found, _starts = lod.prepare(trace, grouping, mode)
    return model, scale


def _frame_answers(model) -> list:
    """What one frame asks of every track (window, coverage, keys, wide events)."""
    out = []
    for i in model.tracks():
        ev = model.rows[i].events
        for t0, t1 in ((model.t_min, model.t_max),
                       (model.t_min, model.t_min + (model.t_max - model.t_min) // 7 + 1)):
            edges = lod.pixel_edges(t0, t1, 800)
            lo, hi = lod.window(ev, t0, t1)
            cov = lod.coverage(ev, edges)
            out += [(lo, hi), cov, lod.pixel_keys(ev, lo, hi, edges, cov),
                    lod.wide_events(ev, lo, hi, (t1 - t0) / 800 * 3)]
    return out


def test_a_reopened_trace_reads_its_rows_from_the_cache():
    first = open_trace(LINKED, use_cache=True)
    fresh = _first_frame(first)
    assert analyses_of(first).computed["timeline_frame"] == 1
    again = open_trace(LINKED, use_cache=True)
    assert again.meta.get("cached")
    cached = _first_frame(again)
    svc = analyses_of(again)
    assert svc.computed == {} and svc.loaded["timeline_frame"] == 1
    _same(cached, fresh)
    built = coloured_model(again, "queue", "name")      # built here, no cache
    _same(cached, built)
    for x, y in zip(_frame_answers(cached[0]), _frame_answers(built[0])):
        _same(x, y, "frame")


def test_the_cached_rows_are_read_only_and_recolouring_replaces_them():
    open_trace(LINKED, use_cache=True)
    _first_frame(open_trace(LINKED, use_cache=True))
    tr = open_trace(LINKED, use_cache=True)
    model, _ = _first_frame(tr)
    ev = model.rows[model.tracks()[0]].events
    assert not ev.start.flags.writeable           # a view of the file's memory map
    with pytest.raises(ValueError):
        ev.start[0] = 0
    before = ev.keys.copy()
    scale = lod.color_scale(tr, model, "duration")
    lod.apply_color_keys(model, lod.color_keys(tr, model, scale))
    assert not np.array_equal(ev.keys, before)
    again, _ = _first_frame(open_trace(LINKED, use_cache=True))   # the file is unchanged
    _same(again.rows[model.tracks()[0]].events.keys, before)
    # each call is a model of its own: recolouring one never recolours the next
    assert again is not model


def test_a_changed_trace_builds_its_rows_again(tmp_path):
    src = tmp_path / "run.json.gz"
    shutil.copy(LINKED, src)
    _first_frame(open_trace(src, use_cache=True))
    tr = open_trace(src, use_cache=True)
    _first_frame(tr)
    assert analyses_of(tr).computed == {}
    st = src.stat()
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    changed = open_trace(src, use_cache=True)
    _first_frame(changed)
    assert analyses_of(changed).computed["timeline_frame"] == 1


def test_each_grouping_is_kept_apart_and_other_colourings_are_not_kept():
    open_trace(LINKED, use_cache=True)
    for grouping, mode in (("queue", "name"), ("stream", "name"), ("queue", "duration")):
        _first_frame(open_trace(LINKED, use_cache=True), grouping, mode)
    tr = open_trace(LINKED, use_cache=True)
    for grouping, mode in (("queue", "name"), ("stream", "name"), ("queue", "duration")):
        got = _first_frame(tr, grouping, mode)
        _same(got, coloured_model(tr, grouping, mode), f"{grouping}/{mode}")
    assert analyses_of(tr).computed == {}
    assert analyses_of(tr).loaded == {"timeline_frame": 2}     # by name, both groupings
    folder = Path(os.environ["HIPSCOPE_CACHE_DIR"]) / tr.meta["cache_key"] / "analyses"
    assert len(list(folder.glob("timeline_frame-*"))) == 2      # disk: ~42 bytes an event


def _samples() -> list[Path]:
    return sorted(p for fam in SAMPLES.iterdir() if fam.is_dir()
                  for p in fam.iterdir() if p.is_dir())


@pytest.mark.parametrize("sample", _samples(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_cached_rows_equal_fresh_ones_on_every_real_sample(sample):
    try:
        first = open_trace(sample, use_cache=True)
    except TraceFormatError:
        pytest.skip("not a trace hipscope opens as a folder")
    fresh = _first_frame(first)
    tr = open_trace(sample, use_cache=True)
    if "cache_key" not in tr.meta:
        pytest.skip("not kept in the trace cache")
    cached = _first_frame(tr)
    assert analyses_of(tr).computed == {}
    _same(cached, fresh)
    _same(cached, coloured_model(tr, "queue", "name"))


def test_the_tab_loader_preloads_a_reopened_traces_first_frame_once():
    """The app's loader reads a cached trace's first-frame rows from disk on its own
    thread (app/head_start.py); the timeline's prepare then takes those rows (no second
    read, nothing computed), equal to rows built here; the next call reads its own."""
    from hipscope.app.head_start import default_loader

    open_trace(LINKED, use_cache=True)
    _first_frame(open_trace(LINKED, use_cache=True))   # both the trace and its rows kept
    tr = default_loader([LINKED], lambda f: None, lambda: False)
    svc = analyses_of(tr)
    assert tr.meta.get("cached") and svc.loaded == {"timeline_frame": 1}
    taken = _first_frame(tr)
    assert svc.loaded == {"timeline_frame": 1} and svc.computed == {}
    _same(taken, coloured_model(tr, "queue", "name"))
    again = _first_frame(tr)                   # handed once: a fresh model of its own
    assert svc.loaded == {"timeline_frame": 2} and again[0] is not taken[0]


def test_preload_reads_only_what_is_on_disk():
    from hipscope.app.head_start import default_loader

    tr = default_loader([LINKED], lambda f: None, lambda: False)     # first open: no rows
    svc = analyses_of(tr)
    assert svc.loaded == {} and svc.computed == {}
    assert svc.preload("timeline_frame", "queue", "name") is False   # computes nothing
    assert svc.computed == {}
    analyses_of(open_trace(LINKED, use_cache=True)).queue_delays()     # kept on disk
    r = analyses_of(open_trace(LINKED, use_cache=True))
    assert r.preload("queue_delays") is True         # a result kept in memory: served
    assert r.loaded["queue_delays"] == 1
    r.queue_delays()
    assert r.loaded["queue_delays"] == 1 and r.computed == {}
