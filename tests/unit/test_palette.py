"""The timeline's name colours: the whole-array table equals colorsys, key by key."""

from __future__ import annotations

import colorsys

import numpy as np
import pytest

from hipscope.views.timeline import palette as pal


def _by_colorsys(key: int) -> tuple[int, int, int]:
    """The definition, spelled out: hue from the spread hash, two light/sat variants."""
    h = ((key * 2654435761) & 0xFFFFFFFF) / 2**32
    r, g, b = colorsys.hls_to_rgb(h, 0.56 if key & 1 else 0.64, 0.55 if key & 2 else 0.68)
    return int(r * 255), int(g * 255), int(b * 255)


def test_every_name_key_has_colorsys_colour():
    want = np.array([_by_colorsys(k) for k in range(4096)], float)
    np.testing.assert_array_equal(pal.name_table(), want)
    assert [pal.name_rgb(k) for k in (0, 1, 2, 3, 4095)] == [_by_colorsys(k) for k in
                                                              (0, 1, 2, 3, 4095)]


def test_name_palette_holds_the_table_then_the_distinct_colours():
    p = pal.Palette("name")
    assert p.n == 4096 + len(pal.DISTINCT)
    np.testing.assert_array_equal(p.rgb[:4096], pal.name_table())
    np.testing.assert_array_equal(p.rgb[4096:4096 + len(pal.DISTINCT)], np.array(pal.DISTINCT))
    with pytest.raises(ValueError):             # shared by every palette: nobody edits it
        pal.name_table()[0, 0] = 1.0
