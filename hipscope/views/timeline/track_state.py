"""The user's track choices of one timeline as plain JSON, so the app can keep them
between sessions per trace: hidden, pinned and moved tracks, folded groups (and the
groups folded by default that the user opened), the label column's width.

:func:`track_state` reads them; :func:`restore_track_state` puts them back, at once
when the rows are ready, else when the view has prepared them. Row keys survive a
regrouping, so keys of the other grouping are kept too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .view import TimelineView

VERSION = 1


def track_state(view: TimelineView) -> dict[str, Any] | None:
    """The view's track choices (None before its rows were first prepared)."""
    model, opts = view.model, view.input.tracks.options
    if model is None:
        return None
    defaults = {r.key for r in model.rows if r.collapsed_default}
    return {"version": VERSION, "hidden": sorted(opts.hidden), "pinned": list(opts.pinned),
            "order": {k: list(v) for k, v in opts.order.items()},
            "collapsed": sorted(view.collapsed), "expanded": sorted(defaults - view.collapsed),
            "label_w": int(opts.label_w)}


def restore_track_state(view: TimelineView, state: dict[str, Any] | None) -> None:
    """Apply saved choices (now, or after the view's next prepare)."""
    if not isinstance(state, dict) or state.get("version") != VERSION:
        return
    if view.model is None:
        view.pending_track_state = state
        return
    view.pending_track_state = None
    opts = view.input.tracks.options
    opts.hidden = {str(k) for k in _list(state, "hidden")}
    opts.pinned = [str(k) for k in _list(state, "pinned")]
    order = state.get("order")
    opts.order = {str(k): [str(c) for c in v] for k, v in order.items()
                  if isinstance(v, list)} if isinstance(order, dict) else {}
    view.collapsed |= {str(k) for k in _list(state, "collapsed")}
    view.collapsed -= {str(k) for k in _list(state, "expanded")}
    w = state.get("label_w")
    if isinstance(w, int):
        view.input.tracks.set_label_w(w)
    view.relayout()  # noqa: SLF001 (this module is the view's track half)


def apply_pending(view: TimelineView) -> None:
    """After a prepare: the choices that waited for the rows."""
    if view.pending_track_state is not None:
        restore_track_state(view, view.pending_track_state)


def _list(state: dict, key: str) -> list:
    v = state.get(key)
    return v if isinstance(v, list) else []
