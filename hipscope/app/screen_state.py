"""What a person sees in the window, as plain JSON: the ``--screenshot OUT.png`` hook
writes it to ``OUT.json`` beside the picture, and GUI tests read it.

The keys are documented in the README ("Screenshot hook") and kept stable: add keys,
never rename or drop one without bumping ``VERSION``. A timeline may add its own
figures (e.g. tracks hidden by a filter) through a ``screen_state()`` method returning
a dict, merged into ``tracks``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt

from ..model.units import fmt_duration

VERSION = 1
AREA_NAMES = {Qt.DockWidgetArea.LeftDockWidgetArea: "left",
              Qt.DockWidgetArea.RightDockWidgetArea: "right",
              Qt.DockWidgetArea.TopDockWidgetArea: "top",
              Qt.DockWidgetArea.BottomDockWidgetArea: "bottom"}


def screen_state(window) -> dict[str, Any]:
    """The window's visible state (see the module docstring)."""
    current = window.tabs.currentWidget()
    return {
        "version": VERSION,
        "window": {"width": window.width(), "height": window.height(),
                   "title": window.windowTitle()},
        "tabs": [{"title": window.tabs.tabText(i), "state": getattr(t, "state", ""),
                  "kind": getattr(t, "kind", "trace" if hasattr(t, "document") else "compare"),
                  "current": t is current}
                 for i, t in enumerate(window.tab_list())],
        "current": _tab_state(window.current_tab()),
        "comparison": _comparison_state(current) if _is_comparison(current) else None,
        "docks": [_dock_state(window, key, dock) for key, dock in window.docks.items()],
        "status": {"format": window.format_label.text(),
                   "kernels": window.kernels_label.text(),
                   "range": window.range_label.text()},
    }


def write_screen_state(window, png: Path) -> Path:
    """Write :func:`screen_state` to ``png`` with the suffix ``.json``; returns the path."""
    out = Path(png).with_suffix(".json")
    out.write_text(json.dumps(screen_state(window), indent=1, ensure_ascii=False) + "\n")
    return out


def _dock_state(window, key: str, dock) -> dict[str, Any]:
    return {"key": key, "title": dock.windowTitle(),
            "area": AREA_NAMES.get(window.dockWidgetArea(dock), "floating"),
            "open": dock.toggleViewAction().isChecked(),
            "shown": dock.isVisible() and not dock.visibleRegion().isEmpty(),
            "width": dock.width(), "height": dock.height()}


def _is_comparison(tab) -> bool:
    return tab is not None and not hasattr(tab, "document") and hasattr(tab, "timelines")


def _comparison_state(tab) -> dict[str, Any]:
    """A comparison tab: its banner line and, per run, the time window and tracks."""
    view = getattr(tab, "view", None)
    banner = getattr(view, "banner", None)
    runs = []
    for tl in tab.timelines:
        t0, t1 = tl.document.view_state.window
        runs.append({"title": tl.document.title, "time_window": {
            "t0_ns": int(t0), "t1_ns": int(t1), "span": fmt_duration(t1 - t0)},
            "tracks": _tracks(tl)})
    return {"title": tab.title, "state": tab.state, "error": tab.error or None,
            "banner": banner.text() if banner is not None and banner.isVisible() else None,
            "runs": runs}


def _tab_state(tab) -> dict[str, Any] | None:
    if tab is None:
        return None
    out: dict[str, Any] = {"title": tab.document.title, "state": tab.state,
                           "error": tab.error or None}
    banner = getattr(tab, "banner", None)
    out["banner"] = banner.summary() if banner is not None else None
    source = getattr(tab, "diagnostics", None)
    out["diagnostics"] = [dict(d) for d in source.entries] if source is not None else []
    out["markers"] = ([{"t0_ns": m.t0, "t1_ns": m.t1, "code": m.code}
                       for m in source.markers] if source is not None else [])
    if tab.document.trace is None:
        out["time_window"], out["tracks"], out["area"] = None, None, None
        return out
    t0, t1 = tab.document.view_state.window
    lo = tab.document.full_range()[0]
    out["time_window"] = {"t0_ns": int(t0), "t1_ns": int(t1), "span": fmt_duration(t1 - t0),
                          "from_start": fmt_duration(t0 - lo)}
    tl = tab.timeline_api
    out["tracks"] = _tracks(tl) if tl is not None else None
    out["area"] = _area(tab.document.view_state)
    return out


def _area(vs) -> dict[str, Any] | None:
    """The measured range (ruler or area selection) and the tracks it is limited to
    (None: every track)."""
    if vs.area is None:
        return None
    t0, t1 = vs.area
    tracks = None if vs.area_tracks is None else [t.label for t in vs.area_tracks]
    return {"t0_ns": int(t0), "t1_ns": int(t1), "span": fmt_duration(t1 - t0),
            "tracks": tracks}


def _tracks(tl: Any) -> dict[str, Any]:
    """The rows on screen (label, kind, level, events) and the shown/folded counts."""
    model, layout = getattr(tl, "model", None), getattr(tl, "layout", None)
    if model is None or layout is None:
        return {"preparing": bool(tl.preparing), "visible": [], "shown": 0, "total": 0,
                "folded_groups": 0, "hidden_in_folds": 0}
    top, page = tl.scroll, tl.track_rect.height()
    visible = []
    for p, i in enumerate(layout.rows):
        y, h = int(layout.y[p]), int(layout.h[p])
        if y + h <= top or y >= top + page:
            continue
        r = model.rows[int(i)]
        visible.append({"label": r.label, "kind": r.kind, "level": r.level,
                        "events": len(r.events) if r.events is not None else 0,
                        "folded": r.kind == "group" and r.key in tl.collapsed})
    out = {"preparing": bool(tl.preparing), "visible": visible, "shown": len(layout.rows),
           "total": len(model.rows),
           "folded_groups": len([i for i in layout.rows
                                 if model.rows[int(i)].key in tl.collapsed]),
           "hidden_in_folds": len(model.rows) - len(layout.rows)}
    extra = getattr(tl, "screen_state", None)
    if callable(extra):
        out.update(extra())
    return out
