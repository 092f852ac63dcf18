"""Issue 17 GUI: colour kernels by class (GEMM, attention, ...), a mode beside the
other colour modes, with a legend of the classes present."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

from hipscope.app.main_window import MainWindow
from hipscope.views.timeline import palette as pal

MI300X = Path("/work/shared/samples/kineto/amd-mi300x-bert-tracelens/"
              "gaunernst_bert-small-uncased__1016001.json.gz")
# plain rules for the names of this trace (Tensile GEMMs, Triton flash attention,
# PyTorch's layer norm): the colours a user expects for them
EXPECTED = ((re.compile(r"^Cijk_"), 0), (re.compile(r"^attn_fwd$"), 1),
            (re.compile(r"layer_norm"), 5))


def _json_kernel_time(pattern: re.Pattern) -> float:
    with gzip.open(MI300X, "rt") as f:
        events = json.load(f)["traceEvents"]
    return sum(e.get("dur", 0) for e in events
               if e.get("cat") == "kernel" and pattern.search(e["name"]))


@pytest.fixture
def window(qtbot):
    w = MainWindow(persist=False)
    qtbot.addWidget(w)
    w.resize(1600, 900)
    w.show()
    qtbot.waitExposed(w)
    (tab,) = w.open_paths([MI300X])
    qtbot.waitUntil(lambda: tab.state == "loaded", timeout=30_000)
    qtbot.waitUntil(lambda: tab.timeline.model is not None, timeout=30_000)
    yield w, tab
    w.close()


@pytest.mark.skipif(not MI300X.exists(), reason="real BERT sample not present")
def test_colour_by_class_paints_each_kernel_in_its_class_colour(qtbot, window):
    w, tab = window
    i = w.color_combo.findData("class")
    assert i >= 0 and w.color_combo.itemText(i) == "Kernel class"   # beside the others
    w.color_combo.setCurrentIndex(i)
    w.color_combo.activated.emit(i)
    tl = tab.timeline
    qtbot.waitUntil(lambda: tl.scale.mode == "class", timeout=10_000)
    model, palette = tl.model, tl.palette
    names = model.names["kernels"]
    seen = {c: 0 for _, c in EXPECTED}
    for r in model.rows:
        if r.table != "kernels" or r.kind != "track" or r.events is None:
            continue
        codes = model.codes["kernels"][r.events.index]
        for c, k in zip(codes.tolist(), r.events.keys.tolist()):
            for rx, cls in EXPECTED:
                if rx.search(names[c]):
                    assert tuple(palette.rgb[palette.index(np.array([k]))[0]]) == \
                        pal.CLASS_RGB[cls], names[c]
                    seen[cls] += 1
    assert all(seen.values()), seen
    # the legend: the classes present, by GPU time; GEMM before attention here
    gemm, attn = (_json_kernel_time(rx) for rx, _ in EXPECTED[:2])
    assert gemm > attn > 0
    legend = [name for name, _ in tl.scale.top_names]
    assert legend[:2] == ["GEMM", "attention"]
    assert tab.document.view_state.color_mode == "class"
