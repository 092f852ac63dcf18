"""`hipscope compare A B` of two ranks of one job (issue 17, "Ranks"): a `collectives`
key and a text section, rank against rank per collective instance; expected arrivals
from plain json over the HTA two-rank sample."""

from __future__ import annotations

import json

from hipscope.cli.main import main
from tests.conftest import SAMPLES
from tests.unit import ranks_expected as ex

A, B = (ex.HTA / f"sampled_rank-{r}.json.gz" for r in (0, 1))


def test_two_ranks_compare_collective_by_collective(capsys):
    assert main(["compare", str(A), str(B), "--json"]) in (0, 1)
    rows = json.loads(capsys.readouterr().out)["collectives"]
    wa, wb = ex.collectives(ex.load(A)), ex.collectives(ex.load(B))
    assert len(rows) == len(wa) == len(wb) == 10
    for r in rows:
        key = (r["name"], r["group"], r["sequence"])
        assert (r["a_arrival_ns"], r["b_arrival_ns"]) == (wa[key], wb[key])
        assert r["skew_ns"] == abs(wa[key] - wb[key])
        assert r["last"] == ("a" if wa[key] > wb[key] else "b")
    assert main(["compare", str(A), str(B)]) in (0, 1)
    text = capsys.readouterr().out
    assert "Collectives matched on both ranks: 10 (largest skew first)" in text


def test_traces_without_collectives_have_no_section(capsys):
    h200 = SAMPLES / "kineto" / "nvidia-h200-generated" / "h200_torch_kineto_trace.json.gz"
    assert main(["compare", str(h200), str(h200), "--json"]) in (0, 1)
    assert "collectives" not in json.loads(capsys.readouterr().out)
