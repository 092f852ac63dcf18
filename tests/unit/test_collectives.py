"""Collective instances of a trace and their matching across ranks
(analysis/collectives.py), checked against plain json code over the raw files: the
real two-rank HTA sample (no Seq, no process group) and a generated job (c10d
record_param_comms args with Seq and process group)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from benchmarks.gen_ranks import write_job
from hipscope.analysis.collectives import collectives_of, match
from hipscope.parsers import open_trace
from tests.unit import ranks_expected as ex


def _rank(path):
    tr = open_trace(path)
    return tr, collectives_of(tr)


def test_hta_sample_instances_and_arrivals_equal_plain_json():
    per, want = {}, {}
    for r in (0, 1):
        path = ex.HTA / f"sampled_rank-{r}.json.gz"
        _, per[r] = _rank(path)
        want[r] = ex.collectives(ex.load(path))
        assert dict(zip(per[r].keys(), per[r].start)) == want[r]
    assert {k[0] for k in want[0]} == {"nccl:all_to_all", "nccl:all_reduce",
                                       "nccl:_all_gather_base"}
    matched, alone = match(per)
    assert alone == 0 and len(matched) == len(want[0]) == 10
    for c in matched:
        a = {r: want[r][(c.name, c.group, c.sequence)] for r in (0, 1)}
        assert c.arrival_ns == a
        assert c.skew_ns == max(a.values()) - min(a.values())
        assert c.last_rank == max(a, key=a.get)
        assert c.wait_ns == sum(max(a.values()) - v for v in a.values())


def test_generated_job_uses_the_files_seq_and_process_group(tmp_path):
    paths = write_job(tmp_path, 3, kernels=60, steps=4, straggler=1)
    per = {}
    for r, p in enumerate(paths):
        tr, per[r] = _rank(p)
        want = ex.collectives(ex.load(p))
        assert dict(zip(per[r].keys(), per[r].start)) == want
        # the reader kept c10d's args on the record_param_comms ops
        m = tr.markers
        assert set(m.data.column("collective").drop_null().to_pylist()) == {"allreduce"}
        assert sorted(m.data.column("collective_seq").drop_null().to_pylist()) == [1, 2, 3, 4]
    assert set(want) == {("nccl:all_reduce", "0", s) for s in (1, 2, 3, 4)}
    matched, _ = match(per)
    assert [c.sequence for c in matched] == [1, 2, 3, 4]
    assert all(c.last_rank == 1 and c.skew_ns > 300_000 for c in matched)


def test_kernels_without_launch_calls_are_instances_of_their_own(tmp_path):
    """A trace that starts mid-stream: NCCL kernels whose launch was not recorded are
    numbered in order by their kernel name."""
    evs = [{"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(x)",
            "pid": 0, "tid": 7, "ts": 10 + 100 * i, "dur": 5,
            "args": {"device": 0, "stream": 7, "correlation": 900 + i}} for i in range(3)]
    p = tmp_path / "r.json.gz"
    with gzip.open(p, "wt") as fh:
        json.dump({"schemaVersion": 1, "traceEvents": evs}, fh)
    _, rc = _rank(p)
    assert rc.keys() == [("ncclKernel_AllReduce_RING_LL_Sum_float", "", i) for i in range(3)]
    assert rc.start == [(10 + 100 * i) * 1000 for i in range(3)]


@pytest.mark.parametrize("ranks", [{}, {0: None}])
def test_nothing_to_match(ranks):
    from hipscope.analysis.collectives import RankCollectives

    assert match({r: RankCollectives() for r in ranks}) == ([], 0)


NCCL_ARGS = Path(__file__).resolve().parents[1] / "data" / "kineto-nccl-args"


def _kernel_args_plain(doc: dict) -> dict[tuple[str, str, int], int]:
    """(Collective name, Process Group Name, Seq) -> kernel start ns, by plain json."""
    return {(e["args"]["Collective name"], e["args"]["Process Group Name"], e["args"]["Seq"]):
            ex.ns(doc, e["ts"]) for e in doc["traceEvents"] if e.get("cat") == "kernel"}


def test_kernel_side_collective_args_stand_in_for_the_missing_op():
    """Newer Kineto puts c10d's args on the NCCL kernels: with no record_param_comms op
    in the file, they give each instance its name, group and Seq, and the ranks match by
    Seq although rank 0's window lacks the first all_reduce."""
    per, want = {}, {}
    for r in (0, 1):
        path = NCCL_ARGS / f"rank-{r}.json"
        doc = json.loads(path.read_text())
        tr, per[r] = _rank(path)
        want[r] = _kernel_args_plain(doc)
        k = tr.kernels.data
        assert k.column("collective").to_pylist() == [
            e["args"]["Collective name"] for e in doc["traceEvents"] if e.get("cat") == "kernel"]
        assert k.column("collective_seq").to_pylist() == [
            e["args"]["Seq"] for e in doc["traceEvents"] if e.get("cat") == "kernel"]
        assert not any(e.get("name") == "record_param_comms" for e in doc["traceEvents"])
        assert dict(zip(per[r].keys(), per[r].start)) == want[r]
    matched, alone = match(per)
    both = sorted(set(want[0]) & set(want[1]))
    assert alone == len(set(want[0]) ^ set(want[1])) == 1
    assert sorted((c.name, c.group, c.sequence) for c in matched) == both
    for c in matched:
        a = {r: want[r][(c.name, c.group, c.sequence)] for r in (0, 1)}
        assert c.arrival_ns == a and c.skew_ns == max(a.values()) - min(a.values())
        assert c.last_rank == max(a, key=a.get)


def _plain_match(per_rank):
    """The matching rule in plain Python (dicts, no numpy): first listing of a key per
    rank, instances on 2+ ranks, earliest first."""
    seen: dict = {}
    for rank in sorted(per_rank):
        rc = per_rank[rank]
        for key, s, e in zip(zip(rc.name, rc.group, rc.sequence), rc.start, rc.end):
            seen.setdefault(key, {}).setdefault(rank, (s, e))
    out = []
    for (name, group, seq), by in seen.items():
        if len(by) < 2:
            continue
        arr = {r: se[0] for r, se in by.items()}
        latest = max(arr.values())
        out.append((min(arr.values()), name, group, seq, arr,
                    {r: se[1] for r, se in by.items()}, latest - min(arr.values()),
                    min(r for r, a in arr.items() if a == latest),
                    sum(latest - a for a in arr.values())))
    out.sort(key=lambda t: t[:4])
    return out, sum(1 for by in seen.values() if len(by) < 2)


@pytest.mark.parametrize("seed", range(6))
def test_match_equals_the_plain_rule_on_random_ranks_raw_and_compact(seed):
    """Repeated keys on one rank, instances on one rank only, arrival ties and
    epoch-sized times: the array matching (on lists or on the client's compact form)
    gives the plain rule's instances, fields and order."""
    import random

    from hipscope.analysis.collectives import RankCollectives, compact

    rnd = random.Random(seed)
    base = 1_700_000_000_000_000_000
    per = {}
    for rank in rnd.sample(range(50), rnd.randint(1, 7)):
        n = rnd.randint(0, 40)
        start = [base + rnd.choice([0, rnd.randint(0, 10**9)]) for _ in range(n)]
        per[rank] = RankCollectives(
            name=[rnd.choice(["nccl:all_reduce", "nccl:all_gather"]) for _ in range(n)],
            group=[rnd.choice(["0", "1"]) for _ in range(n)],
            sequence=[rnd.randint(0, 6) for _ in range(n)], start=start,
            end=[s + rnd.randint(0, 10**6) for s in start], kernel=["k"] * n)
    want, alone = _plain_match(per)
    for form in (per, {r: compact(rc) for r, rc in per.items()}):
        got, got_alone = match(form)
        assert got_alone == alone
        assert [(min(c.arrival_ns.values()), c.name, c.group, c.sequence, dict(c.arrival_ns),
                 dict(c.end_ns), c.skew_ns, c.last_rank, c.wait_ns) for c in got] == want
        assert all(type(v) is int for c in got for v in (*c.arrival_ns.values(), c.wait_ns))
