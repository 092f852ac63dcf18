"""`hipscope compare` on the real samples where it used to mislead (issue 17's "fix on
the way"): rocprofv2's ' (.kd)' name suffix, stand-in device names, and busy/idle
figures of serialised replays. Expected figures come from plain csv/json."""

from __future__ import annotations

import csv
import gzip
import json

import pytest

from hipscope.analysis.diff import NameNormalizer
from hipscope.analysis.diff.comparison import gpu_fact, is_stand_in
from hipscope.cli.main import main as cli
from tests.conftest import SAMPLES

RPC = SAMPLES / "rocprof-compute"
MI300X_V2 = RPC / "vcopy-MI300X-rocprofv2"      # names end in ' (.kd)'
MI350_V3 = RPC / "vcopy-MI350-rocprofv3"        # plain names
MI200_V1 = RPC / "vcopy-MI200-rocprofv1"        # names end in ' [clone .kd]'
NCU = SAMPLES / "ncu-csv" / "h200-generated"
RANKS = SAMPLES / "kineto" / "multirank-sampled-hta"


def _compare(capsys, *args: str) -> dict:
    assert cli(["compare", "--json", "--no-cache", *args]) == 0
    return json.loads(capsys.readouterr().out)


def _dispatches(folder) -> dict[str, int]:
    """Kernel name -> dispatches, from pmc_perf.csv as written."""
    with open(folder / "pmc_perf.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    out: dict[str, set] = {}
    for r in rows:
        out.setdefault(r["Kernel_Name"], set()).add(r["Dispatch_ID"])
    return {k: len(v) for k, v in out.items()}


# --------------------------------------------------------------------------- (.kd)


@pytest.mark.parametrize("other", [MI350_V3, MI200_V1], ids=["v3-plain", "v1-clone-kd"])
def test_the_same_kernel_matches_whatever_suffix_rocprof_gave_it(capsys, other):
    a, b = _dispatches(MI300X_V2), _dispatches(other)
    assert len(a) == len(b) == 1 and next(iter(a)).endswith(" (.kd)")
    obj = _compare(capsys, "--by", "kernel", str(MI300X_V2), str(other))
    assert obj["added"] == [] and obj["removed"] == []
    [row] = obj["kernels"]
    assert row["status"] == "matched"
    assert (row["a_count"], row["b_count"]) == (next(iter(a.values())), next(iter(b.values())))
    # the names the files hold are shown as they are
    assert row["merged_names"] == [*a, *b]
    assert row["name"] == "vecCopy(double*, double*, double*, int, int)"


def test_the_kd_rule_strips_only_the_suffix():
    n = NameNormalizer()
    assert n("vecCopy(double*, double*, double*, int, int) (.kd)") == \
        "vecCopy(double*, double*, double*, int, int)"
    assert n("f(int) (.kd) g") == "f(int) (.kd) g"


# --------------------------------------------------------------------------- replays


def _report(capsys, path) -> dict:
    assert cli(["report", "--json", "--no-cache", str(path)]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("a,b", [(MI300X_V2, MI350_V3),
                                 (NCU / "ncu_details.csv", NCU / "ncu_raw.csv")],
                         ids=["rocprof-compute", "ncu"])
def test_compare_withholds_busy_and_idle_of_replays_as_the_report_does(capsys, a, b):
    reps = [_report(capsys, p) for p in (a, b)]
    assert all(r["gpu_busy_fraction"] is None and r["idle_breakdown_ns"] is None for r in reps)
    why = [w for w in reps[0]["warnings"] if w.startswith("GPU busy, idle")]
    assert len(why) == 1
    obj = _compare(capsys, str(a), str(b))
    h = obj["headline"]
    for key in ("gpu_busy_fraction", "idle_ns", "idle_other_ns", "kernels_per_second",
                "launch_overhead_ns"):
        assert h[key]["a"] is None and h[key]["b"] is None, key
    assert obj["gpu_busy_fraction"] == {"a": None, "b": None}
    assert f"A: {why[0]}" in obj["warnings"] and f"B: {why[0]}" in obj["warnings"]
    # the kernel times themselves stay: durations are real in a replay
    assert h["kernel_time_ns"]["b"] > 0
    assert cli(["compare", "--no-cache", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "GPU busy " not in text and "GPU idle" not in text


# --------------------------------------------------------------------------- stand-ins


def _raw_gpu_pids(path) -> set:
    evs = json.loads(gzip.open(path).read())["traceEvents"]
    return {e["pid"] for e in evs if e.get("cat") == "kernel"}


def test_two_ranks_with_stand_in_device_names_are_comparable(capsys):
    a, b = RANKS / "sampled_rank-0.json.gz", RANKS / "sampled_rank-1.json.gz"
    # the files name no GPU product: only device ids 0 and 1 (no deviceProperties)
    assert _raw_gpu_pids(a) == {0} and _raw_gpu_pids(b) == {1}
    assert "deviceProperties" not in json.loads(gzip.open(a).read())
    obj = _compare(capsys, "--by", "kernel", str(a), str(b))
    assert obj["not_comparable"] is False
    assert obj["gpus"]["differ"] is None and obj["gpus"]["unnamed"] == {"a": ["GPU 0"],
                                                                      "b": ["GPU 1"]}
    assert not any("GPUs differ" in w for w in obj["warnings"])
    assert any("not named" in w and "not known" in w for w in obj["warnings"])
    assert cli(["compare", "--no-cache", "--by", "op", str(a), str(b)]) == 0
    head = capsys.readouterr().out.splitlines()[2]
    assert head.startswith("Compared by op") and "different GPUs" not in head
    assert "not named (A: GPU 0, B: GPU 1)" in head


def test_a_stand_in_against_a_named_gpu_says_what_is_known(capsys):
    obj = _compare(capsys, str(NCU / "ncu_details.csv"), str(NCU / "ncu_raw.csv"))
    assert obj["gpus"]["a"] == ["NVIDIA GPU 0"] and obj["gpus"]["b"] == ["NVIDIA H200"]
    assert obj["not_comparable"] is False and obj["gpus"]["differ"] is None
    assert any(w.startswith("A's GPUs are not named") for w in obj["warnings"])


@pytest.mark.parametrize("a,b,differ", [
    (["GPU 0"], ["GPU 1"], None),
    (["Agent-4"], ["AMD Instinct MI300A"], None),
    (["AMD Instinct MI300X"], ["AMD Instinct MI300X VF"], False),
    (["AMD Instinct MI300X"], ["NVIDIA H100 80GB HBM3"], True),
    # B names an H100 that A cannot have: A names all its GPUs
    (["AMD Instinct MI300X"], ["NVIDIA H100 80GB HBM3", "GPU 1"], True),
    (["AMD Instinct MI300X", "GPU (Agent 4)"], ["NVIDIA H100 80GB HBM3"], True),
    (["AMD Instinct MI300X", "GPU 1"], ["AMD Instinct MI300X"], None),
])
def test_a_stand_in_is_no_evidence_of_another_gpu(a, b, differ):
    assert gpu_fact(a, b)["differ"] is differ


def test_stand_in_names():
    for n in ("GPU 0", "NVIDIA GPU 0", "Agent-4", "Agent 4", "GPU (Agent 4)", "GPU (node 3)",
              "GPU [1]", "GPU-0"):
        assert is_stand_in(n), n
    for n in ("AMD Instinct MI300X", "NVIDIA H200", "MI350", "Radeon Pro GPU 1"):
        assert not is_stand_in(n), n
