"""Nesting depth has one home (model/intervals.py): the readers' marker depths and the
timeline's API-call tracks agree, also where ranges start together or are instants."""

from __future__ import annotations

import numpy as np

from hipscope.analysis import lod
from hipscope.model import Trace, build_table
from hipscope.model.intervals import nesting_depth
from hipscope.parsers import _common


def _by_hand(start, end):
    """Depth by brute force: ranges opened before (start order, longer first) and
    still open; a zero-length mark sees every range open at its time."""
    order = sorted(range(len(start)), key=lambda i: (start[i], -end[i], i))
    depth = [0] * len(start)
    for pos, i in enumerate(order):
        before = order[:pos] if end[i] > start[i] else [
            j for j in order if end[j] > start[j] and start[j] <= start[i]]
        depth[i] = sum(1 for j in before if end[j] > start[j] and end[j] > start[i])
    return depth


def test_readers_use_the_one_function():
    assert _common.nesting_depth is nesting_depth


def test_against_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(500):
        n = int(rng.integers(1, 12))
        s = rng.integers(0, 10, n)
        e = s + rng.integers(-1, 6, n)
        if rng.random() < 0.5:
            o = np.argsort(s, kind="stable")
            s, e = s[o], e[o]
        assert nesting_depth(s, e).tolist() == _by_hand(s.tolist(), e.tolist())


def test_timeline_puts_the_longer_of_two_calls_starting_together_outside():
    # one thread: a short call listed first, a long one starting at the same time
    api = build_table("api", {"name": ["hipMemcpy", "hipDeviceSynchronize", "hipFree"],
                              "domain": ["HIP_RUNTIME_API"] * 3,
                              "start": np.array([100, 100, 150], np.int64),
                              "end": np.array([200, 500, 180], np.int64),
                              "pid": np.full(3, 1, np.int32), "tid": np.full(3, 2, np.int64)})
    m = lod.build_model(Trace(api=api, meta={"format": "t"}))
    tracks = {r.key: sorted(r.events.index.tolist()) for r in m.rows
              if r.kind == "track" and r.table == "api"}
    want = nesting_depth(np.array([100, 100, 150]), np.array([200, 500, 180]))
    assert want.tolist() == [1, 0, 2]
    assert tracks == {"host/1/t2/api0": [1], "host/1/t2/api1": [0], "host/1/t2/api2": [2]}
