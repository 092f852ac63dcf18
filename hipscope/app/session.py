"""The window's theme choice and its session: the trace tabs reopened at start, and
each trace's track choices (hidden, pinned, moved, folded tracks, the label column's
width), kept per trace identity: its files' paths and the content key the trace cache
gave it (``meta["cache_key"]``), so an edited file starts afresh."""

from __future__ import annotations

from hashlib import blake2b
from pathlib import Path

from PySide6.QtWidgets import QApplication

from .theme import apply_theme


def set_theme(w, choice: str) -> None:
    """Apply ``choice`` (system, light, dark) to the app and the open timelines'
    canvases, tick its View > Theme entry, keep it for the next start."""
    if w.persist:
        w.settings.set_theme(choice)
    w.theme_choice = choice
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    apply_theme(app, choice,
                [tl for t in w.tab_list() for tl in t.timelines])
    for name, a in w.theme_actions.items():
        a.setChecked(name == choice)


def open_tabs(w) -> list[list[Path]]:
    """Each open trace tab's files (comparisons and failed tabs are not kept)."""
    return [list(t.paths) for t in w.tab_list()
            if hasattr(t, "document") and t.state in ("loading", "loaded")]


def restore(w) -> list:
    """Reopen the tabs of the last session when the setting is on; a tab whose files
    are gone is skipped."""
    if not w.settings.reopen_session():
        return []
    return [w.open_run_trace(g) for g in w.settings.session() if all(p.exists() for p in g)]


def trace_identity(tab) -> str | None:
    """A trace tab's identity for its saved track choices (None: no trace yet)."""
    trace = getattr(getattr(tab, "document", None), "trace", None)
    if trace is None:
        return None
    h = blake2b(digest_size=12)
    for p in tab.paths:
        h.update(str(Path(p).resolve()).encode() + b"\0")
    h.update(str(trace.meta.get("cache_key") or "").encode())
    return h.hexdigest()


def save_tracks(w, tab) -> None:
    """Keep a trace tab's track choices (the tab or the window is closing)."""
    from ..views.timeline.track_state import track_state

    tl, ident = getattr(tab, "timeline_api", None), trace_identity(tab)
    state = track_state(tl) if w.persist and tl is not None and ident else None
    if state is not None:
        w.settings.save_track_state(ident, state)


def restore_tracks(w, tab) -> None:
    """Put back a trace tab's saved track choices, on its first load only (a reload
    keeps what the user did since)."""
    from ..views.timeline.track_state import restore_track_state

    tl, ident = getattr(tab, "timeline_api", None), trace_identity(tab)
    if not w.persist or tl is None or not ident or getattr(tab, "tracks_restored", False):
        return
    tab.tracks_restored = True
    restore_track_state(tl, w.settings.track_state(ident))
