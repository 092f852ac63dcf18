"""The timeline model: level of detail for the timeline (Qt-free, numpy only).

The timeline shows rows of events: GPU -> hardware queue -> stream (or GPU -> stream),
copies per GPU, host process -> thread (annotations by depth, API calls), counter
tracks. :func:`build_model` sorts each row once (at data change); every frame then
only asks cheap questions of the sorted arrays:

- :func:`window` -- which events overlap ``[t0, t1)``: two ``searchsorted`` calls;
  overlapping (nested, concurrent) events are found through the row's *union*
  intervals (the busy interval holding ``t0`` bounds how far back they start).
- :func:`coverage` -- the busy fraction of each pixel column, exact at any zoom, from
  the cumulative busy time of the union intervals: ``O(pixels * log n)``.
- :func:`pixel_keys` -- a colour key per pixel column (the longest event starting in
  it), from the events when few are visible, else from a per-row binned pyramid.
- :func:`wide_events` -- events at least a few pixels wide (drawn exactly, labelled),
  found via per-block maximum durations without scanning every visible event.

Plus hit testing, ruler statistics, find (in time order) and colour keys. Colours
themselves are the view's business: here a colour *key* is a small integer.

Modules: :mod:`.events` (one row's sorted events and the per-frame questions),
:mod:`.rows` (building the rows), :mod:`.colours` (colour keys), :mod:`.find`,
:mod:`.ruler`, :mod:`.names` (short labels) and :mod:`.prepare` (what the timeline
asks for at data change).
"""

from __future__ import annotations

from .colours import ColorScale, apply_color_keys, color_keys, color_scale, key_bins, name_key
from .events import (
                      BINS_PER_PX,
                      BLOCK,
                      DIRECT_PER_PX,
                      EVENT_TABLES,
                      MAX_BINS,
                      NO_KEY,
                      Events,
                      busy_until,
                      counter_pixels,
                      coverage,
                      hit_test,
                      pixel_edges,
                      pixel_keys,
                      union_intervals,
                      wide_events,
                      window,
)
from .find import FindResult, find, find_step, matching_codes, track_match_starts
from .names import short_name
from .prepare import FLOW_KINDS, flow_links, launch_links, prepare
from .rows import Row, TimelineModel, build_model, int_column, nesting_depth
from .ruler import range_stats, ruler_figures, union_length

__all__ = [
    "BINS_PER_PX", "BLOCK", "DIRECT_PER_PX", "EVENT_TABLES", "FLOW_KINDS", "MAX_BINS",
    "NO_KEY", "flow_links",
    "ColorScale", "Events", "FindResult", "Row", "TimelineModel",
    "apply_color_keys", "build_model", "busy_until", "color_keys", "color_scale",
    "counter_pixels", "coverage", "find", "find_step", "hit_test", "int_column",
    "key_bins", "launch_links", "matching_codes", "name_key", "nesting_depth",
    "pixel_edges", "pixel_keys", "prepare", "range_stats", "ruler_figures", "short_name",
    "track_match_starts", "union_intervals", "union_length", "wide_events", "window",
]
