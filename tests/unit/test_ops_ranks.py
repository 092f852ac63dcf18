"""Op attribution of a multi-rank folder: two ranks on different hosts may have the
same pid and tid, and must not merge into one thread (issue 17). The two-rank HTA
sample, with rank 1's process and threads renumbered to rank 0's, against plain-json
attribution of each rank's file on its own."""

from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter

import pytest

from hipscope.cli.main import main as cli
from tests.conftest import SAMPLES
from tests.unit.test_ops import independent_ops

RANKS = SAMPLES / "kineto" / "multirank-sampled-hta"


def _same_ids_folder(tmp_path):
    """rank 0 as recorded; rank 1 with pid 4045 -> 4037 and tid 23704 -> 23695, as two
    hosts would number them. Returns the folder and both rank files."""
    out = tmp_path / "job"
    out.mkdir()
    r0, r1 = out / "sampled_rank-0.json.gz", out / "sampled_rank-1.json.gz"
    shutil.copy(RANKS / "sampled_rank-0.json.gz", r0)
    doc = json.loads(gzip.open(RANKS / "sampled_rank-1.json.gz").read())
    ids = {4045: 4037, 23704: 23695}
    for e in doc["traceEvents"]:
        if e.get("pid") == 4045:
            e["pid"] = 4037
            e["tid"] = ids.get(e.get("tid"), e.get("tid"))
    r1.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return out, r0, r1


def _host_threads(path) -> set:
    evs = json.loads(gzip.open(path).read())["traceEvents"]
    return {(e["pid"], e["tid"]) for e in evs if e.get("cat") == "cpu_op"}


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    return _same_ids_folder(tmp_path_factory.mktemp("ranks"))


def test_the_ranks_share_pid_and_tid(job):
    _, r0, r1 = job
    assert _host_threads(r0) == _host_threads(r1) == {(4037, 4037), (4037, 23695)}


def test_ops_of_two_ranks_with_the_same_pid_and_tid_stay_apart(job, capsys):
    folder, r0, r1 = job
    assert cli(["report", "--ops", "--json", "--no-cache", str(folder)]) == 0
    rep = json.loads(capsys.readouterr().out)
    gpu, count, lost = Counter(), Counter(), 0
    for f in (r0, r1):              # each rank on its own, in plain json
        g, c, lo = independent_ops(f)
        gpu.update(g)
        count.update({n: c[n] for n in g})
        lost += lo
    assert {r["name"]: r["gpu_ns"] for r in rep["ops"]} == dict(gpu)
    assert {r["name"]: r["count"] for r in rep["ops"]} == dict(count)
    assert rep["ops_unattributed_gpu_ns"] == lost


def test_the_recorded_folder_attributes_as_its_files_do(capsys):
    """The sample as recorded (distinct pids): the folder's ops are the sum of the
    files' ops."""
    assert cli(["report", "--ops", "--json", "--no-cache", str(RANKS)]) == 0
    rep = json.loads(capsys.readouterr().out)
    gpu: Counter = Counter()
    for f in sorted(RANKS.glob("*.json.gz")):
        gpu.update(independent_ops(f)[0])
    assert {r["name"]: r["gpu_ns"] for r in rep["ops"]} == dict(gpu)
