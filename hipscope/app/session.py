"""The window's theme choice and its session: the trace tabs reopened at start."""

from __future__ import annotations

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
