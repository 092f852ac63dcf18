"""Retake the screenshots of this folder from what the app draws now.

    QT_QPA_PLATFORM=offscreen PYTHONPATH=. python docs/screenshots/retake.py [NAME ...]

Each shot opens its traces in a fresh main window at the ``hipscope --screenshot`` size
(1920x1080), waits as ``--screenshot`` does, sets the view up (selection, zoom, a
raised dock, the theme) and saves ``NAME.png`` here; what the window shows goes to
``$TMPDIR/hipscope-shots/NAME.json`` (the screenshot hook's JSON). Without names every
shot below is taken. readme_demo.png is plain ``hipscope --screenshot OUT.png --demo``.
The traces are the shared samples (``/work/shared/samples``, see PROVENANCE.md), the
test data of this repository and the benchmark set (``bench-data/set5000000``).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEventLoop, QPoint, Qt, QTimer  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from hipscope.model.view_state import Selection  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SAMPLES = Path(os.environ.get("HIPSCOPE_SAMPLES", "/work/shared/samples"))
KINETO = SAMPLES / "kineto"
BERT_AMD = KINETO / "amd-mi300x-bert-tracelens/gaunernst_bert-small-uncased__1016001.json.gz"
BERT_NV = KINETO / "nvidia-h100-bert-tracelens/gaunernst_bert-small-uncased__1016001.json.gz"
H200 = KINETO / "nvidia-h200-generated/h200_torch_kineto_trace.json.gz"
A100 = KINETO / "nvidia-a100-event-sync-hta/event_sync_trace.json.gz"
MI350 = SAMPLES / "rocprofv3-json/tracelens-908-mi350/908_results.json.gz"
SPATTER = SAMPLES / "legacy-rocprof/spatter-kernel-stats/results.csv"
V3CSV = SAMPLES / "rocprofv3-csv/sdk-docs-2025-08-rocm7.0"
NCU = SAMPLES / "ncu-csv/h200-generated/ncu_details.csv"
NCU_RAW = SAMPLES / "ncu-csv/h200-generated/ncu_raw.csv"
COMPUTE = SAMPLES / "rocprof-compute/vcopy-MI300X-rocprofv2"
OPS = ROOT / "tests/data/ops"
SYNC = ROOT / "tests/data/gpu/section5/sync/trace.json.gz"
SET5M = Path(os.environ.get("HIPSCOPE_BENCH_DATA", ROOT / "bench-data")) / "set5000000"


def spin(ms: int) -> None:
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def settle(w, limit_s: float = 600) -> None:
    """Until every tab has loaded and its timelines have their rows."""
    t = time.time()
    while time.time() - t < limit_s:
        tabs = w.tab_list()
        if all(getattr(x, "state", "") != "loading" for x in tabs) and all(
                tl.model is not None and not tl.preparing
                for x in tabs for tl in getattr(x, "timelines", [])
                if getattr(x, "state", "") == "loaded"):
            return
        spin(100)


# --------------------------------------------------------------------------- set-ups
def longest(tab, table: str = "kernels") -> int:
    t = getattr(tab.document.trace, table)
    return int((t.numpy("end") - t.numpy("start")).argmax())


def select(w, tab, table: str = "kernels", row: int | None = None, zoom: float = 40) -> None:
    """Select an event (the longest kernel by default) and show it ``zoom`` times its
    length wide, its launch arrow in sight."""
    row = longest(tab, table) if row is None else row
    tl = tab.timeline
    tab.document.reveal(Selection(table, row))
    s, e = tl.span_of(table, row)
    pad = max((e - s) * zoom / 2, 20_000)
    tl.set_window(s - pad, e + pad)


def raise_dock(w, key: str) -> None:
    dock = w.docks[key]
    dock.show()
    dock.raise_()


def ruler(tab, a: float, b: float) -> None:
    """Measure the part [a, b] (fractions of the window) with the ruler."""
    tl = tab.timeline
    t0, t1 = tab.document.view_state.window
    tl.measure(int(t0 + (t1 - t0) * a), int(t0 + (t1 - t0) * b))


def area(tab, rows: tuple[int, int], a: float, b: float) -> None:
    """Shift+drag over the shown tracks ``rows`` (first, last) and the part [a, b]."""
    tl = tab.timeline
    tracks = [int(r) for r in tl.layout.rows if tl.model.rows[int(r)].kind == "track"]
    r = tl.track_rect
    ya, yb = tl.row_y(tracks[rows[0]]), tl.row_y(tracks[rows[1]])
    pa = QPoint(int(r.x() + r.width() * a), ya[0] + ya[1] // 2)
    pb = QPoint(int(r.x() + r.width() * b), yb[0] + yb[1] // 2)
    shift = Qt.KeyboardModifier.ShiftModifier
    QTest.mousePress(tl, Qt.MouseButton.LeftButton, shift, pa)
    QTest.mouseMove(tl, pb)
    QTest.mouseRelease(tl, Qt.MouseButton.LeftButton, shift, pb)


def zoom_part(tab, a: float, b: float) -> None:
    tl = tab.timeline
    t0, t1 = tab.document.view_state.window
    tl.set_window(t0 + (t1 - t0) * a, t0 + (t1 - t0) * b)


def find(w, text: str) -> None:
    """Ctrl+F, then ``text``: the count, the matches outlined, the others dimmed."""
    w.show_find_bar()
    w.find_edit.setText(text)


def colour(tab, mode: str) -> None:
    tab.document.view_state.set_color_mode(mode)


def delta_colours(tab) -> None:
    """Tick a comparison's "Colour kernels by delta"."""
    from PySide6.QtWidgets import QCheckBox

    (box,) = [b for b in tab.findChildren(QCheckBox) if "by delta" in b.text()]
    box.setChecked(True)


def api_call(w, tab) -> None:
    """Select the longest API call (Details shows it, with the kernel it launched)."""
    tab.document.reveal(Selection("api", longest(tab, "api")))


def bad_file() -> list[Path]:
    p = Path(tempfile.gettempdir()) / "hipscope-shots" / "truncated_results.json"
    p.parent.mkdir(exist_ok=True)
    p.write_text('{"rocprofiler-sdk-tool": [{"metadata": {"pid": 1}, "buffer_records": {')
    return [p]


# --------------------------------------------------------------------------- the shots
Setup = Callable[..., None]


def _demo() -> list[Path]:
    from hipscope.cli.main import demo_trace_path

    return [demo_trace_path()]


CROPS = {"app_details_api": "details"}     # shots of one dock, not the whole window
SHOTS: dict[str, tuple[str, Callable[[], list[Path]], bool, Setup | None]] = {
    # name: (theme, paths, compare, set-up(window, tab))
    "app_demo": ("dark", _demo, False, None),
    "app_demo_kernels_details": ("light", _demo, False, lambda w, t: (
        select(w, t), raise_dock(w, "kernels"))),
    "app_empty": ("light", lambda: [], False, None),
    "app_nvidia_h200_selection": ("light", lambda: [H200], False, lambda w, t: select(w, t)),
    "app_spatter_kernels": ("light", lambda: [SPATTER], False,
                            lambda w, t: raise_dock(w, "kernels")),
    "app_908_dark_kernels": ("dark", lambda: [MI350], False,
                             lambda w, t: raise_dock(w, "kernels")),
    "app_908_dark_summary": ("dark", lambda: [MI350], False,
                             lambda w, t: raise_dock(w, "summary")),
    "compare_amd_vs_nvidia_bert": ("light", lambda: [BERT_AMD, BERT_NV], True, None),
    "compare_eager_graph_step1": ("light", lambda: [OPS / "eager.json.gz",
                                                    OPS / "cudagraphs.json.gz"], True, None),
    "heatmap_ncu_details_zscore": ("light", lambda: [NCU], False,
                                   lambda w, t: raise_dock(w, "counters")),
    "heatmap_ncu_raw_per_kernel": ("light", lambda: [NCU_RAW], False,
                                   lambda w, t: raise_dock(w, "counters")),
    "heatmap_rocprof_compute_mi300x": ("light", lambda: [COMPUTE], False,
                                       lambda w, t: raise_dock(w, "counters")),
    "queue_delay_launch_bound": ("light", lambda: [SYNC], False,
                                 lambda w, t: raise_dock(w, "queue_delay")),
    "queue_delay_multi_stream_zoom": ("light", lambda: [H200], False, lambda w, t: (
        zoom_part(t, 0.3, 0.5), raise_dock(w, "queue_delay"))),
    "timeline_kineto_full": ("light", lambda: [A100], False, None),
    "timeline_kineto_selection_arrow": ("light", lambda: [A100], False,
                                        lambda w, t: select(w, t, zoom=12)),
    "timeline_rocprofv3_duration": ("light", lambda: [V3CSV], False,
                                    lambda w, t: colour(t, "duration")),
    "timeline_rocprofv3_full_ruler": ("light", lambda: [V3CSV], False, lambda w, t: (
        ruler(t, 0.2, 0.6), raise_dock(w, "area"))),
    "timeline_rocprofv3_zoom_find": ("light", lambda: [V3CSV], False, lambda w, t: (
        zoom_part(t, 0.3, 0.45), find(w, "kernel"))),
    "timeline_area_selection": ("light", _demo, False, lambda w, t: (
        area(t, (0, 1), 0.3, 0.8), raise_dock(w, "area"))),
    "tuner_sync_bound": ("light", lambda: [SYNC], False, lambda w, t: raise_dock(w, "tuner")),
    "tuner_eager": ("light", lambda: [OPS / "eager.json.gz"], False,
                    lambda w, t: raise_dock(w, "tuner")),
    "app_error": ("light", bad_file, False, None),
    "app_details_api": ("light", lambda: [H200], False, api_call),
    "compare_eager_graph_delta": ("light", lambda: [OPS / "eager.json.gz",
                                                    OPS / "cudagraphs.json.gz"], True,
                                  lambda w, t: delta_colours(t)),
    "timeline_synthetic_5M_full": ("dark", lambda: [SET5M], False, None),
    "timeline_synthetic_5M_zoom": ("dark", lambda: [SET5M], False, lambda w, t: (
        zoom_part(t, 0.4, 0.4002), area(t, (0, 5), 0.2, 0.6), raise_dock(w, "area"))),
}


def take(name: str, out_dir: Path) -> int:
    """One shot (see SHOTS); returns the screenshot's exit status."""
    from PySide6.QtWidgets import QApplication

    from hipscope.app.main import SCREENSHOT_SIZE, _screenshot  # noqa: PLC2701
    from hipscope.app.main_window import MainWindow
    from hipscope.app.theme import apply_theme

    theme, paths, compare, setup = SHOTS[name]
    app = QApplication.instance() or QApplication(sys.argv[:1])
    apply_theme(app, theme)
    w = MainWindow(persist=False)
    w.resize(*SCREENSHOT_SIZE)
    w.show()
    files = paths()
    if compare:
        w.compare_paths(files)
    elif files:
        w.open_paths(files)
    settle(w)
    tab = w.tabs.currentWidget() if compare else w.current_tab()
    if setup is not None and tab is not None:
        setup(w, tab)
        spin(300)
        settle(w)
        spin(1500)                  # the docks' workers (Range counts, tuner proposals)
    try:
        rc = _screenshot(app, w, out_dir / f"{name}.png")
        if name in CROPS:
            w.docks[CROPS[name]].grab().save(str(out_dir / f"{name}.png"))
    finally:
        w.close()
        w.deleteLater()
    (out_dir / f"{name}.png").replace(HERE / f"{name}.png")
    return rc


def main(names: list[str]) -> int:
    out_dir = Path(tempfile.gettempdir()) / "hipscope-shots"
    out_dir.mkdir(exist_ok=True)
    worst = 0
    for name in names or list(SHOTS):
        t = time.time()
        rc = take(name, out_dir)
        print(f"{name}: rc {rc}, {time.time() - t:.1f} s", flush=True)
        worst = max(worst, rc)
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
