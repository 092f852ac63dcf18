"""The queue-delay view's plots (pyqtgraph): the delay distribution per group (log x
axis) and the delay density along the visible window with its median. Its own module,
imported with the view's first data (after the timeline's first frame), so the app's
start-up does not load pyqtgraph for it."""

from __future__ import annotations

from dataclasses import dataclass

import pyqtgraph as pg

from .plot_style import follow_theme
from .tables.format import fmt_duration, fmt_time


class _DecadeAxis(pg.AxisItem):
    """A y axis in log10(ns) units labelled as durations."""

    def tickStrings(self, values, scale, spacing):  # noqa: N802 (pyqtgraph name)
        return [fmt_duration(10 ** v) for v in values]


class _TimeAxis(pg.AxisItem):
    """An x axis in ns relative to the trace start, labelled as times."""

    span = 1.0

    def tickStrings(self, values, scale, spacing):  # noqa: N802
        return [fmt_time(v, self.span) for v in values]


@dataclass
class DelayPlots:
    hist: pg.PlotWidget
    density: pg.PlotWidget
    time_axis: _TimeAxis
    image: pg.ImageItem
    median: pg.PlotCurveItem

    def step(self, x, counts, colour: str, name: str) -> None:
        """One group's histogram (bin edges ``x``) as a step line."""
        self.hist.plot(x, counts, stepMode="center", pen=pg.mkPen(colour, width=2), name=name)


def build() -> DelayPlots:
    # x in log10(ns): decades evenly spaced, labelled as durations
    hist = pg.PlotWidget(axisItems={"bottom": _DecadeAxis("bottom")})
    hist.setLabel("bottom", "queue delay (log scale)")
    hist.setLabel("left", "kernels")
    hist.addLegend(offset=(-10, 10))
    follow_theme(hist)                  # the app's theme, also after a switch
    hist.setMouseEnabled(x=False, y=False)
    time_axis = _TimeAxis("bottom")
    density = pg.PlotWidget(axisItems={"left": _DecadeAxis("left"), "bottom": time_axis})
    density.setLabel("left", "queue delay (log scale)")
    follow_theme(density)
    density.setMouseEnabled(x=False, y=False)
    image = pg.ImageItem()
    density.addItem(image)
    median = pg.PlotCurveItem(pen=pg.mkPen("#ff5028", width=1.5))
    density.addItem(median)
    image.setColorMap(pg.colormap.get("viridis"))
    return DelayPlots(hist, density, time_axis, image, median)
