"""The panel registry's contract: every registered panel is built from a Document
alone, follows a loaded trace, draws, and leaves no worker behind; a plugin's panel
(an entry point) gets a dock and a View menu entry like the built-ins."""

from __future__ import annotations

import csv
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from hipscope.app.main_window import MainWindow
from hipscope.parsers import open_trace
from hipscope.qt.document import Document
from hipscope.qt.panels import load_panels, panel_specs, unregister_panel
from hipscope.qt.tasks import TaskRunner

TWIN = Path(__file__).resolve().parents[1] / "data" / "rocprofv3-csv-twin" / "node01"
BUILTIN_KEYS = ["details", "summary", "area", "kernels", "ops", "queue_delay", "counters", "tuner"]
SPECS = panel_specs()


@pytest.fixture(scope="module")
def twin_trace():
    """Two processes' rocprofv3 CSV files (kernels, API, copies, markers, counters)."""
    return open_trace([TWIN])


def _workers(panel, document) -> list[TaskRunner]:
    """The document's job runner (every panel's tasks run there) and any a panel keeps."""
    return [document.tasks, *panel.findChildren(TaskRunner)]


def _colours(img: QImage) -> int:
    img = img.scaled(240, 120)
    return len({img.pixel(x, y) for x in range(img.width()) for y in range(img.height())})


def test_the_built_in_panels_are_registered_in_dock_order():
    assert [s.key for s in SPECS][:len(BUILTIN_KEYS)] == BUILTIN_KEYS


@pytest.mark.parametrize("spec", SPECS, ids=[s.key for s in SPECS])
def test_panel_contract(qtbot, spec, twin_trace):
    document = Document([TWIN])
    panel = spec.factory(document)            # a Document alone, no trace yet
    qtbot.addWidget(panel)
    panel.resize(700, 300)
    panel.show()
    document.set_trace(twin_trace)
    workers = _workers(panel, document)
    qtbot.waitUntil(lambda: all(w.active_count() == 0 for w in workers), timeout=30_000)
    panel.resize(1100, 420)
    qtbot.waitExposed(panel)
    img = panel.grab().toImage()
    assert img.width() == 1100 and img.height() == 420
    assert _colours(img) > 2, f"{spec.key} drew a blank"
    assert panel.close()
    assert all(w.active_count() == 0 for w in workers), f"{spec.key} left a worker running"
    assert document.shutdown(5000)
    late = document.scope(spec.key).submit("late", lambda progress, cancelled: 1)
    assert late.outcome == "cancelled"              # a closed document starts nothing


PLUGIN = '''
from PySide6.QtWidgets import QLabel

from hipscope.qt.panels import PanelSpec


def make(document):
    label = QLabel("plugin panel")
    document.trace_loaded.connect(lambda trace: label.setText(f"{len(trace.kernels)} kernels"))
    return label


SPEC = PanelSpec("plugin_kernel_count", "Kernel count", make, tabify_with="summary",
                 order=90)
'''


@pytest.fixture
def plugin_panel(tmp_path, monkeypatch):
    (tmp_path / "hipscope_test_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = EntryPoint("kernel_count", "hipscope_test_plugin:SPEC", "hipscope.panels")
    assert load_panels([ep]) == ["kernel_count"]
    yield "plugin_kernel_count"
    unregister_panel("plugin_kernel_count")


def test_a_plugin_panel_gets_a_dock_and_follows_the_trace(qtbot, plugin_panel, tmp_path):
    w = MainWindow(persist=False, loader=lambda paths, progress, cancelled: open_trace(paths))
    qtbot.addWidget(w)
    w.show()
    assert w.docks[plugin_panel].windowTitle() == "Kernel count"
    view_menu = next(a.menu() for a in w.menuBar().actions() if a.text() == "&View")
    assert "Kernel count" in [a.text() for a in view_menu.actions()]
    (tab,) = w.open_paths([TWIN])
    qtbot.waitUntil(lambda: tab.state == "loaded", timeout=30_000)
    rows = 0
    for f in sorted(TWIN.glob("*_kernel_trace.csv")):
        with f.open(newline="") as fh:
            rows += sum(1 for _ in csv.DictReader(fh))
    assert w._dock_stacks[plugin_panel].currentWidget().text() == f"{rows} kernels"
    assert w.close()
    assert w.runner.active_count() == 0


def test_a_trace_tab_runs_every_panel_on_its_documents_one_runner(qtbot):
    """One job runner per trace: the timeline and the panels submit to the document's
    pool (their own keys), none keeps a thread pool of its own."""
    w = MainWindow(persist=False, loader=lambda paths, progress, cancelled: open_trace(paths))
    qtbot.addWidget(w)
    w.show()
    (tab,) = w.open_paths([TWIN])
    qtbot.waitUntil(lambda: tab.state == "loaded", timeout=30_000)
    runner = tab.document.tasks
    qtbot.waitUntil(lambda: runner.submitted > 0 and runner.active_count() == 0, timeout=30_000)
    for name, widget in [("timeline", tab.timeline), *tab.panels.items()]:
        assert widget.findChildren(TaskRunner) == [], f"{name} keeps its own thread pool"
    assert w.close()
    assert runner.active_count() == 0
