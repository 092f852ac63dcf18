"""Revealing an event in the timeline: the window zoomed to it, its track unfolded and
scrolled into view (``TimelineView.reveal``; split from view.py)."""

from __future__ import annotations

from ...model.view_state import Selection

MIN_SPAN = 20             # ns: the narrowest window the timeline zooms to


def reveal_event(view, table: str, row: int) -> None:
    """Select an event and scroll/zoom ``view`` (a TimelineView) so that it is visible:
    zoom in when it is out of the window or under 3 px, unfold its folded ancestors
    and scroll its track into the page."""
    vs = view.document.view_state
    vs.select(Selection(table, int(row)))
    if view.model is None or not view.knows(table):
        return
    s, e = view.span_of(table, row)
    t0, t1 = vs.window
    wpx = (e - s) * view.track_rect.width() / max(t1 - t0, 1)
    if not (s >= t0 and e <= t1 and wpx >= 3):
        span = max((e - s) * 6, min(t1 - t0, 50_000), MIN_SPAN)
        if e - s > 0 and span > (e - s) * 50:
            span = max((e - s) * 6, 2_000)
        mid = (s + e) / 2
        view.set_window(mid - span / 2, mid + span / 2)
    tr = int(view.model.track_of[table][row])
    if tr >= 0:
        anc = view.model.rows[tr].parent
        changed = view.model.rows[tr].quiet and view.input.tracks.unfold_quiet(anc)
        while anc >= 0:
            key = view.model.rows[anc].key
            if key in view.collapsed:
                view.collapsed.discard(key)
                changed = True
            anc = view.model.rows[anc].parent
        if changed:
            view.relayout()
        p = view.layout.pos_of.get(tr)
        if p is not None:
            y, h = int(view.layout.y[p]), int(view.layout.h[p])
            page = view.track_rect.height()
            if y < view.scroll or y + h > view.scroll + page:
                view.vbar.setValue(max(y - page // 3, 0))
    view.update()
