"""`hipscope --screenshot`: loads, draws, saves a PNG, exits 0; a bad file exits non-zero."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QStyleFactory

from hipscope.cli.main import main
from tests.conftest import SAMPLES


@pytest.fixture(autouse=True)
def _restore_style(qapp):
    """run_app themes the shared QApplication (Fusion + palette): undo it for the
    tests that follow."""
    from hipscope.views.timeline import palette as pal

    style, palette, canvas = qapp.style().name(), qapp.palette(), pal.CANVAS
    yield
    qapp.setStyle(QStyleFactory.create(style))
    qapp.setPalette(palette)
    pal.set_canvas(canvas)                  # and the timeline canvas it chose


def _visible_windows():
    return [w for w in QApplication.topLevelWidgets() if w.isVisible()]


def test_screenshot_in_process(qapp, qtbot, tmp_path):
    out = tmp_path / "shot.png"
    assert main(["--demo", "--screenshot", str(out)]) == 0
    from hipscope.analysis import persist

    assert persist.write_behind(False) is False     # the app put its setting back
    img = QImage(str(out))
    assert not img.isNull() and img.width() >= 800 and img.height() >= 600
    qtbot.waitUntil(lambda: not _visible_windows())       # the window is gone


def test_screenshot_bad_file_fails(qapp, qtbot, tmp_path, capsys):
    bad = tmp_path / "broken.csv"
    bad.write_text("definitely,not\na,trace\n")
    out = tmp_path / "shot.png"
    assert main([str(bad), "--screenshot", str(out)]) != 0
    err = capsys.readouterr().err
    assert str(bad) in err and "Traceback" not in err
    qtbot.waitUntil(lambda: not _visible_windows())


def test_screenshot_subprocess(tmp_path):
    out = tmp_path / "demo.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    r = subprocess.run([sys.executable, "-m", "hipscope", "--demo", "--screenshot", str(out)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert not QImage(str(out)).isNull()
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    r = subprocess.run([sys.executable, "-m", "hipscope", str(bad), "--screenshot",
                        str(tmp_path / "bad.png")], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode != 0
    assert str(bad) in r.stderr and "Traceback" not in r.stderr


# ---- the OUT.json beside the picture (issue 16: what a person sees) -------------------
def _kineto_kernels(path) -> int:
    with gzip.open(path) as fh:
        events = json.load(fh)["traceEvents"]
    return sum(1 for e in events if e.get("ph") == "X" and e.get("cat") == "kernel")


def test_screenshot_writes_what_is_shown(qapp, qtbot, tmp_path):
    from hipscope.cli.main import demo_trace_path
    from hipscope.qt.panels import panel_specs

    out = tmp_path / "shot.png"
    assert main(["--demo", "--screenshot", str(out)]) == 0
    state = json.loads(out.with_suffix(".json").read_text())
    assert state["version"] == 1
    assert (state["window"]["width"], state["window"]["height"]) == (1920, 1080)
    assert QImage(str(out)).size().width() == 1920
    cur = state["current"]
    assert cur["state"] == "loaded" and cur["title"] == demo_trace_path().name
    n = _kineto_kernels(demo_trace_path())
    assert state["status"]["kernels"].startswith(f"{n:,} kernels")
    t = cur["tracks"]
    assert t["visible"] and not t["preparing"]
    assert {"label", "kind", "level", "events", "folded"} <= set(t["visible"][0])
    assert t["shown"] + t["hidden_in_folds"] == t["total"]
    w = cur["time_window"]
    assert 0 < w["t1_ns"] - w["t0_ns"] and w["from_start"] == "0 ns"
    docks = {d["key"]: d for d in state["docks"]}
    assert set(docks) == {s.key for s in panel_specs()}
    shown = [d for d in docks.values() if d["shown"]]
    assert shown and all(d["width"] > 50 and d["height"] > 50 for d in shown)
    assert docks["details"]["area"] == "bottom"          # beside the tables (issue 16 item 4)
    qtbot.waitUntil(lambda: not _visible_windows())


NCU = SAMPLES / "ncu-csv" / "h200-generated" / "ncu_details.csv"


@pytest.mark.skipif(not NCU.exists(), reason="needs the shared Nsight Compute sample")
def test_screenshot_json_has_the_banner_and_diagnostics(qapp, qtbot, tmp_path):
    out = tmp_path / "ncu.png"
    assert main([str(NCU), "--screenshot", str(out)]) == 0
    cur = json.loads(out.with_suffix(".json").read_text())["current"]
    assert cur["banner"]["severity"] == "info"
    assert "synthetic" in cur["banner"]["text"]
    assert "timeline.synthetic" in [d["code"] for d in cur["diagnostics"]]
    qtbot.waitUntil(lambda: not _visible_windows())


def test_failed_screenshot_json_names_the_error(qapp, qtbot, tmp_path):
    bad = tmp_path / "broken.csv"
    bad.write_text("definitely,not\na,trace\n")
    out = tmp_path / "bad.png"
    assert main([str(bad), "--screenshot", str(out)]) != 0
    cur = json.loads(out.with_suffix(".json").read_text())["current"]
    assert cur["state"] == "failed" and str(bad) in cur["error"]
    assert cur["tracks"] is None
    qtbot.waitUntil(lambda: not _visible_windows())


H200 = SAMPLES / "kineto/nvidia-h200-generated/h200_torch_kineto_trace.json.gz"


@pytest.mark.skipif(not H200.exists(), reason="needs the shared H200 Kineto sample")
def test_screenshot_json_of_a_comparison_lists_each_run(qapp, qtbot, tmp_path):
    from hipscope.cli.main import demo_trace_path

    out = tmp_path / "cmp.png"
    assert main(["--compare", str(H200), str(demo_trace_path()), "--screenshot", str(out)]) == 0
    state = json.loads(out.with_suffix(".json").read_text())
    assert state["current"] is None                      # not a trace tab
    cmp = state["comparison"]
    assert cmp["state"] == "loaded"
    assert [r["title"] for r in cmp["runs"]] == [H200.name, demo_trace_path().name]
    for run in cmp["runs"]:
        assert run["tracks"]["visible"] and run["time_window"]["t1_ns"] > run[
            "time_window"]["t0_ns"]
    assert all(not d["shown"] for d in state["docks"])   # a comparison has its own tables
    qtbot.waitUntil(lambda: not _visible_windows())
