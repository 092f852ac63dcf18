"""Details panel: fields of the selected event, launch call and queue delay."""

from __future__ import annotations

from PySide6.QtWidgets import QTreeWidgetItemIterator

from hipscope.model.view_state import Selection
from hipscope.qt.document import Document
from hipscope.views.details import DetailsView
from hipscope.views.tables.format import fmt_duration


def _items(view: DetailsView) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    it = QTreeWidgetItemIterator(view.tree)
    while it.value():
        item = it.value()
        out.setdefault(item.text(0), []).append(item.text(1))
        it += 1
    return out


def test_details_create_load_resize_close(qtbot, tiny_trace):
    d = Document()
    v = DetailsView(d)
    qtbot.addWidget(v)
    v.show()
    assert v._stack.currentWidget() is v.empty
    d.set_trace(tiny_trace)
    v.resize(400, 500)
    qtbot.waitExposed(v)
    assert not v.grab().isNull()
    assert v.close()


def test_kernel_details_show_launch_and_queue_delay(qtbot, tiny_trace):
    d = Document()
    v = DetailsView(d)
    qtbot.addWidget(v)
    d.set_trace(tiny_trace)
    row = 5
    d.view_state.select(Selection("kernels", row))
    items = _items(v)
    k, api = tiny_trace.kernels, tiny_trace.api
    start, end = int(k.numpy("start")[row]), int(k.numpy("end")[row])
    assert items["Name"] == [k.column("name")[row].as_py()]
    assert items["Grid"] == ["4096×1×1"] and items["Block"] == ["256×1×1"]
    assert items["LDS"] == ["16.00 KiB (16,384 B)"]
    assert fmt_duration(end - start) in items["Duration"]
    assert items["Call"] == ["hipLaunchKernel"]
    a_start, a_end = int(api.numpy("start")[row]), int(api.numpy("end")[row])
    assert items["From API start"] == [fmt_duration(start - a_start)]
    assert items["From API end"] == [fmt_duration(start - a_end)]
    assert items["Device"][0].startswith("GPU 1: AMD Instinct MI300X")


def test_api_details_list_launched_kernels_and_navigate(qtbot, tiny_trace):
    d = Document()
    v = DetailsView(d)
    qtbot.addWidget(v)
    d.set_trace(tiny_trace)
    d.view_state.select(Selection("api", 7))
    items = _items(v)
    assert "Launched kernels (1)" in items
    it = QTreeWidgetItemIterator(v.tree)
    target = None
    while it.value():
        if it.value().text(0) == "#7":
            target = it.value()
        it += 1
    assert target is not None
    with qtbot.waitSignal(d.selection_changed):
        v.tree.itemDoubleClicked.emit(target, 0)
    assert d.view_state.selection == Selection("kernels", 7)
    d.view_state.select(None)
    assert v._stack.currentWidget() is v.empty
