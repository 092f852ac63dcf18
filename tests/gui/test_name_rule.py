"""One name-matching rule: the same pattern picks the same names in Find, in the kernels
filter and in compare rules, and an invalid regex gets one message everywhere."""

from __future__ import annotations

import re

import numpy as np
import pytest

from hipscope.analysis import lod
from hipscope.analysis.diff import NameNormalizer, RulesError
from hipscope.model import Trace, build_table
from hipscope.views.tables.kernels_model import name_mask

NAMES = ["GEMM_a", "gemm_b", "Cijk_Ailk_MT64", "softmax_fwd", "copy(["]


def _trace() -> Trace:
    n = len(NAMES)
    k = build_table("kernels", {"name": NAMES, "device": np.zeros(n, np.int16),
                                "start": np.arange(n, dtype=np.int64) * 100,
                                "end": np.arange(n, dtype=np.int64) * 100 + 50})
    return Trace(kernels=k, meta={"format": "test", "sources": ["t"], "clock": "test"})


def _find(pattern: str) -> set[str]:
    tr = _trace()
    f = lod.find(tr, lod.build_model(tr), pattern, regex=True)
    return {NAMES[int(r)] for r in f.row}


def _filter(pattern: str) -> set[str]:
    ok, _ = name_mask(NAMES, np.arange(len(NAMES)), pattern)
    return {n for n, hit in zip(NAMES, ok) if hit}


def _compare_rule(pattern: str) -> set[str]:
    rule = NameNormalizer.parse(pattern + " => \x00")   # a rule marks what it matches
    return {n for n in NAMES if "\x00" in rule(n)}


@pytest.mark.parametrize("pattern", ["gemm", "^GEMM_", "cijk|SOFT", r"_[a-z]$", "MT\\d+"])
def test_same_pattern_same_names_everywhere(pattern):
    want = {n for n in NAMES if re.search(pattern, n, re.IGNORECASE)}   # the rule, by hand
    assert _find(pattern) == _filter(pattern) == _compare_rule(pattern) == want


def test_an_invalid_regex_has_one_message():
    _, note = name_mask(NAMES, np.arange(len(NAMES)), "([")
    assert note.startswith("not a valid regular expression (")
    assert note.endswith("; matching it as plain text")
    assert _find("([") == _filter("([") == {"copy(["}        # plain text, both
    with pytest.raises(RulesError) as got:
        NameNormalizer.parse("ok\n([")
    assert "line 2" in str(got.value)
    assert note.split(";")[0] in str(got.value)
