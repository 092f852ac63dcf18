"""Issue 16 item 5: track clutter (single-child levels, quiet tracks folded)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from hipscope.analysis import lod
from hipscope.model import Trace, build_table

MI350 = Path("/work/shared/samples/rocprofv3-json/tracelens-908-mi350/908_results.json.gz")


def _kernels(queue, stream, start=None, dur=None, name=None):
    n = len(queue)
    start = np.arange(n, dtype=np.int64) * 1000 if start is None else np.asarray(start)
    dur = np.full(n, 500, np.int64) if dur is None else np.asarray(dur)
    return build_table("kernels", {
        "name": name or [f"k{i % 3}" for i in range(n)], "device": np.zeros(n, np.int16),
        "start": start, "end": start + dur, "queue": np.asarray(queue, np.int32),
        "stream": np.asarray(stream, np.int32)})


def test_single_child_levels_give_way_to_the_child():
    # queue 1 carries stream 5 alone; queue 2 carries streams 6 and 7
    k = _kernels([1, 1, 2, 2, 2, 2], [5, 5, 6, 7, 6, 7])
    m = lod.build_model(Trace(kernels=k), "queue")
    labels = {r.key: (r.label, r.kind, r.level) for r in m.rows}
    assert labels["gpu/0/q1/s5"] == ("Queue 1 › Stream 5", "track", 1)
    assert "gpu/0/q1" not in labels                               # no header of one
    assert labels["gpu/0/q2"][1] == "group"                       # two streams: a group
    assert labels["gpu/0/q2/s6"] == ("Stream 6", "track", 2)
    for i, r in enumerate(m.rows):                                # the tree is whole
        assert all(m.rows[c].parent == i for c in r.children)
    for row, kernel in ((m.track_of["kernels"][j], j) for j in range(len(k))):
        assert kernel in m.rows[row].events.index                 # each kernel's own row


def test_a_queue_over_its_one_queue_track_reads_once():
    k = _kernels([0, 0], [-1, -1])
    m = lod.build_model(Trace(kernels=k), "queue")
    assert [r.label for r in m.rows if r.kind == "track"] == ["Queue 0"]
    assert [r.label for r in m.rows] == ["GPU 0", "Queue 0"]    # neither said twice


@pytest.mark.skipif(not MI350.exists(), reason="real MI350 sample not present")
def test_mi350_queues_of_one_stream_have_no_header_row():
    from hipscope.parsers import open_trace

    with gzip.open(MI350, "rt") as f:
        tool = json.load(f)["rocprofiler-sdk-tool"][0]
    streams_of = {}
    for r in tool["buffer_records"]["kernel_dispatch"]:     # raw: queue -> streams used
        q = r["dispatch_info"]["queue_id"]["handle"]
        streams_of.setdefault(q, set()).add(r.get("stream_id", {}).get("handle"))
    single = sum(1 for s in streams_of.values() if len(s) == 1)
    m = lod.build_model(open_trace(MI350), "queue")
    headers = [r for r in m.rows if r.kind == "group" and r.key.startswith("gpu/")
               and r.level == 1]
    assert len(headers) == len(streams_of) - single
    assert all(len(r.children) > 1 for r in headers)


def test_a_queue_of_many_streams_names_a_few_and_the_count():
    n = 40
    k = _kernels([3] * n, list(range(100, 100 + n)))
    m = lod.build_model(Trace(kernels=k), "queue")
    (q,) = [r for r in m.rows if r.key == "gpu/0/q3"]
    assert q.label == "Queue 3 · streams 100, 101, 102, 103, 104, 105, … (40 streams)"
