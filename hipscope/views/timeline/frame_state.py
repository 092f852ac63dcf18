"""What one paint of the timeline needs, taken from the view once per paint.

The painters (:mod:`.painting`, :mod:`.render`) read a :class:`FrameState` and
nothing else: the window, the size, the rows as laid out, the scroll, the colours, the
selection and find results, the ruler, the fonts. What paints keep between frames
(pixmap caches, elided labels, the last image) lives in the view's :class:`PaintCache`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from PySide6.QtGui import QFont, QFontMetrics, QPixmap
from PySide6.QtWidgets import QWidget

from ...analysis import lod
from . import palette as pal
from .render import AXIS_H, LABEL_W, LEGEND_H, SCROLL_W, Layout


@dataclass
class PaintCache:
    """Kept between paints (owned by the view): the label column and legend pixmaps
    with their keys, label texts elided per width, and the last track image (alive
    while Qt may still read it)."""

    label_pixmap: tuple[tuple, QPixmap] | None = None
    legend_pixmap: tuple[tuple, QPixmap] | None = None
    elided: dict = field(default_factory=dict)
    last_image: np.ndarray | None = None


@dataclass(frozen=True)
class Fonts:
    """The timeline's fonts (made once per view)."""

    normal: QFont
    small: QFont
    bold: QFont
    metrics: QFontMetrics
    small_metrics: QFontMetrics


@dataclass(frozen=True)
class FrameState:
    """One paint's inputs (see module docstring); geometry helpers for the painters."""

    device: QWidget                   # the view: paints on it may use the pixmap caches
    dpr: float
    w: int
    h: int
    has_trace: bool
    preparing: bool
    n_kernels: int
    model: lod.TimelineModel | None
    window: tuple[int, int]
    layout: Layout
    scroll: int
    collapsed: frozenset[str]
    palette: pal.Palette
    scale: lod.ColorScale
    found: lod.FindResult | None
    find_starts: dict[int, np.ndarray]
    selection_box: tuple[float, float, float, float] | None   # x0, x1, y_mid, height
    arrows: tuple[tuple[float, float, float, float], ...]     # x0, y0, x1, y1
    axis_origin: int | None
    ruler: tuple[int, int] | None
    ruler_stats: dict | None
    area_box: tuple[int, int, tuple[int, ...]] | None   # an area pick: t0, t1, rows
    fonts: Fonts
    message_font: QFont               # the widget's own font (the empty states)
    cache: PaintCache
    label_w: int = LABEL_W            # width of the label column (the user may drag it)

    @property
    def tw(self) -> int:
        """Width of the track area."""
        return max(self.w - self.label_w - SCROLL_W, 1)

    @property
    def th(self) -> int:
        """Height of the track area."""
        return max(self.h - AXIS_H - LEGEND_H, 1)

    def x_of(self, t: float) -> float:
        """Painter x of time ``t`` (ns)."""
        t0, t1 = self.window
        return self.label_w + (t - t0) * self.tw / max(t1 - t0, 1)

    def row_y(self, row: int) -> tuple[int, int] | None:
        """Painter y and height of a shown row (None when collapsed away)."""
        p = self.layout.pos_of.get(row)
        if p is None:
            return None
        return AXIS_H + int(self.layout.y[p]) - self.scroll, int(self.layout.h[p])
