"""GUI test setup: offscreen Qt, settings in a temporary place, a tiny trace, and the
main windows the tests drive (:func:`shown_window`, the ``make_window`` and
``tiny_window`` factories, :func:`open_loaded`)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from hipscope.model import Trace, build_table  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path_factory, request):
    """QSettings go to a temporary ini file per test; the user's are never touched."""
    from PySide6.QtCore import QCoreApplication, QSettings

    path = tmp_path_factory.mktemp("settings")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(path))
    QCoreApplication.setOrganizationName("hipscope-test")
    QCoreApplication.setApplicationName(f"hipscope-{request.node.name[:40]}")
    yield path


def make_tiny_trace(n: int = 60, seed: int = 0) -> Trace:
    """A small, fully linked trace: 2 GPUs, 3 streams, API launches for every kernel."""
    rng = np.random.default_rng(seed)
    names = ["gemm_kernel", "elementwise_add", "softmax_fwd", "all_reduce", "void at::xyz<4>"]
    t0 = 1_000_000_000
    api_start = t0 + np.cumsum(rng.integers(1_000, 20_000, n))
    api_end = api_start + rng.integers(2_000, 8_000, n)
    k_start = api_end + rng.integers(-1_000, 50_000, n)
    dur = rng.integers(800, 2_000_000, n)
    dur[3] = dur[7]                                 # ties, to check the stable sort
    codes = rng.integers(0, len(names), n)
    api = build_table("api", {
        "name": ["hipLaunchKernel"] * n, "domain": ["HIP_RUNTIME_API"] * n,
        "start": api_start, "end": api_end, "pid": np.full(n, 42, np.int32),
        "tid": np.where(np.arange(n) % 2, 43, 44).astype(np.int64),
        "correlation_id": np.arange(1, n + 1, dtype=np.int64),
    })
    stream = np.where(np.arange(n) % 3 == 0, 7, np.where(np.arange(n) % 3 == 1, 8, 9))
    kernels = build_table("kernels", {
        "name": [names[c] for c in codes],
        "device": (np.arange(n) % 2).astype(np.int16),
        "start": k_start, "end": k_start + dur,
        "queue": (stream - 7).astype(np.int32), "stream": stream.astype(np.int32),
        "pid": np.full(n, 42, np.int32), "tid": np.full(n, 43, np.int64),
        "correlation_id": np.arange(1, n + 1, dtype=np.int64),
        "api_index": np.arange(n, dtype=np.int32),
        "grid_x": np.full(n, 4096, np.int32), "grid_y": np.ones(n, np.int32),
        "grid_z": np.ones(n, np.int32), "block_x": np.full(n, 256, np.int16),
        "block_y": np.ones(n, np.int16), "block_z": np.ones(n, np.int16),
        "lds_bytes": np.full(n, 16384, np.int32),
    })
    devices = build_table("devices", {
        "index": np.array([0, 1], np.int16), "name": ["AMD Instinct MI300X"] * 2,
        "vendor": ["AMD"] * 2, "arch": ["gfx942"] * 2,
    })
    return Trace(kernels=kernels, api=api, devices=devices,
                 meta={"format": "tiny-test", "sources": ["tiny"], "clock": "test"})


@pytest.fixture
def tiny_trace() -> Trace:
    return make_tiny_trace()


# --------------------------------------------------------------------------- windows


def tiny_loader(paths, progress, cancelled) -> Trace:
    """A loader for injected windows: the tiny trace (120 kernels), whatever the path."""
    return make_tiny_trace(120)


def stand_in(tmp_path: Path, name: str = "tiny.trace") -> Path:
    """A file to open in a window whose injected loader builds the trace."""
    p = tmp_path / name
    p.write_text("stand-in path; the injected loader builds the trace")
    return p


def shown_window(qtbot, size: tuple[int, int] | None = (1600, 1000), expose: bool = False,
                 **kw):
    """A MainWindow (``kw`` to it) that qtbot closes after the test, resized to ``size``
    (None: as Qt makes it) and shown; with ``expose``: on screen before it returns."""
    from hipscope.app.main_window import MainWindow

    w = MainWindow(**kw)
    qtbot.addWidget(w)
    if size is not None:
        w.resize(*size)
    w.show()
    if expose:
        qtbot.waitExposed(w)
    return w


def open_loaded(qtbot, w, path: Path, timeout: int = 20_000):
    """Open ``path`` in a tab of ``w`` and wait until it has loaded; the tab."""
    (tab,) = w.open_paths([path])
    qtbot.waitUntil(lambda: tab.state == "loaded", timeout=timeout)
    return tab


@pytest.fixture
def make_window(qtbot):
    """A factory of :func:`shown_window`; each window made is closed after the test,
    with no worker of its job runner left behind."""
    made = []

    def make(**kw):
        made.append(shown_window(qtbot, **kw))
        return made[-1]

    yield make
    for w in made:
        w.close()
        assert w.runner.active_count() == 0          # no worker left behind


@pytest.fixture
def tiny_window(make_window, qtbot, tmp_path):
    """A factory: ``make(size=(1600, 1000), active=False) -> (window, tab)``, an exposed
    window (with ``active``: the active one) with the tiny trace loaded in a tab."""
    from PySide6.QtWidgets import QApplication

    def make(size: tuple[int, int] = (1600, 1000), active: bool = False):
        w = make_window(loader=tiny_loader, persist=False, size=size, expose=True)
        if active:
            w.activateWindow()
            qtbot.waitUntil(lambda: QApplication.activeWindow() is w)
        return w, open_loaded(qtbot, w, stand_in(tmp_path))

    return make
