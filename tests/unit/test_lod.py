"""analysis.lod: rows, window slicing, per-pixel binning, hit testing, find (no Qt)."""

from __future__ import annotations

import numpy as np
import pytest

from hipscope.analysis import lod
from hipscope.model import Trace, build_table


def brute_overlap(start, end, t0, t1):
    return set(np.flatnonzero((start < t1) & (end > t0)).tolist())


def make_events(n=2000, seed=0, overlap=True):
    rng = np.random.default_rng(seed)
    dur = rng.integers(10, 5_000, n)
    gap = rng.integers(-3_000 if overlap else 0, 4_000, n)
    start = 10_000 + np.cumsum(np.maximum(dur + gap, 0))
    start = np.sort(start)
    end = start + dur
    if overlap:
        end[::97] += 200_000             # a few long, nesting/concurrent events
    return lod.Events.build(start, end, np.arange(n)), start, end


@pytest.mark.parametrize("overlap", [False, True])
def test_window_finds_every_overlapping_event(overlap):
    ev, start, end = make_events(overlap=overlap)
    rng = np.random.default_rng(1)
    for _ in range(200):
        t0 = int(rng.integers(start[0] - 1000, end.max()))
        t1 = t0 + int(rng.integers(1, 100_000))
        lo, hi = lod.window(ev, t0, t1)
        got = set(range(lo, hi))
        want = brute_overlap(ev.start, ev.end, t0, t1)
        assert want <= got
        # what is extra ends before t0 (a nested event inside a long one)
        assert all(ev.end[i] <= t0 or ev.start[i] >= t1 for i in got - want)
        assert len(got - want) <= 1 + sum(1 for i in got if ev.end[i] <= t0)


def test_window_query_finds_long_event_started_far_before():
    start = np.array([0, 10, 20, 30, 40], np.int64)
    end = np.array([1_000_000, 15, 25, 35, 45], np.int64)  # event 0 covers everything
    ev = lod.Events.build(start, end, np.arange(5))
    lo, hi = lod.window(ev, 500_000, 500_100)
    assert lo == 0 and hi == 5
    assert brute_overlap(start, end, 500_000, 500_100) == {0}


def test_union_and_busy_until_exact():
    ev, start, end = make_events(overlap=True)
    ts = np.sort(np.random.default_rng(2).integers(0, int(end.max()) + 10, 300)).astype(np.int64)
    got = lod.busy_until(ev, ts)
    for t, g in zip(ts[::15], got[::15]):
        assert g == lod.union_length(start, np.minimum(end, t)) if t > start[0] else g == 0


@pytest.mark.parametrize("overlap", [False, True])
def test_coverage_sums_equal_interval_lengths(overlap):
    ev, start, end = make_events(overlap=overlap)
    keys = np.zeros(len(ev), np.uint16)
    bins, busy, t0b, span = lod.key_bins(ev, keys)
    for t0, t1, w in [(int(start[0]) - 500, int(end.max()) + 500, 1000),
                      (int(start[100]), int(start[400]), 777), (int(start[5]), int(start[6]), 50)]:
        edges = lod.pixel_edges(t0, t1, w)
        want = lod.union_length(np.clip(start, t0, t1), np.clip(end, t0, t1))
        cov = lod.coverage(ev, edges)
        assert cov.min() >= -1e-9 and cov.max() <= 1 + 1e-9
        assert np.sum(cov * np.diff(edges)) == pytest.approx(want, abs=1e-6 * max(want, 1))
        # the same through the bin pyramid (interpolated inside, exact at the ends)
        ev.bins, ev.bin_busy, ev.bin_t0, ev.bin_span = bins, busy, t0b, span
        cov2 = lod.coverage(ev, edges)
        assert np.sum(cov2 * np.diff(edges)) == pytest.approx(want, rel=1e-9, abs=1e-6)
        ev.bins = ev.bin_busy = None


def test_coverage_of_a_single_event_across_pixels():
    ev = lod.Events.build(np.array([150], np.int64), np.array([420], np.int64), np.arange(1))
    cov = lod.coverage(ev, lod.pixel_edges(0, 1000, 10))   # 100 ns per pixel
    assert cov.tolist() == pytest.approx([0, 0.5, 1, 1, 0.2, 0, 0, 0, 0, 0])


def test_pixel_keys_longest_event_wins_and_carries():
    start = np.array([0, 10, 300], np.int64)
    end = np.array([5, 290, 310], np.int64)
    ev = lod.Events.build(start, end, np.arange(3))
    ev.keys = np.array([7, 9, 11], np.uint16)
    edges = lod.pixel_edges(0, 400, 4)
    cov = lod.coverage(ev, edges)
    keys = lod.pixel_keys(ev, 0, 3, edges, cov)
    assert keys.tolist() == [9, 9, 9, 11]          # 0..100: 9 is longer than 7


def test_wide_events_via_blocks_match_brute_force():
    ev, start, end = make_events(n=20_000, overlap=True)
    lo, hi = lod.window(ev, int(start[0]), int(end.max()))
    for dmin in (1_000, 4_000, 100_000):
        got = lod.wide_events(ev, lo, hi, dmin)
        want = np.flatnonzero((ev.end - ev.start) >= dmin)
        want = want[(want >= lo) & (want < hi)]
        assert got.tolist() == want.tolist()


def test_hit_test_prefers_innermost_and_tolerance():
    start = np.array([0, 100, 150, 1000], np.int64)
    end = np.array([500, 300, 200, 1010], np.int64)
    ev = lod.Events.build(start, end, np.array([10, 11, 12, 13]))
    assert lod.hit_test(ev, 160, 0) == 2            # innermost
    assert lod.hit_test(ev, 250, 0) == 1
    assert lod.hit_test(ev, 400, 0) == 0
    assert lod.hit_test(ev, 995, 10) == 3           # near, within tolerance
    assert lod.hit_test(ev, 900, 10) == -1


def _trace():
    names = ["gemm_a", "softmax", "GEMM_b", "copy"]
    n = 12
    start = np.arange(n, dtype=np.int64)[::-1] * 1_000 + 5_000     # file order reversed
    k = build_table("kernels", {
        "name": [names[i % 4] for i in range(n)], "device": np.array([i % 2 for i in range(n)],
                                                                    np.int16),
        "start": start, "end": start + 500, "queue": np.array([i % 3 for i in range(n)], np.int32),
        "stream": np.array([(i % 3) + 10 * (i % 2) for i in range(n)], np.int32),
        "api_index": np.arange(n, dtype=np.int32)})
    a = build_table("api", {"name": ["hipLaunchKernel"] * n, "domain": ["HIP"] * n,
                            "start": start - 400, "end": start - 100,
                            "pid": np.full(n, 5, np.int32), "tid": np.full(n, 6, np.int64)})
    m = build_table("markers", {"name": ["step", "fwd", "bwd"], "domain": ["user_annotation"] * 3,
                                "start": np.array([4_000, 4_100, 10_000], np.int64),
                                "end": np.array([20_000, 9_000, 15_000], np.int64),
                                "depth": np.array([0, 1, 1], np.int16),
                                "pid": np.full(3, 5, np.int32), "tid": np.full(3, 6, np.int64)})
    c = build_table("counters", {"counter": ["SQ_WAVES"] * n, "value": np.arange(n, dtype=float),
                                 "kernel_index": np.arange(n, dtype=np.int32)})
    d = build_table("devices", {"index": np.array([0, 1], np.int16), "name": ["MI300X"] * 2})
    return Trace(kernels=k, api=a, markers=m, counters=c, devices=d, meta={"format": "t"})


def test_rows_cover_every_event_once_and_sorted():
    tr = _trace()
    for grouping in ("queue", "stream"):
        m = lod.build_model(tr, grouping)
        seen = {t: [] for t in lod.EVENT_TABLES}
        for r in m.rows:
            if r.kind == "track":
                assert np.all(np.diff(r.events.start) >= 0)
                seen[r.table] += r.events.index.tolist()
        for t in ("kernels", "api", "markers"):
            assert sorted(seen[t]) == list(range(len(getattr(tr, t))))
            assert np.all(m.track_of[t] >= 0)
        assert any(r.kind == "counter" for r in m.rows)


def test_grouping_changes_rows():
    tr = _trace()
    q = lod.build_model(tr, "queue")
    s = lod.build_model(tr, "stream")
    qgroups = [r for r in q.rows if r.kind == "group" and r.key.startswith("gpu/") and r.level == 1]
    assert [r.label for r in qgroups][:3] == ["Queue 0", "Queue 1", "Queue 2"]
    assert all(q.rows[c].kind == "track" for g in qgroups for c in g.children)
    assert not [r for r in s.rows if r.kind == "group" and r.key.startswith("gpu/")
                and r.level == 1]
    streams = sorted(r.label for r in s.rows if r.table == "kernels" and r.kind == "track")
    assert streams == sorted(f"Stream {x}" for x in (0, 1, 2, 10, 11, 12))


def test_queue_rows_show_shared_streams():
    tr = _trace()
    m = lod.build_model(tr, "queue")
    # queue 0 of device 0 carries streams 0 only; device 1's queue 0 carries stream 10
    labels = {r.key: r.label for r in m.rows}
    assert labels["gpu/0/q0"] == "Queue 0"
    k = tr.kernels
    shared = build_table("kernels", {c: k.data.column(c) for c in k.present
                                     if c != "stream"} | {
        "stream": np.array([7 if i % 2 else 8 for i in range(len(k))], np.int32)})
    m2 = lod.build_model(Trace(kernels=shared, devices=tr.devices), "queue")
    lab = {r.key: r.label for r in m2.rows}
    assert lab["gpu/0/q0"] == "Queue 0"               # device 0 only uses stream 8
    assert "streams" not in lab["gpu/1/q1"]
    both = Trace(kernels=build_table("kernels", {
        "name": ["a", "b"], "device": np.zeros(2, np.int16), "start": np.array([0, 10]),
        "end": np.array([5, 15]), "queue": np.zeros(2, np.int32),
        "stream": np.array([3, 4], np.int32)}))
    lab = {r.key: r.label for r in lod.build_model(both, "queue").rows}
    assert lab["gpu/0/q0"] == "Queue 0 · streams 3, 4"


def test_markers_one_row_per_depth():
    m = lod.build_model(_trace())
    ann = [r for r in m.rows if r.table == "markers"]
    assert len(ann) == 2 and {len(r.events) for r in ann} == {1, 2}


def test_find_in_time_order_and_steps():
    tr = _trace()
    m = lod.build_model(tr)
    f = lod.find(tr, m, "gemm")                        # case-insensitive substring
    assert len(f) == 6
    assert np.all(np.diff(f.start) >= 0)
    assert set(f.table.tolist()) == {0}
    rx = lod.find(tr, m, "^GEMM_", regex=True)        # the one name rule: no case
    assert len(rx) == 6
    assert len(lod.find(tr, m, "^gemm_b", regex=True)) == 3
    assert lod.find_step(f, None, True) == 0
    assert lod.find_step(f, None, False) == len(f) - 1
    cur = (int(f.start[2]), int(f.table[2]), int(f.row[2]))
    assert lod.find_step(f, cur, True) == 3
    assert lod.find_step(f, cur, False) == 1
    last = (int(f.start[-1]), int(f.table[-1]), int(f.row[-1]))
    assert lod.find_step(f, last, True) == 0            # wraps
    assert len(lod.find(tr, m, "([", regex=True)) == 0  # a bad regex: plain text


def test_range_stats_busy_per_device():
    tr = _trace()
    m = lod.build_model(tr)
    st = lod.range_stats(m, 5_000, 17_000)
    assert st["duration_ns"] == 12_000
    k = tr.kernels
    s, e, d = k.numpy("start"), k.numpy("end"), k.numpy("device")
    assert st["kernels"] == int(np.count_nonzero((s < 17_000) & (e > 5_000)))
    for dev in (0, 1):
        sel = d == dev
        want = lod.union_length(np.clip(s[sel], 5_000, 17_000), np.clip(e[sel], 5_000, 17_000))
        assert st["busy"][dev] == pytest.approx(want / 12_000)


def test_color_keys_stable_and_modes():
    tr = _trace()
    m = lod.build_model(tr)
    k1 = lod.color_keys(tr, m, lod.color_scale(tr, m, "name"))
    k2 = lod.color_keys(tr, lod.build_model(tr), lod.color_scale(tr, m, "name"))
    for i in k1:
        assert np.array_equal(k1[i][0], k2[i][0])
    kd = lod.color_keys(tr, m, lod.color_scale(tr, m, "duration"))
    assert all(v[0].max() <= 255 for v in kd.values())
    kq = lod.color_keys(tr, m, lod.color_scale(tr, m, "queue_delay"))
    kern = [i for i in kq if m.rows[i].table == "kernels" and m.rows[i].kind == "track"]
    assert all((kq[i][0] != lod.NO_KEY).all() for i in kern)      # all linked
    api = [i for i in kq if m.rows[i].table == "api"]
    assert all((kq[i][0] == lod.NO_KEY).all() for i in api)


def test_name_key_is_a_stable_hash():
    import zlib
    assert lod.name_key("hipLaunchKernel") == zlib.crc32(b"hipLaunchKernel") & 0xFFF


def test_short_names():
    assert lod.short_name("_ZN2at6native29vectorized_elementwise_kernelILi4EEvv") == \
        "at::native::vectorized_elementwise_kernel"
    assert lod.short_name("void ck::kernel_gemm<ck::X, 4>(ck::Arg)") == "ck::kernel_gemm"
    assert lod.short_name("Cijk_Alik_Bljk_HHS") == "Cijk_Alik_Bljk_HHS"


def test_host_rows_api_first_then_domains_with_python_folded():
    """A thread's API calls come first (they carry the launch arrows), then one group
    per marker domain; deep Python stacks start folded."""
    from hipscope.analysis.lod import build_model
    from hipscope.parsers import open_trace
    from tests.conftest import DATA

    tr = open_trace(DATA / "gpu" / "eager.json.gz")
    model = build_model(tr)
    rows = model.rows
    thread = next(i for i, r in enumerate(rows) if r.label.startswith("Thread"))
    kids = [rows[c] for c in rows[thread].children]
    assert kids[0].label == "API" and kids[0].table == "api"
    labels = [k.label for k in kids]
    assert "PyTorch ops" in labels
    py = [k for k in kids if k.label == "Python stack"]
    assert all(k.kind == "group" and k.collapsed_default for k in py)
    # depth restarts within a domain: the first PyTorch-ops track is depth 0
    ops = next(k for k in kids if k.label == "PyTorch ops")
    assert rows[ops.children[0]].label == "PyTorch ops"


def test_prepare_colours_finds_and_is_cancelled():
    from hipscope.model.progress import Cancelled

    tr = _trace()
    model, scale, found, starts = lod.prepare(tr, "queue", "duration", text="k")
    assert scale.mode == "duration" and found is not None and len(found) > 0
    assert all(model.rows[i].events.keys is not None for i in model.tracks())
    assert sum(len(s) for s in starts.values()) == len(found)
    assert lod.prepare(tr, "stream", "name")[2:] == (None, {})
    with pytest.raises(Cancelled):
        lod.prepare(tr, "queue", "name", cancelled=lambda: True)


def test_launch_links_follow_api_index():
    tr = _trace()                                 # kernel i was launched by API call i
    assert lod.launch_links(tr, "kernels", 3) == [("api", 3, "kernels", 3)]
    assert lod.launch_links(tr, "api", 5) == [("api", 5, "kernels", 5)]
    assert lod.launch_links(tr, "kernels", 99) == [] and lod.launch_links(tr, "markers", 0) == []
