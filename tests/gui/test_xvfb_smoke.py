"""The one real-display smoke test: the app opens a window through Qt's xcb platform
plugin on an X server (Xvfb) and draws a real sample. The other GUI tests run
offscreen and cannot see a missing xcb library; this one fails where `make demo`
would fail on a fresh machine."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys

import pytest
from PySide6.QtGui import QImage

from tests.conftest import SAMPLES

SAMPLE = SAMPLES / "kineto/nvidia-h200-generated/h200_torch_kineto_trace.json.gz"

pytestmark = pytest.mark.skipif(shutil.which("Xvfb") is None,
                                reason="Xvfb is not installed (scripts/install-system-deps.sh)")


@pytest.fixture
def xvfb_display():
    """Start Xvfb on a display it picks itself (-displayfd), yield ':N', stop it."""
    r, w = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "1920x1080x24",
                             "-nolisten", "tcp"], pass_fds=(w,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.close(w)
    try:
        ready, _, _ = select.select([r], [], [], 60)
        number = os.read(r, 64).decode().strip() if ready else ""
        if not number:
            proc.kill()
            pytest.fail(f"Xvfb did not start: {proc.communicate(timeout=10)[1]!r}")
        yield f":{number}"
    finally:
        os.close(r)
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stderr:
            proc.stderr.close()


def _distinct_colours(img: QImage, step: int = 7) -> int:
    return len({img.pixel(x, y) for x in range(0, img.width(), step)
                for y in range(0, img.height(), step)})


def test_app_draws_a_sample_in_a_real_x_window(xvfb_display, tmp_path):
    out = tmp_path / "xcb.png"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QT_", "WAYLAND"))}
    env.update(QT_QPA_PLATFORM="xcb", DISPLAY=xvfb_display)
    r = subprocess.run([sys.executable, "-m", "hipscope", "--screenshot", str(out), str(SAMPLE)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    img = QImage(str(out))
    assert not img.isNull(), f"no PNG written: {r.stderr[-2000:]}"
    assert img.width() >= 1200 and img.height() >= 700, (img.width(), img.height())
    # a window that drew kernels, tracks and tables has many colours; a blank one has 1-3
    assert _distinct_colours(img) >= 20


OTHER = SAMPLES / "kineto/nvidia-h100-bert-tracelens"


def test_every_panel_and_tab_kind_draws_in_a_real_x_window(xvfb_display, tmp_path):
    """Issue 16 item 3: each dock (every registered panel and Runs) and each tab kind
    (trace, comparison, error page, the empty window) opened, grabbed and closed."""
    from hipscope.qt.panels import panel_specs

    env = {k: v for k, v in os.environ.items() if not k.startswith(("QT_", "WAYLAND"))}
    env.update(QT_QPA_PLATFORM="xcb", DISPLAY=xvfb_display)
    other = next(p for p in sorted(OTHER.iterdir()) if p.name.endswith((".json", ".json.gz")))
    r = subprocess.run([sys.executable, "-m", "tests.gui.xvfb_tour", str(tmp_path), str(SAMPLE),
                        str(other)], env=env, capture_output=True, text=True, timeout=500)
    assert r.returncode == 0, r.stderr[-3000:]
    tour = json.loads((tmp_path / "tour.json").read_text())
    assert tour["states"] == {"trace": "loaded", "compare": "loaded", "failed": "failed"}
    assert tour["tabs_left"] == 0
    views = tour["views"]
    expected = {f"dock_{s.key}" for s in panel_specs()} | {
        "dock_runs", "tab_trace", "tab_compare", "tab_failed", "window_empty"}
    assert set(views) == expected
    for name, v in views.items():
        assert v["visible"], f"{name} was not shown"
        assert v["width"] >= 200 and v["height"] >= 80, (name, v)
        # text on a background has several colours; a blank view has one or two
        assert v["colours"] >= 3, f"{name} drew a blank"
    for name in ("tab_trace", "tab_compare"):
        assert views[name]["colours"] >= 20, f"{name} shows no data"
