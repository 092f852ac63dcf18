"""Issue 16 item 6: tables show kernel names like the timeline; comparison rows of
one template read apart."""

from __future__ import annotations

import numpy as np

from hipscope.model import Trace, build_table
from hipscope.qt.document import Document
from hipscope.views.compare_models import display_names
from hipscope.views.tables import KernelsTableView, KernelSummaryView

MANGLED = "_ZN2at6native18elementwise_kernelILi128ELi4EEEvi"


def _trace() -> Trace:
    names = [MANGLED, "plain_kernel", MANGLED]
    start = np.array([0, 1000, 2000], np.int64)
    return Trace(kernels=build_table("kernels", {
        "name": names, "device": np.zeros(3, np.int16), "start": start, "end": start + 500,
        "stream": np.zeros(3, np.int32)}))


def _texts(view) -> list[str]:
    m = view.model
    return [m.data(m.index(r, 0)) for r in range(m.rowCount())]


def test_tables_show_the_timelines_label_for_mangled_names(qtbot):
    from hipscope.analysis import lod

    tr = _trace()
    label = lod.build_model(tr).labels["kernels"]
    timeline = label[tr.kernels.codes("name")[1].index(MANGLED)]
    assert timeline == "at::native::elementwise_kernel"
    for cls in (KernelSummaryView, KernelsTableView):
        d = Document()
        v = cls(d)
        qtbot.addWidget(v)
        d.set_trace(tr)
        texts = _texts(v)
        assert any(t.startswith(timeline) and MANGLED in t for t in texts), texts
        assert "plain_kernel" in texts                       # plain names stay as they are


def test_comparison_rows_of_one_template_read_apart():
    a = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)"
    b = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)"
    shown = display_names([a, b, "gemm"])
    assert shown[2] == "gemm"
    assert shown[0].startswith("at::native::vectorized_elementwise_kernel")
    head = len("at::native::vectorized_elementwise_kernel   ·   ") + 40
    assert shown[0][:head] != shown[1][:head]               # apart within the first 40
    assert "Fill" in shown[0] and "Add" in shown[1]


def test_comparison_rows_of_long_plain_names_lead_with_their_difference():
    c = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x256_MI16x16x1_SN_LDSB1_AFC0"
    d = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x64x128_MI32x32x1_SN_LDSB0_AFC0"
    shown = display_names([c, d])
    assert shown[0][:40] != shown[1][:40]                  # a narrow column tells them apart
    assert shown[0].endswith(c) and shown[1].endswith(d)   # the full name follows
