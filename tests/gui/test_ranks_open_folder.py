"""A folder of rank files dropped on the window or opened through File > Open Folder…:
a one-line choice between one merged trace and the Ranks tab (issue 18)."""

from __future__ import annotations

import gzip
import json
import sys

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QFileDialog, QMessageBox

from hipscope.app.actions import ActionId
from hipscope.app.trace_tab import TraceTab
from hipscope.views.ranks import RanksTab

from ..conftest import DATA, SAMPLES

HTA = SAMPLES / "kineto" / "multirank-sampled-hta"


@pytest.fixture
def window(make_window):
    return make_window(persist=False)


def answer(monkeypatch, button: str | None) -> list[str]:
    """The person clicks ``button`` of the question (None: Cancel); returns what was
    asked, one text a question."""
    asked: list[str] = []

    def click(box) -> int:
        asked.append(box.text())
        if button is None:
            box.button(QMessageBox.StandardButton.Cancel).click()
        else:
            next(b for b in box.buttons() if b.text() == button).click()
        return 0

    monkeypatch.setattr(QMessageBox, "exec", click)
    return asked


def drop(window, *paths) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    window.dropEvent(QDropEvent(QPointF(20, 20), Qt.DropAction.CopyAction, mime,
                                Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier))


def kernel_count(path) -> int:
    with gzip.open(path, "rt") as f:
        return sum(e.get("cat") == "kernel" for e in json.load(f)["traceEvents"])


def test_a_dropped_rank_folder_opens_as_ranks(qtbot, window, monkeypatch):
    asked = answer(monkeypatch, "Ranks")
    monkeypatch.setitem(sys.modules, "hipscope.ranks.engine", None)   # a fixed outcome
    drop(window, HTA)
    n = len(list(HTA.glob("*rank-*.json.gz")))
    assert asked == [f"multirank-sampled-hta holds {n} rank traces: open them as one merged "
                     "trace, or as ranks (the Ranks tab)?"]
    tab = window.tabs.currentWidget()
    assert isinstance(tab, RanksTab) and tab.job_paths == [str(HTA)]
    assert window.tabs.count() == 1                      # not also read as one trace
    qtbot.waitUntil(lambda: tab.state == "failed", timeout=10_000)


def test_file_open_folder_can_still_merge_the_ranks_into_one_trace(qtbot, window, monkeypatch):
    asked = answer(monkeypatch, "One merged trace")
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(HTA))
    window.action_by_id[ActionId.OPEN_FOLDER].trigger()
    assert len(asked) == 1 and asked[0].startswith("multirank-sampled-hta holds 2 rank")
    assert window.tabs.count() == 1
    tab = window.tabs.currentWidget()
    assert isinstance(tab, TraceTab) and tab.paths == [HTA]
    qtbot.waitUntil(lambda: tab.state == "loaded", timeout=60_000)
    assert len(tab.document.trace.kernels) == sum(
        kernel_count(p) for p in HTA.glob("*rank-*.json.gz"))


def test_cancel_opens_nothing_and_other_folders_are_not_asked_about(qtbot, window,
                                                                    monkeypatch):
    asked = answer(monkeypatch, None)
    drop(window, HTA)
    assert len(asked) == 1 and window.tabs.count() == 0
    plain = DATA / "ops"                                 # Kineto files, none a rank's
    drop(window, plain)
    assert len(asked) == 1
    assert window.tabs.count() == 1
    tab = window.tabs.currentWidget()
    assert isinstance(tab, TraceTab) and tab.paths == [plain]
    qtbot.waitUntil(lambda: tab.state != "loading", timeout=60_000)
