"""Timeline budgets: `python -m benchmarks.timeline [--kernels 5000000] [--json]`.

Builds a synthetic trace shaped like a real one (4 GPUs x 2 queues x 4 streams = 32
kernel rows, ~300 long mangled names with a Zipf-like frequency, lognormal
durations, short launch gaps, idle bursts at sync points, a few concurrent
kernels), opens it in a 1920x1080 offscreen :class:`TimelineView`, and measures
medians of repeated synchronous repaints:

* ``full_view_ms`` (budget 20 ms), ``zoom_1pct_ms`` (20 ms), ``pan_ms`` (20 ms: a new
  window every frame, 1 % zoom), ``pan_full_ms`` (panning at full view);
* ``bargraphitem_full_view_ms``: pyqtgraph's BarGraphItem with the same rectangles
  at the same size (the timeline must be at least 8x faster);
* ``render_cache_bytes_per_kernel`` (budget 50);
* ``prepare_s``: rows + colour keys (runs in a worker in the app).

Each frame's primitive counts are checked so that a frame that painted nothing
cannot pass.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

BUDGETS = {"full_view_ms": 20.0, "zoom_1pct_ms": 20.0, "pan_ms": 20.0,
           "render_cache_bytes_per_kernel": 50.0}
SPEEDUP = 8.0

_WORDS = ("gemm", "softmax", "layer_norm", "elementwise", "reduce", "attention", "conv",
          "bias_gelu", "dropout", "transpose", "copy", "adam", "embedding", "all_reduce",
          "cat", "index_select", "scatter", "gather", "rms_norm", "rope")


def synthetic_names(n: int = 300, seed: int = 1) -> list[str]:
    """Long kernel names like real ones (Itanium-mangled templates, CK, rocBLAS...)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        w = _WORDS[i % len(_WORDS)]
        kind = i % 3
        if kind == 0:
            inner = f"{w}_kernel_impl_{i}"
            out.append(f"_ZN2at6native{len('vectorized_' + inner)}vectorized_{inner}ILi4EZNS0_"
                       f"23gpu_kernel_impl_nocastINS0_13BinaryFunctorIfffNS0_15binary_"
                       f"internal10MulFunctorIfEEEEEEvRNS_18TensorIteratorBaseERKT_EUliE_"
                       f"St5arrayIPcLm{rng.integers(2, 9)}EEEEviS6_T1_")
        elif kind == 1:
            out.append(f"void ck::kernel_{w}_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3"
                       f"<ck::tensor_layout::gemm::RowMajor, ck::half_t, float, {64 << (i % 3)},"
                       f" {i}>, true, 2>(ck::Argument)")
        else:
            out.append(f"Cijk_Alik_Bljk_HHS_BH_MT{64 * (1 + i % 4)}x{32 * (1 + i % 5)}x64_"
                       f"MI16x16x16x1_SN_{w}_{i}_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS3_ASE_ASGT_ASAE01")
    return out


def synthetic_trace(n_kernels: int, gpus: int = 4, queues: int = 2, streams: int = 4,
                    seed: int = 0, with_api: bool = False):
    """A realistic synthetic trace of ``n_kernels`` over gpus*queues*streams rows."""
    from hipscope.model import Trace, build_table, categorical

    rng = np.random.default_rng(seed)
    names = synthetic_names()
    rows = gpus * queues * streams
    per = np.full(rows, n_kernels // rows)
    per[: n_kernels - per.sum()] += 1
    weights = 1.0 / np.arange(1, len(names) + 1) ** 1.1
    weights /= weights.sum()
    starts, ends, dev, que, stm = [], [], [], [], []
    base = 1_700_000_000_000_000_000
    for r in range(rows):
        n = int(per[r])
        dur = np.clip(rng.lognormal(np.log(15_000), 1.2, n), 1_000, 20_000_000).astype(np.int64)
        gap = rng.exponential(2_000, n).astype(np.int64) + 300
        burst = rng.random(n) < 1 / 2000                     # idle gaps at sync points
        gap[burst] += rng.integers(500_000, 5_000_000, int(burst.sum()))
        conc = rng.random(n) < 0.005                         # a few concurrent kernels
        gap[conc] = -np.minimum(dur[conc], 5_000)
        s = base + np.cumsum(np.r_[0, (dur + gap)[:-1]])
        starts.append(s)
        ends.append(s + dur)
        g, rem = divmod(r, queues * streams)
        q, st = divmod(rem, streams)
        dev.append(np.full(n, g, np.int16))
        que.append(np.full(n, q, np.int32))
        stm.append(np.full(n, g * 100 + q * streams + st, np.int32))
    start = np.concatenate(starts)
    order = np.argsort(start, kind="stable")           # the file order: by time
    start = start[order]
    codes = rng.choice(len(names), size=n_kernels, p=weights).astype(np.int32)
    cols = {"name": categorical(codes, names), "device": np.concatenate(dev)[order],
            "start": start, "end": np.concatenate(ends)[order],
            "queue": np.concatenate(que)[order], "stream": np.concatenate(stm)[order]}
    kernels = build_table("kernels", cols)
    devices = build_table("devices", {"index": np.arange(gpus, dtype=np.int16),
                                      "name": ["AMD Instinct MI300X"] * gpus})
    return Trace(kernels=kernels, devices=devices,
                 meta={"format": "synthetic", "sources": [], "clock": "synthetic"})


CPU_MS: dict[str, float] = {}


def _median_repaint(widget, frames: int, before=None, name: str = "") -> tuple[float, object]:
    """Median wall time of synchronous repaints (and, in CPU_MS, the median GUI-thread
    CPU time: the same figure without the waits of a machine shared with others)."""
    times, cpu, stats = [], [], None
    for i in range(frames):
        if before is not None:
            before(i)
        t, c = time.perf_counter(), time.thread_time()
        widget.repaint()
        cpu.append((time.thread_time() - c) * 1e3)
        times.append((time.perf_counter() - t) * 1e3)
        stats = getattr(widget, "stats", None)
    if name:
        CPU_MS[name] = round(statistics.median(cpu), 2)
    return statistics.median(times), stats


def _check_painted(stats, what: str) -> None:
    if stats is None or stats.rows < 32 or stats.density_columns + stats.rects < 1000:
        raise SystemExit(f"{what}: the frame painted too little ({stats}); not measured")


def bargraph_ms(trace, width: int, height: int, frames: int = 3) -> float:
    """pyqtgraph BarGraphItem with the same rectangles, same size: median repaint."""
    import pyqtgraph as pg

    from hipscope.analysis import lod

    model = lod.build_model(trace, "queue")
    x0, x1, y = [], [], []
    for i, r in enumerate(model.rows):
        if r.events is not None:
            x0.append(r.events.start - model.t_min)
            x1.append(r.events.end - model.t_min)
            y.append(np.full(len(r.events), i, float))
    x0 = np.concatenate(x0).astype(float)
    x1 = np.concatenate(x1).astype(float)
    y = np.concatenate(y)
    pw = pg.PlotWidget()
    pw.resize(width, height)
    item = pg.BarGraphItem(x0=x0, x1=x1, y0=y, height=0.8, brush=pg.mkBrush(80, 160, 220),
                           pen=None)
    pw.addItem(item)
    pw.show()
    pw.setXRange(0, float(model.t_max - model.t_min), padding=0)
    painted = [0]
    paint = item.paint

    def counting_paint(*args):
        painted[0] += 1
        return paint(*args)

    item.paint = counting_paint
    app = pg.QtWidgets.QApplication.instance()
    app.processEvents()
    viewport = pw.viewport()
    viewport.repaint()                        # warm-up (builds the rect arrays)
    ms, _ = _median_repaint(viewport, frames, None, "bargraphitem_full_view")
    pw.close()
    if painted[0] < frames:
        raise SystemExit(f"BarGraphItem painted {painted[0]} times in {frames} repaints")
    return ms


def run(n_kernels: int, frames: int = 15, bargraph: bool = True) -> dict:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from hipscope.analysis import lod
    from hipscope.qt.document import Document
    from hipscope.views.timeline import TimelineView

    app = QApplication.instance() or QApplication(sys.argv[:1])
    t = time.perf_counter()
    trace = synthetic_trace(n_kernels)
    build_s = time.perf_counter() - t
    t = time.perf_counter()
    model = lod.build_model(trace, "queue")
    scale = lod.color_scale(trace, model, "name")
    lod.apply_color_keys(model, lod.color_keys(trace, model, scale))
    prepare_s = time.perf_counter() - t
    del model
    doc = Document()
    view = TimelineView(doc)
    view.resize(1920, 1080)
    view.show()
    doc.set_trace(trace)
    deadline = time.monotonic() + 600
    while view.model is None and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)
    lo, hi = doc.full_range()
    span = hi - lo
    out = {"kernels": n_kernels, "build_trace_s": round(build_s, 2),
           "prepare_s": round(prepare_s, 2)}
    view.fit()
    view.repaint()
    out["full_view_ms"], st = _median_repaint(view, frames, None, "full_view")
    _check_painted(st, "full view")
    out["full_view_primitives"] = {"rows": st.rows, "density_columns": st.density_columns,
                                   "rects": st.rects, "labels": st.labels}

    def zoom(i):
        c = lo + span // 2 + (i % 2)
        doc.view_state.set_window(c - span // 200, c + span // 200)

    out["zoom_1pct_ms"], st = _median_repaint(view, frames, zoom, "zoom_1pct")
    _check_painted(st, "1% zoom")
    out["zoom_1pct_primitives"] = {"rows": st.rows, "density_columns": st.density_columns,
                                   "rects": st.rects, "labels": st.labels}
    c0 = lo + span // 2 - span // 200

    def pan(i):
        a = c0 + i * span // 5000
        doc.view_state.set_window(a, a + span // 100)

    out["pan_ms"], st = _median_repaint(view, frames, pan, "pan")
    _check_painted(st, "pan")

    def pan_full(i):
        doc.view_state.set_window(lo + i * span // 50, hi + i * span // 50)

    out["pan_full_ms"], st = _median_repaint(view, frames, pan_full, "pan_full")
    _check_painted(st, "pan at full view")

    def deep(i):
        c = lo + span // 3 + i * 1000
        doc.view_state.set_window(c, c + 200_000)

    out["zoom_200us_ms"], st = _median_repaint(view, frames, deep, "zoom_200us")
    out["zoom_200us_primitives"] = {"rows": st.rows, "rects": st.rects, "labels": st.labels}
    out["render_cache_bytes_per_kernel"] = round(view.model.nbytes() / max(n_kernels, 1), 1)
    view.close()
    if bargraph:
        out["bargraphitem_full_view_ms"] = bargraph_ms(trace, 1920, 1080)
        out["speedup_vs_bargraphitem"] = round(
            out["bargraphitem_full_view_ms"] / max(out["full_view_ms"], 1e-6), 1)
    for k in ("full_view_ms", "zoom_1pct_ms", "pan_ms", "pan_full_ms", "zoom_200us_ms",
              "bargraphitem_full_view_ms"):
        if k in out:
            out[k] = round(out[k], 2)
    out["gui_thread_cpu_ms"] = dict(CPU_MS)
    out["load_average"] = round(os.getloadavg()[0], 2)
    ok = all(out[k] <= v for k, v in BUDGETS.items())
    if bargraph:
        ok &= out["speedup_vs_bargraphitem"] >= SPEEDUP
    out["within_budget"] = bool(ok)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=5_000_000)
    ap.add_argument("--frames", type=int, default=15)
    ap.add_argument("--no-bargraph", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    out = run(args.kernels, args.frames, not args.no_bargraph)
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:32s} {v}")
    return 0 if out["within_budget"] else 1


if __name__ == "__main__":
    sys.exit(main())
