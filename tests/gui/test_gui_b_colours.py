"""Issue 16 item 6: with few kernel names, maximally distinct colours; the legend
and the timeline agree."""

from __future__ import annotations

import colorsys
import csv
from pathlib import Path

import numpy as np
import pytest

from hipscope.analysis import lod
from hipscope.views.timeline import palette as pal

SPATTER = Path("/work/shared/samples/legacy-rocprof/spatter-kernel-stats/results.csv")


def _hue_gap(a, b) -> float:
    ha = colorsys.rgb_to_hsv(*(np.asarray(a) / 255.0))[0]
    hb = colorsys.rgb_to_hsv(*(np.asarray(b) / 255.0))[0]
    d = abs(ha - hb)
    return min(d, 1 - d)


@pytest.mark.skipif(not SPATTER.exists(), reason="real spatter sample not present")
def test_the_two_spatter_kernels_get_far_apart_colours():
    from hipscope.parsers import open_trace

    with open(SPATTER, newline="") as f:
        raw_names = {r["KernelName"] for r in csv.DictReader(f)}
    assert len(raw_names) == 2
    tr = open_trace(SPATTER)
    model, scale, _found, _starts = lod.prepare(tr, "queue", "name", None, "", False, None)
    palette = pal.Palette("name")
    colour = {}                                   # kernel name -> drawn colour
    for r in model.rows:
        if r.table == "kernels" and r.kind == "track" and r.events is not None:
            names = model.names["kernels"]
            codes = model.codes["kernels"][r.events.index]
            for c, k in zip(codes.tolist(), r.events.keys.tolist()):
                colour.setdefault(names[c], tuple(palette.rgb[palette.index(np.array([k]))[0]]))
    assert len(colour) == 2
    a, b = colour.values()
    assert _hue_gap(a, b) > 0.2, (a, b)           # not two near-identical greens
    legend = dict(scale.top_names)                # the legend shows the same colours
    for name, rgb in colour.items():
        assert tuple(palette.rgb[legend[name]]) == rgb


def test_many_names_keep_their_stable_hash_colours():
    from hipscope.analysis.timeline_model.colours import HASH_KEYS, kernel_name_keys, name_key

    names = [f"kernel_{i}" for i in range(30)]
    assert kernel_name_keys(names).tolist() == [name_key(n) for n in names]
    few = ["b", "a", "c"]
    assert kernel_name_keys(few).tolist() == [HASH_KEYS + 1, HASH_KEYS, HASH_KEYS + 2]
