"""How the timeline's rows are built fast (issue 14, first frame): ranking keys by a
table or a sort, one partition of all API calls by thread, and the host rows on a
thread beside the GPU rows. Each way must give the rows the plain way gives."""

from __future__ import annotations

import numpy as np
import pytest

from hipscope.analysis.timeline_model import build_model, rows
from hipscope.model import Trace, build_table
from hipscope.parsers import TraceFormatError, open_trace
from tests.conftest import CancelAfter, ids, sample_dirs

SAMPLES = [*sample_dirs("kineto"), *sample_dirs("rocprofv3-csv"),
           *sample_dirs("rocprofv3-pftrace")]


@pytest.mark.parametrize("keys", [
    np.array([5, 3, 3, -1, 7, 5], np.int64),                 # small range: a table
    np.array([2**40, -5, 2**40, 17, 2**62], np.int64),       # huge range: a sort
    np.random.default_rng(0).integers(-3, 40_000, 50_000),    # many distinct: int64
    np.zeros(0, np.int64),
    np.full(7, 1234, np.int64),                              # one key: one process
    np.array([9, 9, 12, 9], np.int64),                       # a table not from 0
])
def test_ranks_are_the_places_among_the_distinct_keys(keys):
    place, uniq = rows._ranks(keys)
    want_u, want_place = np.unique(keys, return_inverse=True)
    assert uniq.tolist() == want_u.tolist()
    assert place.tolist() == want_place.ravel().tolist()


@pytest.mark.parametrize("keys", [np.full(9, 4, np.int64), np.array([3, 1, 3, 1, 2, 3, 1, 2, 2])])
def test_a_partition_is_the_key_then_start_order(keys):
    start = np.array([5, 1, 5, 0, 9, 2, 2, 7, 1], np.int64)
    order, runs = rows._partition(keys, start)
    assert order.tolist() == np.lexsort((start, keys)).tolist()     # stable: ties by row
    at = 0
    for k, lo, hi in runs:
        assert lo == at and (keys[order[lo:hi]] == k).all()
        at = hi
    assert at == len(keys) and [k for k, _lo, _hi in runs] == sorted(set(keys.tolist()))


def _digest(m) -> list:
    out = []
    for r in m.rows:
        ev = r.events
        out.append((r.key, r.label, r.level, r.kind, r.parent, tuple(r.children),
                    tuple(r.members), r.quiet,
                    None if ev is None else (ev.start.tolist(), ev.index.tolist())))
    return [out, {t: a.tolist() for t, a in m.track_of.items()}]


@pytest.mark.parametrize("path", SAMPLES, ids=ids(SAMPLES))
def test_host_rows_on_a_thread_are_the_rows_built_in_line(path, monkeypatch):
    try:
        trace = open_trace(path)
    except TraceFormatError:
        pytest.skip("a sample without events")
    plain = _digest(build_model(trace))
    monkeypatch.setattr(rows, "PARALLEL_MIN", 0)
    assert rows._in_parallel(trace) or len(trace.api) + len(trace.markers) == 0
    assert _digest(build_model(trace)) == plain


def _kernels_trace(n: int = 3000) -> Trace:
    rng = np.random.default_rng(1)
    queue = rng.choice(np.array([7, 2**31 - 2, 123456789, -1]), n)
    stream = rng.choice(np.array([0, 3, 1 << 30]), n)
    start = rng.integers(0, 10**9, n)
    k = build_table("kernels", {
        "name": [f"k{i % 5}" for i in range(n)], "device": rng.integers(0, 3, n).astype(np.int16),
        "start": start, "end": start + 100, "queue": queue.astype(np.int32),
        "stream": stream.astype(np.int32)})
    pid = rng.choice(np.array([11, 2**31 - 5]), n)
    tid = rng.choice(np.array([1, 2**40, 99]), n)
    a = build_table("api", {
        "name": ["hipLaunchKernel"] * n, "domain": ["hip_api"] * n,
        "start": start - 50, "end": start - 10,
        "pid": pid.astype(np.int32), "tid": tid.astype(np.int64)})
    return Trace(kernels=k, api=a)


def test_each_track_holds_the_events_its_columns_name():
    trace = _kernels_trace()
    m = build_model(trace, "queue")
    k = trace.kernels
    dev, q, s = (k.numpy(c, fill=-1).astype(np.int64) for c in ("device", "queue", "stream"))
    seen = set()
    for r in m.rows:
        if r.kind == "track" and r.table == "kernels":
            idx = r.events.index
            triples = set(zip(dev[idx].tolist(), q[idx].tolist(), s[idx].tolist()))
            assert len(triples) == 1                         # one (device, queue, stream)
            assert not triples & seen
            seen |= triples
            assert np.all(np.diff(r.events.start) >= 0)       # in start order
    assert seen == set(zip(dev.tolist(), q.tolist(), s.tolist()))
    a = trace.api
    pid, tid = a.numpy("pid", fill=-1), a.numpy("tid", fill=-1)
    for r in m.rows:
        if r.kind == "track" and r.table == "api":
            idx = r.events.index
            assert len(set(zip(pid[idx].tolist(), tid[idx].tolist()))) == 1
    assert (m.track_of["api"] >= 0).all() and (m.track_of["kernels"] >= 0).all()


def test_a_cancelled_build_on_two_threads_stops(monkeypatch):
    monkeypatch.setattr(rows, "PARALLEL_MIN", 0)
    with pytest.raises(rows.Cancelled):
        build_model(_kernels_trace(), cancelled=CancelAfter(2))
