"""One row's events sorted by start and the cheap per-frame questions asked of them
(window, coverage, pixel keys, wide events, hit test, counter pixels)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BLOCK = 64                    # events per block for the max-duration index
MAX_BINS = 1 << 16            # colour bins per row (upper bound)
BINS_PER_PX = 8               # interpolate coverage from the bins above this
DIRECT_PER_PX = 4             # above this many visible events per pixel, use the bins
NO_KEY = 0xFFFF               # colour key meaning "unknown" (drawn neutral)
EVENT_TABLES = ("kernels", "api", "copies", "markers")
_I64 = np.int64


# --------------------------------------------------------------------------- events
@dataclass(eq=False)
class Events:
    """Events of one row, sorted by start, with the indexes every frame uses."""

    start: np.ndarray              # int64, sorted
    end: np.ndarray                # int64, >= start
    index: np.ndarray              # int32: row in the source table
    ustart: np.ndarray             # union (busy) intervals: starts (alias of start
                                   #   when no two events overlap)
    ucum: np.ndarray               # int64 (n_union + 1): busy time before each union
                                   #   interval; interval i ends at
                                   #   ustart[i] + ucum[i + 1] - ucum[i]
    blockmax: np.ndarray           # int64: max duration per BLOCK events
    maxdur: int
    value: np.ndarray | None = None        # counter tracks: value per event
    keys: np.ndarray | None = None         # uint16 colour key per event
    bins: np.ndarray | None = None         # int64 encoded (duration, key) per bin
    bin_busy: np.ndarray | None = None     # int64 busy time before each bin edge
    bin_t0: int = 0
    bin_span: int = 1

    def __len__(self) -> int:
        return len(self.start)

    @classmethod
    def build(cls, start: np.ndarray, end: np.ndarray, index: np.ndarray,
              value: np.ndarray | None = None) -> Events:
        """``start``/``end``/``index`` must already be sorted by start."""
        start = np.ascontiguousarray(start, dtype=_I64)
        end = np.maximum(np.ascontiguousarray(end, dtype=_I64), start)
        ustart, _, ucum = union_intervals(start, end)
        dur = end - start
        n = len(dur)
        nb = -(-n // BLOCK)
        pad = np.zeros(nb * BLOCK, dtype=_I64)
        pad[:n] = dur
        blockmax = pad.reshape(nb, BLOCK).max(axis=1) if nb else np.zeros(0, _I64)
        return cls(start, end, np.ascontiguousarray(index, dtype=np.int32), ustart,
                   ucum, blockmax, int(dur.max()) if n else 0, value)

    def buffers(self) -> list[np.ndarray]:
        return [a for a in (self.start, self.end, self.index, self.ustart, self.ucum,
                            self.blockmax, self.value, self.keys, self.bins, self.bin_busy)
                if a is not None]

    def uend(self, i):
        """End of union interval(s) ``i``."""
        return self.ustart[i] + (self.ucum[np.add(i, 1)] - self.ucum[i])


def union_intervals(start: np.ndarray, end: np.ndarray):
    """Disjoint busy intervals of events sorted by start: (ustart, uend, ucum) where
    ``ucum[i]`` is the busy time before interval ``i`` (``n_union + 1`` values).
    Without overlaps the union is the events themselves (no copy)."""
    n = len(start)
    if n == 0:
        return start, end, np.zeros(1, _I64)
    run = np.maximum.accumulate(end)
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.greater_equal(start[1:], run[:-1], out=new[1:])
    if new.all():
        ustart, uend = start, end
    else:
        first = np.flatnonzero(new)
        ustart = start[first]
        uend = run[np.r_[first[1:] - 1, n - 1]]
    ucum = np.empty(len(ustart) + 1, dtype=_I64)
    ucum[0] = 0
    np.cumsum(uend - ustart, out=ucum[1:])
    return ustart, uend, ucum


def busy_until(ev: Events, t: np.ndarray) -> np.ndarray:
    """Busy time (union of events) before each time in ``t`` (sorted int64 array)."""
    if len(ev.ustart) == 0:
        return np.zeros(len(t), dtype=_I64)
    # search only the union intervals between the first and last key (cache-resident)
    a = max(int(np.searchsorted(ev.ustart, t[0], side="right")) - 1, 0)
    b = int(np.searchsorted(ev.ustart, t[-1], side="right"))
    i = np.searchsorted(ev.ustart[a:b], t, side="right") + (a - 1)
    ic = np.maximum(i, 0)
    c0 = ev.ucum[ic]
    b = c0 + np.minimum(np.maximum(t - ev.ustart[ic], 0), ev.ucum[ic + 1] - c0)
    b[i < 0] = 0
    return b


def window(ev: Events, t0: int, t1: int) -> tuple[int, int]:
    """Positions ``[lo, hi)`` of the events that may overlap ``[t0, t1)``.

    Every overlapping event is inside; a few nested ones that end before ``t0`` may
    be too (they are clipped when drawn)."""
    if len(ev) == 0:
        return 0, 0
    a, b = _I64(t0), _I64(t1)
    lb = a - _I64(ev.maxdur)
    i = int(np.searchsorted(ev.ustart, a, side="right")) - 1
    if i >= 0 and ev.uend(i) > a:
        lb = max(lb, ev.ustart[i])
    else:
        lb = a
    lo = int(np.searchsorted(ev.start, lb, side="left"))
    hi = int(np.searchsorted(ev.start, b, side="left"))
    return lo, max(lo, hi)


def pixel_edges(t0: int, t1: int, width: int) -> np.ndarray:
    """``width + 1`` int64 pixel-column edges spanning ``[t0, t1]``."""
    span = int(t1) - int(t0)
    return _I64(t0) + (np.arange(width + 1, dtype=_I64) * span) // max(width, 1)


def coverage(ev: Events, edges: np.ndarray, widths: np.ndarray | None = None) -> np.ndarray:
    """Busy fraction (0..1) of each pixel column.

    Exact (union intervals) when zoomed in; when a pixel spans many bins of the
    row's pyramid, the busy time inside the window is interpolated from the bins'
    cumulative busy time (exact at bin edges and at the window's ends, so the
    columns still sum to the busy time of the window)."""
    w = len(edges) - 1
    nb = len(ev.bin_busy) - 1 if ev.bin_busy is not None else 0
    span = int(edges[-1] - edges[0])
    if nb <= 0 or span * nb < BINS_PER_PX * w * ev.bin_span:
        b = busy_until(ev, edges)
    else:
        x = (edges - ev.bin_t0) * (nb / ev.bin_span)
        np.minimum(np.maximum(x, 0, out=x), nb, out=x)
        i = np.minimum(x.astype(np.intp), nb - 1)
        bb = ev.bin_busy
        assert bb is not None                     # nb > 0
        c0 = bb[i]
        b = c0 + (x - i) * (bb[i + 1] - c0)
        b[[0, -1]] = busy_until(ev, edges[[0, -1]])
    if widths is None:
        widths = np.maximum(np.diff(edges), 1)
    return np.diff(b) / widths


def pixel_keys(ev: Events, lo: int, hi: int, edges: np.ndarray,
               cov: np.ndarray | None = None) -> np.ndarray:
    """Colour key per pixel column (-1: none): the longest event starting in it,
    carried forward over columns that an earlier event still covers."""
    w = len(edges) - 1
    out = np.full(w, -1, dtype=np.int64)
    if hi <= lo or w <= 0:
        return out
    if hi - lo <= DIRECT_PER_PX * w or ev.bins is None:
        s = ev.start[lo:hi]
        keys = ev.keys[lo:hi] if ev.keys is not None else np.zeros(hi - lo, np.uint16)
        enc = ((ev.end[lo:hi] - s + 1) << 16) | keys
        px = _pixel_of(s, edges)
        counts = np.bincount(px, minlength=w)
        bounds = np.cumsum(counts) - counts
        nonempty = counts > 0
        red = np.maximum.reduceat(enc, np.minimum(bounds, hi - lo - 1))
    else:
        nb = len(ev.bins)
        bj = ((edges - ev.bin_t0) * nb) // ev.bin_span
        np.minimum(np.maximum(bj, 0, out=bj), nb, out=bj)
        red = np.maximum.reduceat(ev.bins, np.minimum(bj[:-1], nb - 1))
        nonempty = (edges[1:] > ev.bin_t0) & (edges[:-1] < ev.bin_t0 + ev.bin_span)
    red = np.where(nonempty & (red > 0), red & 0xFFFF, -1)
    if cov is not None:   # carry keys over columns covered by a long earlier event
        have = red >= 0
        src = np.maximum.accumulate(np.where(have, np.arange(w), -1))
        carry = (~have) & (cov > 0) & (src >= 0)
        red[carry] = red[src[carry]]
    out[:] = red
    return out


def _pixel_of(t: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Pixel column of each time (clipped to the window), by arithmetic."""
    w = len(edges) - 1
    span = max(int(edges[-1] - edges[0]), 1)
    px = ((t - edges[0]) * w) // span
    return np.minimum(np.maximum(px, 0, out=px), w - 1, out=px)


def wide_events(ev: Events, lo: int, hi: int, min_dur: float) -> np.ndarray:
    """Positions (sorted) in ``[lo, hi)`` of events lasting at least ``min_dur`` ns."""
    if hi <= lo:
        return np.zeros(0, dtype=np.int64)
    dmin = _I64(int(np.ceil(min_dur)))
    if hi - lo <= 4 * BLOCK * 16:
        pos = np.arange(lo, hi)
    else:
        b0, b1 = lo // BLOCK, (hi - 1) // BLOCK + 1
        blocks = np.flatnonzero(ev.blockmax[b0:b1] >= dmin) + b0
        pos = (blocks[:, None] * BLOCK + np.arange(BLOCK)).ravel()
        pos = pos[(pos >= lo) & (pos < hi)]
    return pos[(ev.end[pos] - ev.start[pos]) >= dmin]


def hit_test(ev: Events, t: int, tol: int) -> int:
    """Position of the event under time ``t`` (innermost/shortest containing it, else
    the nearest within ``tol`` ns); -1 when none."""
    lo, hi = window(ev, int(t) - int(tol), int(t) + int(tol) + 1)
    if hi <= lo:
        return -1
    s, e = ev.start[lo:hi], ev.end[lo:hi]
    at = _I64(t)
    inside = (s <= at) & (e > at)
    if inside.any():
        cand = np.flatnonzero(inside)
        return int(lo + cand[np.argmin((e - s)[cand])])
    dist = np.maximum(s - at, at - e)
    j = int(np.argmin(dist))
    return lo + j if dist[j] <= tol else -1


def counter_pixels(ev: Events, lo: int, hi: int, edges: np.ndarray,
                   cov: np.ndarray) -> np.ndarray:
    """Counter value per pixel column (max of samples starting in it, carried over
    columns the sample's kernel still covers); NaN where none."""
    w = len(edges) - 1
    out = np.full(w, np.nan)
    if hi <= lo or ev.value is None:
        return out
    v = np.nan_to_num(ev.value[lo:hi], nan=-np.inf)
    px = _pixel_of(ev.start[lo:hi], edges)
    counts = np.bincount(px, minlength=w)
    bounds = np.cumsum(counts) - counts
    nonempty = counts > 0
    red = np.maximum.reduceat(v, np.minimum(bounds, hi - lo - 1))
    have = nonempty & np.isfinite(red)
    src = np.maximum.accumulate(np.where(have, np.arange(w), -1))
    fill = have | ((cov > 0) & (src >= 0))
    out[fill] = red[np.maximum(src, 0)][fill]
    return out
