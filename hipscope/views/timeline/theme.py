"""The timeline canvas follows the app's theme: dark or light track area, labels, axis."""

from __future__ import annotations

from collections.abc import Iterable

from . import palette as pal
from .frame_state import PaintCache


def set_canvas(name: str, timelines: Iterable = ()) -> None:
    """Use the ``dark`` or ``light`` canvas from now on and repaint ``timelines``
    (TimelineViews) with it: their Palettes blend with the background, and their
    cached label and legend pixmaps hold the old colours."""
    pal.set_canvas(name)
    for tl in timelines:
        tl.palette = pal.Palette(tl.scale.mode)
        tl.paint_cache = PaintCache()
        tl.update()
