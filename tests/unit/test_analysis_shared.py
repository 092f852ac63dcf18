"""The analyses' shared per-device groupings (issue 14: sorts, unions and masks computed
once per trace) against plain-Python references on random traces: kernel rows grouped
by device in start order, busy and 2+ time, serialised stream pairs, launch gaps and
the idle breakdown. Times are small integers, so every reference counts nanoseconds
one by one; ties in start, gap and time are common on purpose."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hipscope.analysis import concurrency as conc
from hipscope.analysis._groups import grouped
from hipscope.analysis.concurrency import concurrency, launch_stats
from hipscope.analysis.context import TraceAnalyses
from hipscope.analysis.idle import CATEGORIES, DeviceIdle, IdleBreakdown, _dominant, idle_breakdown
from hipscope.model import Trace, build_table

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)

kernel_rows = st.lists(st.tuples(
    st.integers(0, 2),                       # device
    st.integers(0, 40),                      # start
    st.integers(-3, 12),                     # duration (negative: end before start)
    st.one_of(st.none(), st.integers(1, 4)),  # stream
    st.one_of(st.none(), st.integers(0, 2)),  # queue
), min_size=1, max_size=40)


def _kernels(rows) -> Trace:
    dev, start, dur, stream, queue = zip(*rows)
    k = build_table("kernels", {
        "name": ["k"] * len(rows), "device": np.asarray(dev, np.int16),
        "start": np.asarray(start, np.int64),
        "end": np.asarray(start, np.int64) + np.asarray(dur, np.int64),
        "stream": list(stream), "queue": list(queue)})
    return Trace(kernels=k, meta={"format": "test"})


def _running(rows, t: int) -> list[int]:
    """Rows (indices) running at ns ``t``: start <= t < end."""
    return [i for i, r in enumerate(rows) if r[1] <= t < r[1] + r[2]]


def _ns(rows, pred) -> int:
    return sum(1 for t in range(-5, 100) if pred(_running(rows, t)))


def _expected_concurrency(rows) -> dict:
    out: dict = {"per_device": {}, "serialized_stream_pairs": []}
    for d in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == d]
        busy = _ns(mine, lambda on: len(on) >= 1)
        two = _ns(mine, lambda on: len(on) >= 2)
        streams = sorted({r[3] for r in mine if r[3] is not None})
        out["per_device"][str(d)] = {
            "busy_ns": busy, "concurrent_ns": two,
            "concurrent_fraction_of_busy": two / busy if busy else 0.0,
            "streams": len(streams)}
        for i, a in enumerate(streams):
            for b in streams[i + 1:]:
                pair = _expected_pair(d, mine, a, b)
                if pair is not None:
                    out["serialized_stream_pairs"].append(pair)
    return out


def _expected_pair(d, mine, a, b) -> dict | None:
    """A pair is serialised when the ns under 2+ of its kernels are only those under
    2+ of one stream's, and it switches 4+ times in (start, stream a first, row) order."""
    ra = [r for r in mine if r[3] == a]
    rb = [r for r in mine if r[3] == b]
    if _ns(ra + rb, lambda on: len(on) >= 2) > (_ns(ra, lambda on: len(on) >= 2)
                                                + _ns(rb, lambda on: len(on) >= 2)):
        return None
    order = sorted([(r[1], 0, i) for i, r in enumerate(ra)] + [(r[1], 1, i) for i, r in
                                                              enumerate(rb)])
    switches = sum(1 for x, y in zip(order, order[1:]) if x[1] != y[1])
    if switches < 4:
        return None
    qa = {r[4] for r in ra if r[4] is not None}
    qb = {r[4] for r in rb if r[4] is not None}
    return {"device": d, "stream_a": a, "stream_b": b, "interleavings": switches,
            "shared_queue": bool(qa & qb) if qa and qb else None}


@SETTINGS
@given(kernel_rows)
def test_device_rows_and_spans_are_each_devices_kernels_in_start_order(rows):
    svc = TraceAnalyses(_kernels(rows), store=None)
    want = {d: sorted((i for i, r in enumerate(rows) if r[0] == d), key=lambda i: rows[i][1])
            for d in sorted({r[0] for r in rows})}
    got = svc.device_rows()
    assert list(got) == list(want)
    assert {d: v.tolist() for d, v in got.items()} == want
    for d, (s, e) in svc.device_spans().items():
        assert s.tolist() == [rows[i][1] for i in want[d]]
        assert e.tolist() == [rows[i][1] + rows[i][2] for i in want[d]]


@SETTINGS
@given(kernel_rows)
def test_concurrency_counts_nanoseconds_like_a_plain_sweep(rows):
    tr = _kernels(rows)
    want = _expected_concurrency(rows)
    assert concurrency(tr) == want                          # on its own
    assert TraceAnalyses(tr, store=None).concurrency() == want    # the service's groups


# kernels on one device, each 0 or 5 ns after the one before, of a stream 1-3 and 1-7
# (or up to 30) ns long: streams take turns often, start together, overlap or not, and
# run several kernels at once themselves
slots = st.lists(st.tuples(st.sampled_from([0, 5, 5]), st.integers(1, 3),
                           st.one_of(st.integers(1, 7), st.integers(1, 30)),
                           st.integers(0, 1)), min_size=4, max_size=11)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(slots)
def test_serialised_pairs_like_plain_counts(turns):
    at = np.cumsum([step for step, *_ in turns]).tolist()
    rows = [(0, t, dur, stream, q) for t, (_, stream, dur, q) in zip(at, turns)]
    want = _expected_concurrency(rows)
    default = conc._PREFIX
    try:
        for prefix in (default, 1, 2):      # a first look at a stream's first kernels
            conc._PREFIX = prefix
            assert TraceAnalyses(_kernels(rows), store=None).concurrency() == want
    finally:
        conc._PREFIX = default


def test_two_streams_taking_turns_are_a_serialised_pair():
    rows = [(0, 10 * i + 5 * j, 4, 1 + j, 0) for i in range(5) for j in (0, 1)]
    got = TraceAnalyses(_kernels(rows), store=None).concurrency()["serialized_stream_pairs"]
    assert got == [{"device": 0, "stream_a": 1, "stream_b": 2, "interleavings": 9,
                    "shared_queue": True}]


def test_a_first_look_that_shows_overlap_only_up_to_the_streams_own_is_not_final():
    # a and b both run one kernel on [13, 14) (before the cut at 20 of a first look at
    # two kernels each) and both run two on [40, 41): the time with 2+ of their kernels
    # (2 ns) is the sum of their own (1 + 1), so they never run at once
    a = [(0, 4), (10, 4), (20, 2), (40, 1), (40, 1)]
    b = [(5, 4), (13, 2), (40, 1), (40, 1)]
    rows = [(0, t, dur, 1, 0) for t, dur in a] + [(0, t, dur, 2, 0) for t, dur in b]
    want = [{"device": 0, "stream_a": 1, "stream_b": 2, "interleavings": 5,
             "shared_queue": True}]
    assert _expected_concurrency(rows)["serialized_stream_pairs"] == want
    default = conc._PREFIX
    try:
        conc._PREFIX = 2
        got = TraceAnalyses(_kernels(rows), store=None).concurrency()
    finally:
        conc._PREFIX = default
    assert got["serialized_stream_pairs"] == want


launch_calls = st.lists(st.tuples(
    st.integers(7, 9),                       # tid
    st.integers(0, 30),                      # start
    st.integers(0, 6),                       # duration
    st.booleans(),                           # a launch call (else hipMemcpy)
), min_size=1, max_size=50)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(launch_calls, st.sampled_from([0, 1, 3, 10]))
def test_longest_launch_gaps_like_a_plain_sort_per_thread(calls, top):
    api = build_table("api", {
        "name": ["hipLaunchKernel" if c[3] else "hipMemcpy" for c in calls],
        "domain": ["HIP_RUNTIME_API"] * len(calls),
        "start": np.array([c[1] for c in calls], np.int64),
        "end": np.array([c[1] + c[2] for c in calls], np.int64),
        "tid": np.array([c[0] for c in calls], np.int64)})
    k = build_table("kernels", {"name": ["k"], "device": np.zeros(1, np.int16),
                                "start": np.array([0], np.int64), "end": np.array([5], np.int64)})
    got = launch_stats(Trace(kernels=k, api=api, meta={"format": "test"}), top=top)
    want = []
    for t in sorted({c[0] for c in calls if c[3]}):
        mine = sorted((c[1], i) for i, c in enumerate(calls) if c[3] and c[0] == t)
        gaps = [(mine[j + 1][0] - (calls[i][1] + calls[i][2]), j, i, mine[j + 1][1])
                for j, (_, i) in enumerate(mine[:-1])]
        best = sorted(gaps, key=lambda g: (-g[0], g[1]))[:top]   # of equal gaps the first
        want.extend((g, a, b, t) for g, _, a, b in best)
    want.sort(reverse=True)
    assert got["longest_launch_gaps"] == [
        {"gap_ns": g, "after_api_row": a, "before_api_row": b, "tid": t,
         "start": calls[a][1] + calls[a][2]} for g, a, b, t in want[:top]]


@SETTINGS
@given(kernel_rows)
def test_unlinked_idle_gaps_like_a_plain_scan(rows):
    # no launch calls: each gap between a device's kernels is launch overhead when at most
    # the threshold (here 3 ns), else other; it ends at the next kernel's start
    tr = _kernels(rows)
    other = build_table("api", {"name": ["hipGetDevice"], "domain": ["HIP_RUNTIME_API"],
                                "start": np.array([500], np.int64),
                                "end": np.array([501], np.int64)})
    with_api = Trace(kernels=tr.kernels, api=other, meta={"format": "test"})
    svc = TraceAnalyses(tr, store=None)
    for ib in (idle_breakdown(tr, threshold_ns=3),
               idle_breakdown(tr, threshold_ns=3, device_rows=svc.device_rows(),
                              spans=svc.device_spans()),
               idle_breakdown(with_api, threshold_ns=3)):      # a call, linked to none
        for d in sorted({r[0] for r in rows}):
            gaps, reach = [], None
            for t, i in sorted((r[1], i) for i, r in enumerate(rows) if r[0] == d):
                if reach is not None and t > reach:
                    gaps.append((reach, t, i))
                end = rows[i][1] + rows[i][2]
                reach = end if reach is None else max(reach, end)
            di = ib.devices[d]
            assert list(zip(di.gap_start.tolist(), di.gap_end.tolist(),
                            di.gap_next_kernel.tolist())) == gaps
            assert di.gap_category.tolist() == [
                CATEGORIES.index("launch_overhead" if b - a <= 3 else "other")
                for a, b, _ in gaps]
            small = sum(b - a for a, b, _ in gaps if b - a <= 3)
            assert di.breakdown == {"host_wait": 0, "launch_overhead": small, "sync": 0,
                                    "other": sum(b - a for a, b, _ in gaps) - small}


# per device: gaps (space before it, unknown ns, then ns of sync, host wait, launch
# overhead and other, in the order they happen)
device_gaps = st.lists(st.lists(st.tuples(*[st.integers(0, 3)] * 6), max_size=6),
                       min_size=1, max_size=3)


@SETTINGS
@given(device_gaps)
def test_idle_wall_clock_totals_count_each_nanosecond_once(devices):
    order = ("sync", "host_wait", "launch_overhead", "other")
    idle, covered = {}, {c: set() for c in (*order, "any", "unknown")}
    for d, gaps in enumerate(devices):
        t, g0, g1, parts, unknown = 0, [], [], [], []
        for space, unk, *ns in gaps:
            t += space
            g0.append(t)
            covered["unknown"].update(range(t, t + unk))
            at = t + unk
            for c, n in zip(order, ns):
                covered[c].update(range(at, at + n))
                covered["any"].update(range(at, at + n))
                at += n
            g1.append(at)
            parts.append([ns[order.index(c)] for c in CATEGORIES])
            unknown.append(unk)
            t = at
        n = len(g0)
        idle[d] = DeviceIdle(d, 0, 0, {}, np.array(g0, np.int64), np.array(g1, np.int64),
                             np.zeros(n, np.int8), np.zeros(n, np.int64),
                             gap_parts=np.array(parts, np.int64).reshape(n, 4).T.copy(),
                             gap_unknown=np.array(unknown, np.int64))
    got = IdleBreakdown(0, idle).to_json()
    assert got["total"] == {c: len(covered[c]) for c in CATEGORIES}
    assert got["any_idle_ns"] == len(covered["any"])
    assert got["unknown_incomplete_graph_replay_ns"] == len(covered["unknown"])


@SETTINGS
@given(st.lists(st.tuples(*[st.integers(0, 2)] * 4), max_size=30))
def test_a_gaps_dominant_part_is_the_first_largest(gaps):
    parts = np.array(gaps, np.int64).reshape(-1, 4).T.copy()
    got = _dominant(parts)
    assert got.dtype == np.int8
    assert got.tolist() == [row.index(max(row)) for row in gaps]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.sampled_from(["int8", "int16", "int32", "int64", "uint8", "uint64"]),
       st.lists(st.tuples(st.integers(-6, 6), st.integers(0, 3)), max_size=40),
       st.booleans())
def test_grouped_rows_are_numpys_lexsort(dtype, pairs, spread):
    # keys of a small range take the count-table path; spread keys the sorting one
    info = np.iinfo(dtype)
    keys = [max(info.min, min(info.max, k * (info.max // 7 if spread else 1)))
            for k, _ in pairs]
    key = np.array(keys, dtype=dtype)
    by = np.array([b for _, b in pairs], np.int64)
    uniq, rows, bounds, ordered = grouped(key, by)
    want = np.lexsort((by, key))
    assert rows.tolist() == want.tolist()
    assert ordered.tolist() == by[want].tolist()
    assert uniq.dtype == key.dtype and uniq.tolist() == sorted(set(keys))
    assert np.diff(bounds).tolist() == [keys.count(u) for u in sorted(set(keys))]
