"""The analyses every open runs, made cheaper (issue 14 "first open" and "analyses"),
give exactly the old results: the idle breakdown, its wall-clock totals, concurrency
and launch statistics from the service's shared per-device groups equal the old code
(kept here verbatim: the sort-every-point sweep, the ``maximum.at`` union, the
per-pair merge sort of concurrency, the per-thread masks of the launch gaps and the
idle totals from one union per category) on every real sample, the H200 recordings
and generated traces."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from benchmarks.gen_rocprofv3_csv import write_kernel_trace
from benchmarks.timeline import synthetic_trace
from hipscope.analysis import concurrency as conc
from hipscope.analysis import idle
from hipscope.analysis.context import TraceAnalyses
from hipscope.model.api_names import is_launch, per_code
from hipscope.model.intervals import union_length
from hipscope.parsers import TraceFormatError, open_trace
from tests.conftest import DATA, SAMPLES


# --------------------------------------------------------------------------- the old code
def old_time_at_least(starts, ends, k=2, in_order=False):   # in_order: unused
    if len(starts) < k:
        return 0
    starts, ends = starts.astype(np.int64, copy=False), ends.astype(np.int64, copy=False)
    key = np.sort(np.concatenate((starts * 2 + 1, ends * 2)), kind="stable")
    t, delta = key >> 1, (key & 1) * 2 - 1
    level = np.cumsum(delta)
    return int(np.diff(t)[level[:-1] >= k].sum())


def old_coverage_init(self, starts, ends):
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if len(starts) == 0:
        self.s = self.e = self.before = np.zeros(0, dtype=np.int64)
        return
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    cm = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > cm[:-1]
    grp = np.cumsum(new) - 1
    self.s = s[new]
    self.e = np.zeros(len(self.s), dtype=np.int64)
    np.maximum.at(self.e, grp, cm)
    self.before = np.concatenate(([0], np.cumsum(self.e - self.s)[:-1]))


def old_concurrency(trace) -> dict:
    """``concurrency.concurrency`` before issue 14's second round (without the service)."""
    k = trace.kernels
    out: dict = {"per_device": {}, "serialized_stream_pairs": []}
    if len(k) == 0:
        return out
    dev, s, e = k.numpy("device"), k.numpy("start"), k.numpy("end")
    stream = k.numpy("stream", fill=-1).astype(np.int64)
    queue = k.numpy("queue", fill=-1).astype(np.int64)
    for d in np.unique(dev):
        r = np.flatnonzero(dev == d)
        sd, ed, st = s[r], e[r], stream[r]
        ids = np.unique(st)
        busy, two = union_length(sd, ed), old_time_at_least(sd, ed, 2)
        out["per_device"][str(int(d))] = {
            "busy_ns": busy, "concurrent_ns": two,
            "concurrent_fraction_of_busy": (two / busy) if busy else 0.0,
            "streams": int(np.count_nonzero(ids >= 0))}
        out["serialized_stream_pairs"] += _old_pairs(int(d), sd, ed, st, queue[r], ids)
    return out


def _old_pairs(device, s, e, stream, queue, ids) -> list[dict]:
    ids = [x for x in ids if x >= 0]
    if len(ids) < 2 or len(ids) > 64:
        return []
    out = []
    rows = {a: np.flatnonzero(stream == a) for a in ids}
    own = {a: old_time_at_least(s[r], e[r], 2) for a, r in rows.items()}
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            ma, mb = rows[a], rows[b]
            both = np.concatenate((s[ma], s[mb]))
            order = np.argsort(both, kind="stable")
            ends = np.concatenate((e[ma], e[mb]))[order]
            if old_time_at_least(both[order], ends, 2) > own[a] + own[b]:
                continue
            who = np.concatenate((np.zeros(len(ma), np.int8), np.ones(len(mb), np.int8)))
            switches = int(np.count_nonzero(np.diff(who[order])))
            if switches < 4:
                continue
            qa, qb = set(queue[ma].tolist()) - {-1}, set(queue[mb].tolist()) - {-1}
            out.append({"device": device, "stream_a": int(a), "stream_b": int(b),
                        "interleavings": switches,
                        "shared_queue": (bool(qa & qb) if qa and qb else None)})
    return out


def old_launch_gaps(trace, top: int = 10) -> list[dict]:
    """The ``longest_launch_gaps`` of ``launch_stats`` before issue 14's second round."""
    api = trace.api
    if len(trace.kernels) == 0 or len(api) == 0:
        return []
    codes, names = api.codes("name")
    launch = per_code(names, is_launch)[codes]
    a_s, a_e = api.numpy("start")[launch], api.numpy("end")[launch]
    tid, rows = api.numpy("tid", fill=-1)[launch], np.flatnonzero(launch)
    gaps = []
    for t in np.unique(tid):
        m = tid == t
        order = np.argsort(a_s[m], kind="stable")
        st, en, r = a_s[m][order], a_e[m][order], rows[m][order]
        if len(st) < 2:
            continue
        g = st[1:] - en[:-1]
        best = np.argsort(-g, kind="stable")[:top]
        gaps.extend((int(g[i]), int(r[i]), int(r[i + 1]), int(t)) for i in best)
    gaps.sort(reverse=True)
    return [{"gap_ns": g, "after_api_row": a, "before_api_row": b, "tid": t,
             "start": int(api.numpy("end")[a])} for g, a, b, t in gaps[:top]]


def old_idle_json(ib: idle.IdleBreakdown) -> dict:
    """``IdleBreakdown.to_json`` before issue 14's second round: one union per category."""
    per = {str(d): dict(v.breakdown) for d, v in sorted(ib.devices.items())}
    return {"threshold_ns": ib.threshold_ns, "per_device": per,
            "total": {c: ib.wall((c,)).length for c in idle.CATEGORIES},
            "any_idle_ns": ib.wall().length,
            "unknown_incomplete_graph_replay_ns": ib.unknown().length}


def _old(trace, monkeypatch) -> tuple[dict, dict, idle.IdleBreakdown]:
    with monkeypatch.context() as m:
        m.setattr(conc, "time_at_least", old_time_at_least)
        m.setattr(idle.Coverage, "__init__", old_coverage_init)
        ib = idle.idle_breakdown(trace)
        return old_idle_json(ib), old_concurrency(trace), ib


def _same(a, b, where="") -> None:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b), where
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            if not f.name.startswith("_"):
                _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    else:
        assert a == b and type(a) is type(b), (where, a, b)


def _check(trace, monkeypatch) -> None:
    svc = TraceAnalyses(trace, store=None)
    want_json, want_conc, want_ib = _old(trace, monkeypatch)
    _same(svc.idle_json(), want_json, "idle_json")
    _same(svc.concurrency(), want_conc, "concurrency")
    _same(svc.idle().devices, want_ib.devices, "idle")
    _same(idle.idle_breakdown(trace).to_json(), want_json, "idle without the service")
    _same(conc.concurrency(trace), want_conc, "concurrency without the service")
    _same(svc.launch_stats()["longest_launch_gaps"], old_launch_gaps(trace), "launch gaps")


# --------------------------------------------------------------------------- the traces
def _real() -> list[Path]:
    samples = sorted(p for fam in SAMPLES.iterdir() if fam.is_dir()
                     for p in fam.iterdir() if p.is_dir())
    return samples + sorted((DATA / "gpu").glob("*.json.gz")) + sorted(
        (DATA / "ops").glob("*.json.gz"))


@pytest.mark.parametrize("path", _real(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_equal_to_the_old_code_on_real_traces(path, monkeypatch):
    try:
        trace = open_trace(path)
    except TraceFormatError:
        pytest.skip("not a trace hipscope opens as a folder")
    _check(trace, monkeypatch)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equal_to_the_old_code_on_generated_rocprofv3_sets(tmp_path, seed, monkeypatch):
    k = tmp_path / "1_kernel_trace.csv"
    write_kernel_trace(k, 20_000 + 3_000 * seed, seed=seed,
                       api_path=tmp_path / "1_hip_api_trace.csv")
    _check(open_trace(tmp_path), monkeypatch)


@pytest.mark.parametrize("seed", [0, 1])
def test_equal_to_the_old_code_on_synthetic_traces(seed, monkeypatch):
    _check(synthetic_trace(40_000, gpus=3, queues=2, streams=3, seed=seed), monkeypatch)


def test_the_linear_two_overlap_sweep_equals_the_old_one():
    rng = np.random.default_rng(7)
    for n in [0, 1, 2, 3, 10, 100, 5000]:
        for spread in (10, 1000, 10**6):
            s = rng.integers(0, spread, n)
            e = s + rng.integers(0, spread // 5 + 2, n)        # zero-length ones too
            if n > 3:
                s[1::4] = s[::4][: len(s[1::4])]                # equal starts
                e[2::7] = s[2::7]                              # empty intervals
                e = np.maximum(e, s)
            want = old_time_at_least(s, e)
            assert conc.time_at_least(s, e) == want, (n, spread)
            o = np.argsort(s, kind="stable")
            assert conc.time_at_least(s[o], e[o], in_order=True) == want, (n, spread)
            assert conc.time_at_least(s, e, 3) == old_time_at_least(s, e, 3)


def test_the_union_without_maximum_at_equals_the_old_one():
    rng = np.random.default_rng(3)
    for n in [0, 1, 5, 1000]:
        s = rng.integers(0, 10_000, n)
        e = s + rng.integers(-5, 300, n)
        new = idle.Coverage(s, e)
        old = idle.Coverage.__new__(idle.Coverage)
        old_coverage_init(old, s, e)
        for a, b in ((new.s, old.s), (new.e, old.e), (new.before, old.before)):
            assert a.dtype == b.dtype and np.array_equal(a, b)
