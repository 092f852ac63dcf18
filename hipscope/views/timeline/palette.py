"""Colours of the timeline: colour keys (from analysis.lod) -> packed RGB32 pixels.

A palette is a numpy table ``levels x keys`` of ``uint32`` 0xFFRRGGBB values, the
key colour pre-blended with the track background at each coverage level, so a frame
turns (coverage, key) per pixel column into colours with one gather.
"""

from __future__ import annotations

import functools

import numpy as np


LEVELS = 8                      # coverage levels (0 = empty)
BG = (0x1E, 0x20, 0x25)         # track area background
BG_ALT = (0x23, 0x26, 0x2C)     # every other row
SEPARATOR = (0x2E, 0x31, 0x38)
NEUTRAL = (0x8A, 0x90, 0x9A)    # unknown key
HIGHLIGHT = (0xFF, 0xD5, 0x4F)  # find matches
SELECT = (0xFF, 0xFF, 0xFF)
TEXT = (0xDD, 0xE1, 0xE6)
TEXT_DIM = (0x9A, 0xA0, 0xA8)
LABEL_BG = (0x25, 0x28, 0x2E)
GROUP_BG = (0x2B, 0x2F, 0x36)

# The canvas colours above are the dark theme's; set_canvas("light") swaps them (new
# Palettes and frames read these module names; TimelineView.restyle() rebuilds).
CANVAS_KEYS = ("BG", "BG_ALT", "SEPARATOR", "HIGHLIGHT", "SELECT", "TEXT", "TEXT_DIM",
               "LABEL_BG", "GROUP_BG")
CANVASES = {"dark": {k: globals()[k] for k in CANVAS_KEYS},
            "light": {"BG": (0xFA, 0xFA, 0xFB), "BG_ALT": (0xF0, 0xF2, 0xF5),
                      "SEPARATOR": (0xD8, 0xDC, 0xE2), "HIGHLIGHT": (0xE0, 0x8E, 0x00),
                      "SELECT": (0x10, 0x12, 0x16), "TEXT": (0x1E, 0x21, 0x26),
                      "TEXT_DIM": (0x5C, 0x63, 0x6E), "LABEL_BG": (0xEB, 0xED, 0xF0),
                      "GROUP_BG": (0xDF, 0xE3, 0xE8)}}
CANVAS = "dark"


def set_canvas(name: str) -> None:
    """Use the ``dark`` or ``light`` canvas colours from now on."""
    global CANVAS
    globals().update(CANVASES[name])
    CANVAS = name

# A perceptual ramp (blue -> teal -> green -> yellow -> orange -> red) for
# duration and queue delay.
_RAMP = np.array([(0x31, 0x36, 0x95), (0x45, 0x75, 0xB4), (0x2C, 0xA2, 0xA0),
                  (0x66, 0xBD, 0x63), (0xD9, 0xEF, 0x8B), (0xFE, 0xE0, 0x8B),
                  (0xFD, 0xAE, 0x61), (0xF4, 0x6D, 0x43), (0xD7, 0x30, 0x27)], float)


# Diverging ramp for "delta" (this run over the matched run): faster green, equal grey,
# slower red.
_DIVERGING = np.array([(0x1A, 0x98, 0x50), (0x66, 0xBD, 0x63), (0xA6, 0xD9, 0x6A),
                       (0x8A, 0x90, 0x9A), (0xF4, 0xA5, 0x82), (0xE8, 0x5D, 0x4A),
                       (0xD7, 0x30, 0x27)], float)
DELTA_NEUTRAL = (0x55, 0x5A, 0x63)  # kernels without a matched instance


# Categorical colours for traces with few kernel names (keys 4096 + rank, see
# analysis.timeline_model.colours.kernel_name_keys): Tableau 10 without its grey (the
# unknown key is grey), in its order, so any first few are far apart.
DISTINCT = ((0x4E, 0x79, 0xA7), (0xF2, 0x8E, 0x2B), (0x59, 0xA1, 0x4F), (0xE1, 0x57, 0x59),
            (0xB0, 0x7A, 0xA1), (0xED, 0xC9, 0x48), (0x76, 0xB7, 0xB2), (0xFF, 0x9D, 0xA7),
            (0x9C, 0x75, 0x5F))


# Kernel classes (analysis.kernel_class.CLASSES, in its order): GEMM, attention,
# convolution, elementwise, reduction, normalization, copy/memset, communication, other.
CLASS_RGB = ((0x4E, 0x79, 0xA7), (0xB0, 0x7A, 0xA1), (0x76, 0xB7, 0xB2), (0x59, 0xA1, 0x4F),
             (0xF2, 0x8E, 0x2B), (0xED, 0xC9, 0x48), (0x9C, 0x75, 0x5F), (0xE1, 0x57, 0x59),
             (0xBA, 0xB0, 0xAC))


def pack(rgb: np.ndarray) -> np.ndarray:
    """(..., 3) 0..255 -> uint32 0xFFRRGGBB."""
    rgb = np.clip(np.round(rgb), 0, 255).astype(np.uint32)
    return (0xFF000000 | (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]).astype(
        np.uint32)


def packed(rgb: tuple[int, int, int]) -> int:
    return int(pack(np.array(rgb, float)))


def name_rgb(key: int) -> tuple[int, int, int]:
    """Colour of a name key (12-bit hash): hue from the hash, two light/sat variants."""
    r, g, b = name_table()[key].tolist()
    return int(r), int(g), int(b)


def _hue_part(m1: np.ndarray, m2: np.ndarray, hue: np.ndarray) -> np.ndarray:
    hue = np.mod(hue, 1.0)
    rise = m1 + (m2 - m1) * hue * 6.0
    fall = m1 + (m2 - m1) * (2.0 / 3.0 - hue) * 6.0
    return np.where(hue < 1.0 / 6.0, rise,
                    np.where(hue < 0.5, m2, np.where(hue < 2.0 / 3.0, fall, m1)))


@functools.lru_cache(maxsize=1)
def name_table() -> np.ndarray:
    """The colour of every 12-bit name key, (4096, 3) float, read-only: the hue from
    the key's spread hash, two lightness and two saturation variants, turned to RGB by
    :func:`colorsys.hls_to_rgb`'s arithmetic on whole arrays (equal to the last bit:
    tests/unit/test_palette.py), once per process instead of 4096 Python calls for
    every palette (two per timeline before its first frame)."""
    key = np.arange(4096, dtype=np.int64)
    h = ((key * 2654435761) & 0xFFFFFFFF) / 2**32     # spread neighbouring hashes
    light = np.where(key & 1, 0.56, 0.64)
    sat = np.where(key & 2, 0.55, 0.68)
    m2 = np.where(light <= 0.5, light * (1.0 + sat), light + sat - light * sat)
    m1 = 2.0 * light - m2
    rgb = np.stack([_hue_part(m1, m2, h + 1.0 / 3.0), _hue_part(m1, m2, h),
                    _hue_part(m1, m2, h - 1.0 / 3.0)], axis=1)
    out = np.trunc(rgb * 255).astype(float)
    out.flags.writeable = False
    return out


def ramp_rgb(x: np.ndarray, ramp: np.ndarray = _RAMP) -> np.ndarray:
    """x in 0..1 -> (n, 3) RGB along the ramp."""
    pos = np.clip(x, 0, 1) * (len(ramp) - 1)
    i = np.minimum(pos.astype(int), len(ramp) - 2)
    f = (pos - i)[:, None]
    return ramp[i] * (1 - f) + ramp[i + 1] * f


def delta_rgb(x: np.ndarray) -> np.ndarray:
    """x in 0..1 (0.5: equal) -> (n, 3) RGB, green (faster) -> grey -> red (slower)."""
    return ramp_rgb(x, _DIVERGING)


class Palette:
    """Per colour mode: ``table[level, key]`` (uint32) and key -> RGB for labels."""

    def __init__(self, mode: str):
        self.mode = mode
        if mode == "name":
            rgb = np.vstack([name_table(), np.array(DISTINCT, float)])
        elif mode == "class":
            rgb = np.array(CLASS_RGB, float)
        elif mode == "delta":
            rgb = delta_rgb(np.arange(256) / 255.0)
        else:
            rgb = ramp_rgb(np.arange(256) / 255.0)
        self.n = len(rgb)
        unknown = DELTA_NEUTRAL if mode == "delta" else NEUTRAL
        full = np.vstack([rgb, [unknown]])               # index n = unknown key
        self.rgb = full
        bg = np.array(BG, float)
        alpha = np.r_[0.0, 0.38 + 0.62 * np.arange(1, LEVELS) / (LEVELS - 1)]
        self.table = pack(bg[None, None, :] * (1 - alpha[:, None, None])
                          + full[None, :, :] * alpha[:, None, None])   # (LEVELS, n+1)
        self.solid = self.table[-1]
        lum = full @ np.array([0.299, 0.587, 0.114])
        self.dark_text = lum > 150                       # black text on light fills

    def index(self, keys: np.ndarray) -> np.ndarray:
        """Keys (-1 or NO_KEY = unknown) -> palette column."""
        k = np.asarray(keys, dtype=np.int64)
        return np.where((k < 0) | (k >= self.n), self.n, k)

    def columns(self, cov: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """Pixel colours of a row from coverage (0..1) and keys per column; level 0
        (no coverage) is the background."""
        level = np.ceil(cov * (LEVELS - 1)).astype(np.intp)
        np.minimum(level, LEVELS - 1, out=level)
        return self.table[level, self.index(keys)]
