"""Issue 16 item 6: labels cut in the middle keep what tells names apart."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

from hipscope.analysis.timeline_model.names import distinct_labels, elide_middle

MI350 = Path("/work/shared/samples/rocprofv3-json/tracelens-908-mi350/908_results.json.gz")
NCU = Path("/work/shared/samples/ncu-csv/h200-generated/ncu_raw_metrics.csv")


def test_elide_middle_keeps_head_and_tail():
    assert elide_middle("abcdefghij", 5) == "ab…ij"
    assert elide_middle("short", 10) == "short"
    assert len(elide_middle("x" * 100, 17)) == 17


@pytest.mark.skipif(not MI350.exists(), reason="real MI350 sample not present")
def test_tensile_kernels_of_the_mi350_trace_stay_apart():
    with gzip.open(MI350, "rt") as f:
        tool = json.load(f)["rocprofiler-sdk-tool"][0]
    symbol = {s["kernel_id"]: s["kernel_name"] for s in tool["kernel_symbols"]}
    ran = {r["dispatch_info"]["kernel_id"] for r in tool["buffer_records"]["kernel_dispatch"]}
    names = sorted({symbol[k] for k in ran if symbol[k].startswith("Cijk_")})
    assert len(names) >= 4
    for n in (20, 24, 30, 40):
        labels = distinct_labels(names, n)
        assert all(len(lab) <= n for lab in labels)
        assert len(set(labels)) == len(names), labels   # a prefix cut made them one


@pytest.mark.skipif(not NCU.exists(), reason="real ncu sample not present")
def test_counter_names_sharing_a_tail_keep_their_heads():
    with open(NCU, newline="") as f:
        rows = [ln for ln in f if not ln.startswith("==") and ln.strip() != "ok"]
    header = next(csv.reader(rows))
    peak = [h for h in header if h.endswith("pct_of_peak_sustained_elapsed")]
    names = peak + ["gpu__time_duration.sum", "dram__bytes.sum"]
    labels = distinct_labels(names, 16)
    assert len(set(labels)) == len(names)
    for name, lab in zip(names, labels):    # the distinguishing head survives
        assert lab.startswith(name.split("__")[0])
        assert not lab.startswith("…")


KINETO = [Path("/work/shared/samples/kineto/nvidia-h200-generated/h200_torch_kineto_trace.json.gz"),
          Path("/work/shared/samples/kineto/nvidia-h100-bert-tracelens/"
               "gaunernst_bert-small-uncased__1016001.json.gz"),
          Path("/work/shared/samples/kineto/amd-mi300x-bert-tracelens/"
               "gaunernst_bert-small-uncased__1016001.json.gz")]


@pytest.mark.parametrize("path", KINETO, ids=lambda p: p.parent.name)
def test_legend_labels_tell_template_instances_apart(path):
    from hipscope.analysis.timeline_model.names import readable_labels, short_name

    if not path.exists():
        pytest.skip("real sample not present")
    with gzip.open(path, "rt") as f:
        names = sorted({e["name"] for e in json.load(f)["traceEvents"]
                        if e.get("cat") == "kernel"})
    assert len({short_name(n) for n in names}) < len(names)   # templates share a short name
    labels = readable_labels(names, 30)
    assert all(len(lab) <= 30 for lab in labels)
    assert len(set(labels)) == len(names), labels
