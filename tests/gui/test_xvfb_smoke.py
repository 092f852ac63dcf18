"""The one real-display smoke test: the app opens a window through Qt's xcb platform
plugin on an X server (Xvfb) and draws a real sample. The other GUI tests run
offscreen and cannot see a missing xcb library; this one fails where `make demo`
would fail on a fresh machine."""

from __future__ import annotations

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
