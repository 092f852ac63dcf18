"""Issue 16: the timeline's track choices (hide, pin, reorder, fold, the label column's
width) are kept between sessions per trace (its paths and content key) in the settings,
and come back when the trace is opened again, in the same window or a new one."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import QPoint, QSettings, Qt

from hipscope.app.main_window import MainWindow
from hipscope.app.settings import Settings

from .conftest import make_tiny_trace

CONTENT = {"key": "content-1"}      # the content key the stand-in "cache" gives the trace


def keyed_loader(paths, progress, cancelled):
    trace = make_tiny_trace(120)
    trace.meta["cache_key"] = CONTENT["key"]
    return trace


@pytest.fixture
def ini(tmp_path):
    CONTENT["key"] = "content-1"
    return tmp_path / "settings.ini"


@pytest.fixture
def trace_path(tmp_path):
    p = tmp_path / "tiny.trace"
    p.write_text("stand-in path; the loader builds the trace")
    return p


def _window(qtbot, ini) -> MainWindow:
    w = MainWindow(settings=Settings(QSettings(str(ini), QSettings.Format.IniFormat)),
                   loader=keyed_loader, persist=True)
    qtbot.addWidget(w)
    w.resize(1600, 1000)
    w.show()
    qtbot.waitExposed(w)
    return w


def _open(qtbot, w, path):
    (tab,) = w.open_paths([path])
    qtbot.waitUntil(lambda: tab.state == "loaded", timeout=20_000)
    qtbot.waitUntil(lambda: tab.timeline.model is not None)
    return tab, tab.timeline


def _key(tl, label: str, parent: str | None = None) -> int:
    m = tl.model
    return next(i for i, r in enumerate(m.rows) if r.label.startswith(label) and (
        parent is None or (r.parent >= 0 and m.rows[r.parent].label.startswith(parent))))


def _menu(tl, row: int, text: str) -> None:
    """Trigger an entry of the track's context menu."""
    menu = tl.input.tracks.menu_for(row)
    (act,) = [a for a in menu.actions() if a.text().startswith(text)]
    act.trigger()


def _choose(qtbot, tl) -> None:
    """Hide, pin, move, fold and widen through the timeline's own controls."""
    _menu(tl, _key(tl, "Queue 0 › Stream 7", "GPU 1"), "Hide")
    _menu(tl, _key(tl, "Thread 44"), "Pin to top")
    _menu(tl, _key(tl, "Queue 0 › Stream 7", "GPU 0"), "Move down")
    gpu1 = _key(tl, "GPU 1")
    y, h = tl.row_y(gpu1)
    qtbot.mouseClick(tl, Qt.MouseButton.LeftButton, pos=QPoint(30, y + h // 2))   # fold
    lw, y = tl.input.tracks.label_w, tl.height() // 2
    qtbot.mousePress(tl, Qt.MouseButton.LeftButton, pos=QPoint(lw, y))
    qtbot.mouseMove(tl, QPoint(lw + 60, y))
    qtbot.mouseMove(tl, QPoint(340, y))
    qtbot.mouseRelease(tl, Qt.MouseButton.LeftButton, pos=QPoint(340, y))


def _seen(tl) -> dict:
    """What the track area shows (labels in order, the counts, the width)."""
    d = tl.input.tracks.describe()
    return {"rows": [(r["label"], r["pinned"]) for r in d["tracks"]],
            "hidden": sorted(tl.input.tracks.options.hidden), "label_w": d["label_w"],
            "folded": sorted(k for k in tl.collapsed)}


def test_track_choices_come_back_in_a_new_tab_and_a_new_window(qtbot, ini, trace_path):
    w = _window(qtbot, ini)
    tab, tl = _open(qtbot, w, trace_path)
    fresh = _seen(tl)
    _choose(qtbot, tl)
    chosen = _seen(tl)
    assert chosen["label_w"] == 340 and chosen["hidden"] == ["gpu/1/q0/s7"]
    assert chosen["rows"][0] == ("Thread 44", True) and chosen["folded"] == ["gpu/1"]
    order = [label for label, _p in chosen["rows"]]
    assert order.index("Queue 1 › Stream 8") < order.index("Queue 0 › Stream 7")
    assert chosen != fresh
    w.close_tab(tab)
    tab, tl = _open(qtbot, w, trace_path)              # same window, a new tab
    assert _seen(tl) == chosen
    w.close()
    stored = QSettings(str(ini), QSettings.Format.IniFormat)
    (key,) = json.loads(stored.value("tracks/index"))
    assert json.loads(stored.value(f"tracks/{key}"))["label_w"] == 340

    w2 = _window(qtbot, ini)                           # a new session
    tab2, tl2 = _open(qtbot, w2, trace_path)
    assert _seen(tl2) == chosen
    w2.close()


def test_another_content_key_starts_afresh(qtbot, ini, trace_path):
    w = _window(qtbot, ini)
    tab, tl = _open(qtbot, w, trace_path)
    fresh = _seen(tl)
    _choose(qtbot, tl)
    w.close()
    CONTENT["key"] = "content-2"                       # the file changed
    w2 = _window(qtbot, ini)
    tab2, tl2 = _open(qtbot, w2, trace_path)
    assert _seen(tl2) == fresh
    w2.close()


def test_a_reload_keeps_what_the_user_did_since(qtbot, ini, trace_path):
    w = _window(qtbot, ini)
    tab, tl = _open(qtbot, w, trace_path)
    _choose(qtbot, tl)
    w.close_tab(tab)
    tab, tl = _open(qtbot, w, trace_path)
    _menu(tl, _key(tl, "Thread 44"), "Unpin")
    now = _seen(tl)
    w.reload_current()
    qtbot.waitUntil(lambda: tab.state == "loaded" and tl.model is not None, timeout=20_000)
    assert _seen(tl) == now
    w.close()


def quiet_trace():
    """One GPU: a busy stream and four near-empty ones (folded by default)."""
    import numpy as np

    from hipscope.model import Trace, build_table

    busy = np.arange(60, dtype=np.int64) * 10_000
    quiet = np.array([5_000, 205_000, 405_000, 505_000], np.int64)
    start = np.r_[busy, quiet] + 1_000_000_000
    end = start + np.r_[np.full(60, 8_000), np.full(4, 100)]
    stream = np.r_[np.ones(60), np.arange(2, 6)].astype(np.int32)
    kernels = build_table("kernels", {
        "name": ["gemm"] * 60 + ["tiny"] * 4, "device": np.zeros(64, np.int16),
        "start": start, "end": end, "stream": stream, "queue": stream - 1})
    devices = build_table("devices", {"index": np.array([0], np.int16), "name": ["GPU"],
                                      "vendor": ["AMD"], "arch": ["gfx942"]})
    return Trace(kernels=kernels, devices=devices,
                 meta={"format": "tiny-test", "sources": ["tiny"], "clock": "test",
                       "cache_key": "quiet-1"})


def test_a_fold_opened_by_the_user_stays_open(qtbot, ini, trace_path):
    def window():
        w = MainWindow(settings=Settings(QSettings(str(ini), QSettings.Format.IniFormat)),
                       loader=lambda paths, progress, cancelled: quiet_trace(), persist=True)
        qtbot.addWidget(w)
        w.resize(1600, 1000)
        w.show()
        qtbot.waitExposed(w)
        return w

    w = window()
    tab, tl = _open(qtbot, w, trace_path)
    (fold,) = [i for i, r in enumerate(tl.model.rows) if r.kind == "fold"]
    key = tl.model.rows[fold].key
    assert key in tl.collapsed                               # folded by default
    tl.toggle_group(fold)                                    # the user opens it
    shown = _seen(tl)
    assert key not in tl.collapsed and len(shown["rows"]) > 3
    w.close()
    w2 = window()
    tab2, tl2 = _open(qtbot, w2, trace_path)
    assert key not in tl2.collapsed and _seen(tl2) == shown
    w2.close()
