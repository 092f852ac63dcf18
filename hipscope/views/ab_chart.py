"""The tuner's A/B chart (pyqtgraph): every repeat of a test as a strip per side, the
medians as bars. Its own module, imported when the tuner first shows a test, so the
app's start-up does not load pyqtgraph for it."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from .plot_style import follow_theme
from .tuner_parts import SIDE_COLOURS


class ABChart(pg.PlotWidget):
    """All repeats of an A/B test as a strip per side, with the medians as bars."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setMouseEnabled(x=False, y=False)
        self.hideButtons()
        self.setMenuEnabled(False)
        self.setLabel("left", "wall time", units="s")
        self.getAxis("bottom").setTicks([[(0, "baseline"), (1, "variant")]])
        self.setXRange(-0.6, 1.6, padding=0)
        self.showGrid(y=True, alpha=0.25)
        self.setMinimumHeight(150)
        follow_theme(self)                      # the app's theme, also after a switch

    def show_runs(self, runs: list[dict]) -> None:
        self.clear()
        for side in (0, 1):
            ys = np.array([r["wall_s"] for r in runs if r["side"] == side], dtype=float)
            if not len(ys):
                continue
            # deterministic jitter by repeat index, so the strip reads as points
            xs = side + (np.arange(len(ys)) % 5 - 2) * 0.06
            self.addItem(pg.ScatterPlotItem(xs, ys, size=9, brush=pg.mkBrush(SIDE_COLOURS[side]),
                                            pen=pg.mkPen("w", width=0.5)))
            med = float(np.median(ys))
            self.plot([side - 0.3, side + 0.3], [med, med], pen=pg.mkPen("#222", width=2))
        walls = [r["wall_s"] for r in runs]
        if walls:
            lo, hi = min(walls), max(walls)
            pad = max((hi - lo) * 0.15, hi * 0.02)
            self.setYRange(max(0.0, lo - pad), hi + pad, padding=0)
