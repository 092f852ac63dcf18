"""`hipscope --screenshot`: loads, draws, saves a PNG, exits 0; a bad file exits non-zero."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QStyleFactory

from hipscope.cli.main import main


@pytest.fixture(autouse=True)
def _restore_style(qapp):
    """run_app themes the shared QApplication (Fusion + palette): undo it for the
    tests that follow."""
    style, palette = qapp.style().name(), qapp.palette()
    yield
    qapp.setStyle(QStyleFactory.create(style))
    qapp.setPalette(palette)


def _visible_windows():
    return [w for w in QApplication.topLevelWidgets() if w.isVisible()]


def test_screenshot_in_process(qapp, qtbot, tmp_path):
    out = tmp_path / "shot.png"
    assert main(["--demo", "--screenshot", str(out)]) == 0
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
