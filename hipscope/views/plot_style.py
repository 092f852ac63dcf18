"""pyqtgraph plots that follow the app's theme: the background is the palette's Base,
axes, tick labels, titles and legend text its WindowText, set again on every palette
change (View > Theme), so no plot keeps the colours of the theme it was made in."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QPalette

_RESTYLE = (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange)


def style_plot(view: pg.GraphicsView) -> None:
    """Colour a plot widget (PlotWidget, GraphicsLayoutWidget) from its palette now."""
    pal = view.palette()
    bg, fg = pal.color(QPalette.ColorRole.Base), pal.color(QPalette.ColorRole.WindowText)
    view.setBackground(bg)
    scene = view.scene()
    if scene is None:
        return
    for item in scene.items():
        if isinstance(item, pg.AxisItem):
            item.setPen(pg.mkPen(fg))
            item.setTextPen(pg.mkPen(fg))
        elif isinstance(item, pg.PlotItem) and item.titleLabel.text:
            item.titleLabel.setAttr("color", fg.name())
            item.titleLabel.setText(item.titleLabel.text)
        elif isinstance(item, pg.LegendItem):
            item.setLabelTextColor(fg)


class _Follower(QObject):
    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt name)
        if event.type() in _RESTYLE and isinstance(obj, pg.GraphicsView):
            style_plot(obj)
        return False


def follow_theme(view: pg.GraphicsView) -> pg.GraphicsView:
    """Style ``view`` now and after each palette change; returns it."""
    style_plot(view)
    view.installEventFilter(_Follower(view))
    return view
