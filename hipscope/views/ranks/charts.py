"""The Ranks tab's charts (pyqtgraph): the rank x time utilisation heatmap, step time per
rank and the collectives' skew over time. Each shows plain data from the overview,
gives a tooltip for what is under the mouse and emits ``activated`` on a double-click
(the payload says which rank / collective); the tab turns that into an intent."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPalette
from PySide6.QtWidgets import QToolTip

from ...model.units import fmt_duration
from ...ranks.model import JobOverview

HIT_PX = 8                     # how near (pixels) the mouse must be to a point
LABEL_GAP_PX = 10              # between two rank labels on an axis
STRAGGLER_RGB = "#e8590c"      # points / boxes of the worst straggler
OTHER_RGB = "#4c6ef5"
DENSE_RANKS = 128             # more ranks than this: bands, not a box per rank


class DurationAxis(pg.AxisItem):
    """Values in seconds, labelled with the one duration text."""

    def __init__(self, orientation: str):
        super().__init__(orientation)
        self.enableAutoSIPrefix(False)

    def tickStrings(self, values, scale, spacing):  # noqa: N802 (pyqtgraph name)
        return [fmt_duration(v * scale * 1e9, tick_digits(values, spacing)) for v in values]


def tick_digits(values, spacing: float) -> int:
    """Significant digits that tell ticks ``spacing`` apart (3 at least): ticks 2 µs
    apart near 11.3 ms need 5 ('11.302 ms'), not 3 (every tick '11.3 ms'). Worked out
    for a fifth of the spacing, so that the major and minor tick levels (labelled in
    separate calls) agree: '11.40 ms' beside '11.30 ms', not '11.4 ms'."""
    top = max((abs(float(v)) for v in values), default=0.0)
    if top <= 0 or spacing <= 0:
        return 3
    return max(3, min(9, math.ceil(math.log10(top / (spacing / 5))) + 1))


def label_step(px_per_row: float, need_px: float) -> int:
    """Every how many rows a label fits: 1, 2, 5, 10, 20, 50, ..."""
    want = need_px / max(px_per_row, 1e-9)
    step = 1
    while step < want:
        step = step * 5 // 2 if str(step).startswith("2") else step * 2
    return step


class RankAxis(pg.AxisItem):
    """Row or column i is rank ``ranks[i]``; as many labels as fit without overlapping."""

    def __init__(self, orientation: str):
        super().__init__(orientation)
        self.ranks: list[int] = []

    def set_ranks(self, ranks: list[int]) -> None:
        self.ranks = list(ranks)
        self.picture = None                 # pyqtgraph's cached drawing
        self.update()

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 (pyqtgraph names)
        n = len(self.ranks)
        if not n or size <= 0:
            return []
        minVal, maxVal = sorted((minVal, maxVal))     # noqa: N806 (an inverted axis)
        fm = QFontMetrics(self.style.get("tickFont") or QFont())
        need = fm.height() if self.orientation in ("left", "right") else \
            fm.horizontalAdvance(str(max(self.ranks, key=abs)))
        step = label_step(size / max(maxVal - minVal, 1e-9), need + LABEL_GAP_PX)
        lo, hi = max(0, int(np.ceil(minVal))), min(n - 1, int(np.floor(maxVal)))
        return [(float(step), [float(v) for v in range(-(-lo // step) * step, hi + 1, step)])]

    def tickStrings(self, values, scale, spacing):
        return [str(self.ranks[int(v)]) if 0 <= int(v) < len(self.ranks) else ""
                for v in values]


def straggler_note(straggler: int | None, tail: str = "") -> str:
    """What the orange marks mean, for a chart's title."""
    return "" if straggler is None else f" — orange: rank {straggler} (the worst straggler){tail}"


class RankChart(pg.PlotWidget):
    """A chart over ranks: themed from the palette, no mouse zoom; subclasses say what is
    at a point (:meth:`hit`: tooltip text and payload, or None)."""

    activated = Signal(object)

    def __init__(self, title: str, axes: dict | None = None, parent=None):
        super().__init__(parent, axisItems=axes or {})
        pal = self.palette()
        fg = pal.color(QPalette.ColorRole.WindowText)
        self.setBackground(pal.color(QPalette.ColorRole.Base))
        self.setMenuEnabled(False)
        self.setMouseEnabled(x=False, y=False)
        self.hideButtons()
        self.title = title
        self.plotItem.setTitle(title, color=fg.name())
        for ax in ("left", "bottom"):
            self.getAxis(ax).setPen(pg.mkPen(fg))
            self.getAxis(ax).setTextPen(pg.mkPen(fg))
        self.scene().sigMouseMoved.connect(self._on_scene_mouse_moved)
        self.scene().sigMouseClicked.connect(self._on_scene_mouse_clicked)
        self.setMinimumHeight(160)

    def hit(self, x: float, y: float) -> tuple[str, object] | None:
        return None

    def set_title_note(self, note: str) -> None:
        fg = self.palette().color(QPalette.ColorRole.WindowText)
        self.plotItem.setTitle(self.title + note, color=fg.name())

    def view_point(self, scene_pos: QPointF) -> tuple[float, float] | None:
        vb = self.plotItem.vb
        if not vb.sceneBoundingRect().contains(scene_pos):
            return None
        p = vb.mapSceneToView(scene_pos)
        return p.x(), p.y()

    def activate_at(self, x: float, y: float) -> bool:
        """Emit ``activated`` for what is at view point (x, y); False: nothing there."""
        got = self.hit(x, y)
        if got is not None:
            self.activated.emit(got[1])
        return got is not None

    def _on_scene_mouse_moved(self, scene_pos: QPointF) -> None:
        p = self.view_point(scene_pos)
        got = self.hit(*p) if p is not None else None
        text = got[0] if got is not None else ""
        self.setToolTip(text)
        if text:
            QToolTip.showText(self.mapToGlobal(self.mapFromScene(scene_pos)), text, self)

    def _on_scene_mouse_clicked(self, ev) -> None:
        if ev.double() and (p := self.view_point(ev.scenePos())) is not None:
            self.activate_at(*p)

    def near(self, x: float, y: float, xs: np.ndarray, ys: np.ndarray) -> int | None:
        """The index of the point of (xs, ys) within ``HIT_PX`` of (x, y), if any."""
        if not len(xs):
            return None
        pw, ph = self.plotItem.vb.viewPixelSize()
        d = np.hypot((xs - x) / max(pw, 1e-30), (ys - y) / max(ph, 1e-30))
        i = int(np.argmin(d))
        return i if d[i] <= HIT_PX else None


class UtilHeatmap(RankChart):
    """Rank x time: one row per rank (by number, top first), one column per grid bin,
    coloured by the GPU's busy fraction; ``activated((rank, column))``."""

    def __init__(self, parent=None):
        super().__init__("GPU busy per rank over time",
                         {"bottom": DurationAxis("bottom"), "left": RankAxis("left")}, parent)
        self.setLabel("left", "rank")
        self.image = pg.ImageItem()
        self.image.setColorMap(pg.colormap.get("viridis"))
        self.addItem(self.image)
        self.plotItem.invertY(True)
        self.setLabel("bottom", "time since the job's first bin")
        self.bar = pg.ColorBarItem(values=(0, 1), colorMap=pg.colormap.get("viridis"),
                                   label="GPU busy (fraction of each bin)", interactive=False)
        self.bar.setImageItem(self.image, insert_in=self.plotItem)
        self.matrix = np.zeros((0, 0))
        self.ranks: list[int] = []
        self.bin_s = 1.0

    def set_overview(self, ov: JobOverview) -> None:
        rows = sorted(ov.ranks, key=lambda r: r.rank)
        bins = max((len(r.util_bins) for r in rows), default=0)
        m = np.full((len(rows), bins), np.nan)
        for i, r in enumerate(rows):
            m[i, :len(r.util_bins)] = r.util_bins
        self.matrix, self.ranks = m, [r.rank for r in rows]
        self.bin_s = max(ov.grid_bin_ns, 1) / 1e9
        if not m.size:
            self.image.clear()
            return
        self.image.setImage(m.T, levels=(0.0, 1.0))          # ImageItem is (x, y)
        self.image.setRect(QRectF(0.0, -0.5, bins * self.bin_s, max(1, len(rows))))
        self.getAxis("left").set_ranks(self.ranks)
        self.setXRange(0, max(bins, 1) * self.bin_s, padding=0)
        self.setYRange(-0.5, len(rows) - 0.5, padding=0)

    def cell(self, x: float, y: float) -> tuple[int, int] | None:
        """(row, column) of the view point, if on the image."""
        row, col = int(np.floor(y + 0.5)), int(np.floor(x / self.bin_s))
        ok = 0 <= row < self.matrix.shape[0] and 0 <= col < self.matrix.shape[1]
        return (row, col) if ok else None

    def hit(self, x, y):
        rc = self.cell(x, y)
        if rc is None:
            return None
        row, col = rc
        v = self.matrix[row, col]
        busy = "no data" if np.isnan(v) else f"{100 * v:.0f}% busy"
        text = (f"rank {self.ranks[row]}, {fmt_duration(col * self.bin_s * 1e9)} to "
                f"{fmt_duration((col + 1) * self.bin_s * 1e9)}: {busy}\n"
                "double-click: open this rank's timeline here")
        return text, (self.ranks[row], col)


class StepChart(RankChart):
    """Step time per rank: the box spans the quartiles, the whiskers min..max, the bar
    the median; ``activated(rank)``. Ranks without steps are left out."""

    def __init__(self, parent=None):
        super().__init__("Step time per rank (median, quartiles, min–max)",
                         {"left": DurationAxis("left"), "bottom": RankAxis("bottom")}, parent)
        self.setLabel("bottom", "rank")
        self.stats: list[dict] = []
        self.showGrid(y=True, alpha=0.2)
        self.empty = pg.TextItem("", anchor=(0.5, 0.5))
        self.addItem(self.empty)

    def set_overview(self, ov: JobOverview, straggler: int | None) -> None:
        self.plotItem.clear()
        self.addItem(self.empty)
        self.set_title_note(straggler_note(straggler))
        self.stats = _boxes([r for r in sorted(ov.ranks, key=lambda r: r.rank) if r.step_ns])
        self.getAxis("bottom").set_ranks([b["rank"] for b in self.stats])
        self.empty.setText("" if self.stats else "No ProfilerStep ranges in these traces.")
        if not self.stats:
            return
        s = {k: np.array([b[k] for b in self.stats], float) / 1e9
             for k in ("min", "q1", "median", "q3", "max")}
        xs = np.arange(len(self.stats), dtype=float)
        if len(xs) > DENSE_RANKS:
            self._draw_bands(xs, s, straggler)
        else:
            self._draw_boxes(xs, s, straggler)
        self.setXRange(-0.6, len(xs) - 0.4, padding=0)
        lo, hi = float(s["min"].min()), float(s["max"].max())
        pad = max(0.1 * (hi - lo), 0.02 * hi, 1e-9)   # equal steps: a flat line, not µs
        self.setYRange(max(0.0, lo - pad), hi + pad, padding=0)

    def _draw_boxes(self, xs: np.ndarray, s: dict, straggler: int | None) -> None:
        brushes = [pg.mkBrush(STRAGGLER_RGB if b["rank"] == straggler else OTHER_RGB)
                   for b in self.stats]
        self.addItem(pg.BarGraphItem(x=xs, y0=s["q1"], height=np.maximum(s["q3"] - s["q1"], 0),
                                     width=0.6, brushes=brushes, pen=pg.mkPen("#333")))
        self.addItem(pg.ErrorBarItem(x=xs, y=s["median"], top=s["max"] - s["median"],
                                     bottom=s["median"] - s["min"], beam=0.3,
                                     pen=pg.mkPen(self._fg(), width=1)))
        seg_x = np.repeat(xs, 2) + np.tile([-0.3, 0.3], len(xs))
        self.addItem(pg.PlotCurveItem(seg_x, np.repeat(s["median"], 2), connect="pairs",
                                      pen=pg.mkPen(self._fg(), width=2.5)))

    def _draw_bands(self, xs: np.ndarray, s: dict, straggler: int | None) -> None:
        """Too many ranks for a box each (outlines and whiskers would fill the plot):
        the min..max and quartile ranges as bands across the ranks, the median as a
        line, the straggler as an orange mark at its median."""
        def band(lo: np.ndarray, hi: np.ndarray, alpha: int) -> None:
            a, b = pg.PlotCurveItem(xs, lo), pg.PlotCurveItem(xs, hi)
            colour = QColor(OTHER_RGB)
            colour.setAlpha(alpha)
            self.addItem(pg.FillBetweenItem(a, b, brush=pg.mkBrush(colour)))

        band(s["min"], s["max"], 70)
        band(s["q1"], s["q3"], 170)
        self.addItem(pg.PlotCurveItem(xs, s["median"], pen=pg.mkPen(self._fg(), width=1)))
        at = [i for i, b in enumerate(self.stats) if b["rank"] == straggler]
        if at:
            self.addItem(pg.ScatterPlotItem(xs[at], s["median"][at], size=9,
                                            brush=pg.mkBrush(STRAGGLER_RGB), pen=pg.mkPen(None)))

    def _fg(self) -> QColor:
        return self.palette().color(QPalette.ColorRole.WindowText)

    def hit(self, x, y):
        i = int(np.floor(x + 0.5))
        if not 0 <= i < len(self.stats):
            return None
        b = self.stats[i]
        text = (f"rank {b['rank']}: {b['n']} steps, median {fmt_duration(b['median'])}, "
                f"{fmt_duration(b['min'])} to {fmt_duration(b['max'])}")
        return text, b["rank"]


def _boxes(ranks: list) -> list[dict]:
    """Each rank's step quartiles, one numpy call per step count (a call per rank cost
    85 ms of the GUI thread at 1,024 ranks)."""
    by_n: dict[int, list[int]] = {}
    for i, r in enumerate(ranks):
        by_n.setdefault(len(r.step_ns), []).append(i)
    out: list[dict] = [{} for _ in ranks]
    for n, rows in by_n.items():
        a = np.asarray([ranks[i].step_ns for i in rows], float)
        q1, med, q3 = np.percentile(a, [25, 50, 75], axis=1)
        lo, hi = a.min(axis=1), a.max(axis=1)
        for j, i in enumerate(rows):
            out[i] = {"rank": ranks[i].rank, "n": n, "min": float(lo[j]), "q1": float(q1[j]),
                      "median": float(med[j]), "q3": float(q3[j]), "max": float(hi[j])}
    return out


class SkewChart(RankChart):
    """Each matched collective at its first arrival (x) and its skew, the latest minus
    the earliest arrival (y); the worst straggler's are orange. ``activated(index)``
    (into ``overview.collectives``)."""

    def __init__(self, parent=None):
        super().__init__("Collective skew (arrival spread) over time",
                         {"bottom": DurationAxis("bottom"), "left": DurationAxis("left")},
                         parent)
        self.showGrid(x=True, y=True, alpha=0.2)
        self.points = pg.ScatterPlotItem(size=8, pen=pg.mkPen(None))
        self.addItem(self.points)
        self.setLabel("bottom", "first arrival, since the job's first bin")
        self.xs = self.ys = np.zeros(0)
        self.overview: JobOverview | None = None

    def set_overview(self, ov: JobOverview, straggler: int | None) -> None:
        self.overview = ov
        self.set_title_note(straggler_note(straggler, " arrived last"))
        cs = ov.collectives
        self.xs = np.array([(min(c.arrival_ns.values()) - ov.grid_start_ns) / 1e9 for c in cs])
        self.ys = np.array([c.skew_ns / 1e9 for c in cs])
        brushes = [pg.mkBrush(STRAGGLER_RGB if c.last_rank == straggler else OTHER_RGB)
                   for c in cs]
        self.points.setData(self.xs, self.ys, brush=brushes)
        if len(cs):
            top = float(self.ys.max()) or 1e-6
            self.setYRange(-0.04 * top, 1.1 * top, padding=0)    # points at 0 stay whole

    def hit(self, x, y):
        i = self.near(x, y, self.xs, self.ys)
        if i is None or self.overview is None:
            return None
        c = self.overview.collectives[i]
        group = f" (group {c.group})" if c.group else ""
        text = (f"{c.name} #{c.sequence}{group}: skew {fmt_duration(c.skew_ns)}, "
                f"last rank {c.last_rank}, wait caused {fmt_duration(c.wait_ns)}\n"
                "double-click: open the last rank's timeline here")
        return text, i
