"""The C passes of the pftrace column tables (hipscope/parsers/_pftnum.c, place_ints in
_pftcols.c) against plain-Python statements of what they compute."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hipscope.parsers.pftrace import fast
from hipscope.parsers.pftrace.colann import factorize
from hipscope.parsers.pftrace.colwalk import (
    SLICE,
    V_BOOL,
    V_DOUBLE,
    V_INT,
    V_NULL,
    V_PTR,
    V_STR,
    V_UINT,
)
from hipscope.parsers.pftrace.proto import ann_as_int

pytestmark = pytest.mark.skipif(not fast.available(), reason="_pftscan not built")
C = fast._pftscan


def _factorize_by_dict(vals: list[int]) -> tuple[list[int], list[int]]:
    codes, first, seen = [], [], {}
    for i, v in enumerate(vals):
        if v not in seen:
            seen[v] = len(seen)
            first.append(i)
        codes.append(seen[v])
    return codes, first


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.one_of(st.integers(-3, 3), st.integers(-(1 << 63), (1 << 63) - 1)),
                max_size=300))
def test_factorize_numbers_values_in_first_seen_order(vals):
    codes, first = factorize(np.array(vals, dtype=np.int64))
    assert (codes.tolist(), first.tolist()) == _factorize_by_dict(vals)


def test_factorize_of_many_distinct_unsigned_values():
    rng = np.random.default_rng(3)
    vals = rng.integers(0, 1 << 64, size=20_000, dtype=np.uint64)
    vals = np.concatenate([vals, vals[::-1], vals[:5000]])  # rehashes several times
    codes, first = factorize(vals)
    want = _factorize_by_dict(vals.tolist())
    assert (codes.tolist(), first.tolist()) == want


def test_flows_flatten_the_rows_flow_ids_in_order():
    sl = np.zeros(4, dtype=SLICE)
    sl["flow_lo"], sl["flow_n"] = [0, 2, 2, 5], [2, 0, 3, 1]
    flows = np.array([10, 11, 20, 21, 22, 30], dtype=np.uint64)
    rows = np.array([3, 0, 1, 2], dtype=np.int64)
    fv, owner = np.empty(6, np.uint64), np.empty(6, np.int64)
    C.flows(sl, rows, flows, fv, owner)
    assert fv.tolist() == [30, 10, 11, 20, 21, 22]
    assert owner.tolist() == [0, 1, 1, 3, 3, 3]
    with pytest.raises(ValueError):
        C.flows(sl, rows, flows[:4], fv, owner)  # flow ranges beyond the flows given


def test_ended_keeps_the_whole_slices_in_order():
    sl = np.zeros(5, dtype=SLICE)
    sl["fg"] = [4, 1, 5, 4 | 8, 6]  # ended; open; ended without a start time; ...
    sl["t0"], sl["t1"] = [10, 20, 30, 40, 50], [11, 21, 31, 41, 51]
    keep, t0, t1 = (np.empty(5, np.int64) for _ in range(3))
    n = C.ended(sl, keep, t0, t1)
    assert (keep[:n].tolist(), t0[:n].tolist(), t1[:n].tolist()) == ([0, 3], [10, 40],
                                                                      [11, 41])


_BIG = 1 << 63


def test_place_ints_is_ann_as_int_at_the_slots():
    kinds = [V_BOOL, V_UINT, V_INT, V_DOUBLE, V_DOUBLE, V_DOUBLE, V_PTR, V_NULL, V_STR, V_INT]
    pyvals = [True, 7, -5, 2.5, 3.5, float("nan"), 9, None, "12", 4]
    raw = [1, 7, (-5) % (1 << 64), *(np.array([2.5, 3.5, np.nan]).view(np.uint64).tolist()),
           9, 0, 0, 4]
    idx = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], dtype=np.uint32)
    slot = np.array([3, 2, 1, 0, 4, 5, 6, 7, 8, -1], dtype=np.int64)  # slice 9: not placed
    v, ok, given_ = np.zeros(9, np.int64), np.zeros(9, bool), np.zeros(9, bool)
    placed, flags = C.place_ints(idx, np.array(kinds, np.uint8), np.array(raw, np.uint64),
                                 slot, v, ok, given_)
    assert (placed, flags) == (9, 1)  # 1: a string value (Python converts it)
    for i, pv in enumerate(pyvals[:9]):
        want = None if kinds[i] == V_STR else ann_as_int(pv)
        s = slot[i]
        assert (int(v[s]) if ok[s] else None) == want, (i, pv)
        assert given_[s]
    for kind, value, flag in ((V_UINT, _BIG, 2), (V_DOUBLE, np.float64(2.0 ** 63), 4)):
        r = np.array([value], dtype=np.float64).view(np.uint64) if kind == V_DOUBLE else \
            np.array([value], dtype=np.uint64)
        got = C.place_ints(np.zeros(1, np.uint32), np.array([kind], np.uint8), r,
                           np.array([-1], np.int64), np.zeros(1, np.int64),
                           np.zeros(1, bool), None)
        assert got == (0, flag)  # beyond int64 even where not placed: the tables decline


def test_an_extension_built_from_older_sources_reads_through_the_records(monkeypatch):
    """A stale _pftscan without the column passes: the record walk reads the file (the
    same trace), no error."""
    from hipscope.parsers.pftrace import PftraceReader, colread

    from .test_pftrace_c import FIXTURES, assert_same

    r = PftraceReader()
    want = r.read(FIXTURES[0], lambda f: None, lambda: False)
    monkeypatch.delattr(C, "ended")
    assert not colread.enabled()
    assert_same(r.read(FIXTURES[0], lambda f: None, lambda: False), want)
