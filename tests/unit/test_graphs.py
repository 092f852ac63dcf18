"""Graph-replay completeness (issue 13): launches that lost their kernels are flagged,
and their windows are "unknown", not GPU idle.

The hand-made traces are built from plain interval lists; the expected figures are
computed here with numpy over those lists, never with hipscope's analysis.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import numpy as np

from hipscope.analysis.graphs import graph_replay_gaps
from hipscope.analysis.idle import idle_breakdown
from hipscope.analysis.report import build_report, format_text
from hipscope.model import Trace, build_table
from hipscope.parsers import open_trace
from tests.conftest import DATA

PERIOD, KDUR, KSTEP, KOFF = 100_000, 2_000, 2_500, 10_000


def intervals(carry: list[int]):
    """Launch i calls hipGraphLaunch at i*PERIOD; its kernels (carry[i] of them) run
    back to back from KOFF after the call. Returns (api starts, kernel rows)."""
    api_start = np.arange(len(carry), dtype=np.int64) * PERIOD
    ks, ke, ka = [], [], []
    for i, n in enumerate(carry):
        s = api_start[i] + KOFF + np.arange(n, dtype=np.int64) * KSTEP
        ks.append(s), ke.append(s + KDUR), ka.append(np.full(n, i, np.int32))
    return api_start, np.concatenate(ks), np.concatenate(ke), np.concatenate(ka)


def graph_trace(carry: list[int], extra_eager: bool = False) -> Trace:
    api_start, ks, ke, ka = intervals(carry)
    names = ["hipGraphLaunch"] * len(carry)
    a_start, a_end = list(api_start), list(api_start + 5_000)
    if extra_eager:                      # one ordinary launch after the graphs
        t = len(carry) * PERIOD
        names.append("hipLaunchKernel"), a_start.append(t), a_end.append(t + 1_000)
        ks, ke = np.append(ks, t + 3_000), np.append(ke, t + 4_000)
        ka = np.append(ka, np.int32(len(carry)))
    n = len(names)
    api = build_table("api", {"name": names, "domain": ["HIP_RUNTIME_API"] * n,
                              "start": np.array(a_start, np.int64),
                              "end": np.array(a_end, np.int64),
                              "pid": np.full(n, 7, np.int32), "tid": np.full(n, 8, np.int64),
                              "correlation_id": np.arange(1, n + 1, dtype=np.int64)})
    k = build_table("kernels", {"name": ["node"] * len(ks),
                                "device": np.zeros(len(ks), np.int16), "start": ks, "end": ke,
                                "pid": np.full(len(ks), 7, np.int32),
                                "correlation_id": ka.astype(np.int64) + 1,
                                "api_index": ka.astype(np.int32)})
    d = build_table("devices", {"index": np.array([0], np.int16), "name": ["MI300X"]})
    return Trace(kernels=k, api=api, devices=d, meta={"format": "hand-built"})


CARRY = [20] * 6 + [0] + [20] * 3          # 10 launches of one graph, the 7th lost its kernels


def idle_gaps(ks, ke):
    """Idle gaps [a, b) between merged kernel intervals, plain numpy."""
    o = np.argsort(ks)
    s, e = ks[o], np.maximum.accumulate(ke[o])
    gap = s[1:] > e[:-1]
    return e[:-1][gap], s[1:][gap]


def test_lost_launch_is_found_with_counts_and_window():
    g = graph_replay_gaps(graph_trace(CARRY))
    assert g.found.tolist() == CARRY
    assert g.expected.tolist() == [20] * 10
    assert g.incomplete.tolist() == [n == 0 for n in CARRY]
    s, e, _ = g.windows()
    # [its call's start, the next launch's call start]
    assert s.tolist() == [6 * PERIOD] and e.tolist() == [7 * PERIOD]
    assert g.total_ns() == PERIOD
    w = g.warning()
    assert w == ("1 of 10 graph launches carry 0 kernels where other launches of the same "
                 "graph carry 20: the profiler probably dropped graph-replay kernels, so "
                 "100 µs after those launches is marked unknown, not GPU idle")


def test_idle_time_inside_the_window_is_unknown_not_idle():
    api_start, ks, ke, _ = intervals(CARRY)
    g0, g1 = idle_gaps(ks, ke)
    w0, w1 = 6 * PERIOD, 7 * PERIOD
    unknown = int(np.clip(np.minimum(g1, w1) - np.maximum(g0, w0), 0, None).sum())
    all_idle = int((g1 - g0).sum())
    assert unknown == 100_000                    # the window lies inside one idle gap
    bd = idle_breakdown(graph_trace(CARRY))
    d = bd.devices[0]
    assert d.unknown_ns == unknown
    assert sum(d.breakdown.values()) == all_idle - unknown
    js = bd.to_json()
    assert js["unknown_incomplete_graph_replay_ns"] == unknown
    assert js["any_idle_ns"] == all_idle - unknown


def test_report_json_key_warning_and_text():
    rep = build_report(graph_trace(CARRY))
    assert rep["incomplete_graph_windows"] == {"count": 1, "total_ns": PERIOD}
    assert any("graph launches carry 0 kernels" in w for w in rep["warnings"])
    text = format_text(rep)
    assert "unknown (incomplete graph replay): 100 µs, not counted as idle" in text


def test_one_launch_that_kept_a_tenth_is_flagged_one_that_kept_half_is_not():
    g = graph_replay_gaps(graph_trace([20] * 8 + [2, 10]))
    assert g.incomplete.tolist() == [False] * 8 + [True, False]


def test_graph_whose_launches_never_carry_kernels():
    # every graph launch carries nothing while an ordinary launch links its kernel
    g = graph_replay_gaps(graph_trace([0, 0, 0], extra_eager=True))
    assert g.incomplete.tolist() == [True] * 3
    assert g.expected.tolist() == [-1] * 3
    assert g.warning().startswith("3 of 3 graph launches carry no kernel, nor does any "
                                  "launch of their graphs")


def test_complete_replay_gives_nothing():
    tr = graph_trace([20] * 10)
    assert graph_replay_gaps(tr).count == 0
    rep = build_report(tr)
    assert rep["incomplete_graph_windows"] == {"count": 0, "total_ns": 0}
    assert not any("graph launch" in w for w in rep["warnings"])


def test_real_h200_graph_trace_gives_no_warning():
    path = DATA / "gpu" / "graph.json.gz"
    ev = json.load(gzip.open(path))["traceEvents"]
    launches = {e["args"]["correlation"] for e in ev if e.get("name") == "cudaGraphLaunch"}
    per = {}
    for e in ev:
        if e.get("cat") == "kernel" and e["args"]["correlation"] in launches:
            per[e["args"]["correlation"]] = per.get(e["args"]["correlation"], 0) + 1
    assert len(launches) == 100 and set(per.values()) == {48}    # every replay complete
    g = graph_replay_gaps(open_trace(path))
    assert len(g.api_rows) == 100 and g.found.tolist() == [48] * 100 and g.count == 0
    rep = build_report(open_trace(path))
    assert rep["incomplete_graph_windows"] == {"count": 0, "total_ns": 0}
    assert not any("graph launch" in w for w in rep["warnings"])


def test_cli_report_json_has_the_key():
    path = DATA / "gpu" / "graph.json.gz"
    cmd = [sys.executable, "-m", "hipscope.cli.main", "report", "--json", "--no-cache", str(path)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["incomplete_graph_windows"] == {"count": 0, "total_ns": 0}
