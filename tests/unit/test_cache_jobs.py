"""A first open's cache entry written beside the analyses (``parsers/cache_jobs``, issue
14 "first open"), and the report's analyses two at a time (``TraceAnalyses.prefetch``):
the same figures, the same entry, and analyses saved before the entry lands kept or
dropped with it."""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

import pytest

from hipscope.analysis import context, persist
from hipscope.analysis.context import TraceAnalyses, analyses_of
from hipscope.analysis.report import build_report
from hipscope.cli.main import main
from hipscope.model.progress import Cancelled
from hipscope.parsers import cache, cache_jobs, open_trace
from tests.conftest import DATA

LINKED = DATA / "gpu" / "launch_bound.json.gz"


def _entry(key: str) -> Path:
    return Path(os.environ["HIPSCOPE_CACHE_DIR"]) / key


def _analyses(key: str) -> list[str]:
    d = _entry(key) / "analyses"
    return sorted(p.name.split("-")[0] for p in d.iterdir()) if d.is_dir() else []


def test_a_background_store_leaves_the_entry_and_analyses_an_inline_one_does(tmp_path,
                                                                              monkeypatch):
    inline = open_trace(LINKED, use_cache=True)
    want = json.dumps(build_report(inline), sort_keys=True)
    key = inline.meta["cache_key"]
    want_files = _analyses(key)
    want_meta = json.loads((_entry(key) / "meta.json").read_text())
    monkeypatch.setenv("HIPSCOPE_CACHE_DIR", str(tmp_path / "other"))
    with cache_jobs.in_background():
        tr = open_trace(LINKED, use_cache=True)
        got = json.dumps(build_report(tr), sort_keys=True)
    assert got == want
    assert tr.meta["cache_key"] == key
    assert _analyses(key) == want_files and "queue_delay_summary" in want_files
    # the entry's metadata is the trace as read: no cache key written into it
    assert json.loads((_entry(key) / "meta.json").read_text()) == want_meta
    again = open_trace(LINKED, use_cache=True)
    assert again.meta.get("cached")
    assert json.dumps(build_report(again), sort_keys=True) == want
    assert analyses_of(again).computed == {}


def test_results_saved_while_the_entry_is_written_land_after_it(tmp_path):
    tr = open_trace(LINKED)
    key = "0" * 32
    gate = threading.Event()

    def slow_store() -> bool:
        gate.wait()
        return cache.store(key, tr)

    job = cache_jobs.start(key, slow_store)
    svc = TraceAnalyses(tr.with_meta(cache_key=key))
    svc.kernel_stats()                   # saved now: queued behind the store
    assert not _entry(key).exists()
    gate.set()
    assert job.wait()
    assert _analyses(key) == ["kernel_stats"]
    cache_jobs.flush()
    assert cache_jobs.job_of(key) is None


def test_results_of_an_entry_that_could_not_be_stored_are_dropped_quietly(caplog):
    tr = open_trace(LINKED)
    key = "1" * 32
    job = cache_jobs.start(key, lambda: False)        # the store failed (logged by it)
    assert not job.wait()
    with caplog.at_level(logging.WARNING):
        svc = TraceAnalyses(tr.with_meta(cache_key=key))
        svc.kernel_stats()
    assert not _entry(key).exists()
    assert "analysis cache" not in caplog.text
    cache_jobs.forget(key)
    assert cache_jobs.job_of(key) is None


def test_the_cli_report_waits_for_its_store(capsys):
    assert main(["report", "--json", str(LINKED)]) == 0
    first = json.loads(capsys.readouterr().out)
    entries = [p for p in Path(os.environ["HIPSCOPE_CACHE_DIR"]).iterdir()
               if not p.name.startswith(".")]
    assert len(entries) == 1 and (entries[0] / "manifest.json").is_file()
    assert "idle_json" in _analyses(entries[0].name)
    assert main(["report", "--json", str(LINKED)]) == 0
    assert json.loads(capsys.readouterr().out) == first


def test_prefetch_gives_the_values_of_one_by_one(monkeypatch):
    tr = open_trace(LINKED)
    names = ["idle_json", "concurrency", "busy_fraction", "launch_stats", "kernel_stats",
             "queue_delay_summary", "sanity", "graph_gaps"]
    one = TraceAnalyses(tr)
    want = {n: persist.to_bytes(one.get(n)) for n in names}
    monkeypatch.setattr(context, "WORKERS", 2)
    two = TraceAnalyses(tr)
    two.prefetch(names)
    assert {n: persist.to_bytes(two.peek(n)) for n in names} == want
    assert two.computed == one.computed        # shared intermediates computed once


def test_prefetch_raises_what_a_call_would(monkeypatch):
    tr = open_trace(LINKED)
    monkeypatch.setattr(context, "WORKERS", 2)
    svc = TraceAnalyses(tr)
    with pytest.raises(Cancelled):
        svc.prefetch(["concurrency", "kernel_stats"], cancelled=lambda: True)
    assert svc.peek("concurrency") is None


def test_the_app_loader_does_not_wait_for_the_store(monkeypatch):
    # in_background(wait=False) (the app's loader): the block ends with the store still
    # running when it is held back; a read of the same trace waits for it, and the
    # entry it leaves is whole
    from hipscope.app.trace_tab import default_loader

    gate = threading.Event()
    real = cache.store
    monkeypatch.setattr(cache, "store", lambda *a, **k: gate.wait(60) and real(*a, **k))
    tr = default_loader([LINKED], lambda _f: None, lambda: False)
    key = tr.meta["cache_key"]
    job = cache_jobs.job_of(key)
    assert job is not None and not job._done.is_set()          # still storing
    gate.set()
    again = open_trace(LINKED, use_cache=True)      # waits for the store, then hits it
    assert again.meta.get("cached")
    assert len(again.kernels) == len(tr.kernels)


@pytest.fixture
def recorded_stores(monkeypatch):
    """cache.store records that it began (and runs as usual)."""
    began = threading.Event()
    real = cache.store

    def store(*a, **k):
        began.set()
        return real(*a, **k)

    monkeypatch.setattr(cache, "store", store)
    return began


def test_a_held_store_begins_at_its_release(recorded_stores):
    # the app's trace tabs: the entry is stored once the tab drew the trace
    with cache_jobs.in_background(wait=False, held=True):
        tr = open_trace(LINKED, use_cache=True)
    key = tr.meta["cache_key"]
    assert not recorded_stores.wait(0.5)             # held
    cache_jobs.release(key)
    assert recorded_stores.wait(10)
    cache_jobs.flush()
    assert (_entry(key)).is_dir() and cache_jobs.job_of(key) is None


def test_a_read_of_a_held_entry_does_not_wait_for_the_release(recorded_stores,
                                                             monkeypatch):
    monkeypatch.setattr(cache_jobs, "HOLD_MAX_S", 600)
    with cache_jobs.in_background(wait=False, held=True):
        tr = open_trace(LINKED, use_cache=True)
    got = []
    reader = threading.Thread(target=lambda: got.append(open_trace(LINKED, use_cache=True)))
    reader.start()
    reader.join(60)                     # it needs the entry: the store goes now
    try:
        assert got and recorded_stores.is_set() and got[0].meta.get("cached")
        assert got[0].meta["cache_key"] == tr.meta["cache_key"]
    finally:
        cache_jobs.release_all()


def test_a_held_store_nobody_releases_begins_after_the_longest_hold(recorded_stores,
                                                                    monkeypatch):
    monkeypatch.setattr(cache_jobs, "HOLD_MAX_S", 0.3)
    with cache_jobs.in_background(wait=False, held=True):
        open_trace(LINKED, use_cache=True)
    assert recorded_stores.wait(10)
    cache_jobs.flush()


def test_flush_and_release_all_let_held_stores_go(recorded_stores):
    with cache_jobs.in_background(wait=False, held=True):
        tr = open_trace(LINKED, use_cache=True)
    cache_jobs.release_all()
    assert recorded_stores.wait(10)
    cache_jobs.flush()
    assert cache_jobs.job_of(tr.meta["cache_key"]) is None
