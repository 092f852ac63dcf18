"""The ops analysis (op forest and launching op of every kernel) in the on-disk
analysis cache like the other results (issue 14): a reopened trace computes no ops and
its attribution equals the fresh one, on the H200 recording and every Kineto sample."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hipscope.analysis import ops as ops_mod
from hipscope.analysis.context import analyses_of
from hipscope.parsers import open_trace
from tests.conftest import DATA, ids, sample_dirs

KINETO = sample_dirs("kineto")


def _same(a, b, where="ops") -> None:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b), where
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            if not f.name.startswith("_"):           # memo of module paths
                _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    else:
        assert a == b, (where, a, b)


@pytest.mark.parametrize("path", [DATA / "ops" / "eager.json.gz", *KINETO],
                         ids=["h200-eager", *ids(KINETO)])
def test_ops_come_from_the_disk_cache_on_reopen(path):
    first = open_trace(path, use_cache=True)
    want = analyses_of(first).ops()
    assert analyses_of(first).computed["ops"] == 1
    again = open_trace(path, use_cache=True)
    got = analyses_of(again).ops()
    assert analyses_of(again).computed == {} and analyses_of(again).loaded["ops"] == 1
    _same(got, want)
    _same(got, ops_mod.attribute(again))
    assert np.array_equal(got.gpu_ns_per_op(), want.gpu_ns_per_op())
    assert [got.forest.module_path(i) for i in range(min(len(got.forest), 200))] == \
        [want.forest.module_path(i) for i in range(min(len(want.forest), 200))]
