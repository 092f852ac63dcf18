"""API-name classes have one home (model/api_names.py): every analysis classifies a call
the same way."""

from __future__ import annotations

import pytest

from hipscope.analysis import concurrency, idle, queue_delay, sanity
from hipscope.model import api_names as an
from hipscope.tuner import rules_sync

CASES = [  # name, launch, graph launch, sync, copy (what the docs/analysis.md table says)
    ("hipLaunchKernel", True, False, False, False),
    ("cudaLaunchKernel", True, False, False, False),
    ("hipModuleLaunchKernel", True, False, False, False),
    ("hipGraphLaunch", True, True, False, False),
    ("cuGraphLaunch", True, True, False, False),
    ("hipDeviceSynchronize", False, False, True, False),
    ("cudaStreamSynchronize", False, False, True, False),
    ("hipMemcpy", False, False, True, True),
    ("cudaMemcpyAsync", False, False, False, True),
    ("hipMemsetAsync", False, False, False, True),
    ("hipMemset", False, False, True, True),
    ("hipMalloc", False, False, False, False),
]


@pytest.mark.parametrize("name,launch,graph,sync,copy", CASES)
def test_classes(name, launch, graph, sync, copy):
    assert (an.is_launch(name), an.is_graph_launch(name), an.is_sync_call(name),
            an.is_copy(name)) == (launch, graph, sync, copy)


def test_sync_domain_blocks_whatever_the_name():
    assert an.is_sync_call("cudaEventQuery", "cuda_sync")


def test_every_analysis_uses_the_one_home():
    assert queue_delay.is_graph_launch is an.is_graph_launch
    assert idle.is_sync_call is an.is_sync_call
    assert concurrency.LAUNCH_RE is an.LAUNCH_RE
    assert sanity.is_graph_launch is an.is_graph_launch
    assert rules_sync.is_sync_call is an.is_sync_call
    assert list(an.per_code(["hipGraphLaunch", "hipMalloc"], an.is_graph_launch)) == [
        True, False, False]
