"""Persistent settings (QSettings): window geometry, dock layout, recent files, the
theme, the tabs to reopen at start (when that is switched on) and, per trace, the
timeline's track choices.

The organisation/application names of the QCoreApplication pick the store, so a
test that sets its own names (and ``QSettings.setPath``) never touches the user's.
"""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

MAX_RECENT = 10
MAX_TRACK_STATES = 100          # traces whose track choices are kept (most recent)


class Settings:
    def __init__(self, store: QSettings | None = None):
        self.store = store if store is not None else QSettings()

    # ---- recent files --------------------------------------------------------------
    def recent_files(self) -> list[Path]:
        raw = self.store.value("recent/files", [])
        if isinstance(raw, str):           # QSettings returns a bare str for one item
            raw = [raw]
        return [Path(p) for p in (raw or []) if p]

    def add_recent(self, path: Path | str) -> None:
        p = str(Path(path).resolve())
        items = [str(x) for x in self.recent_files() if str(x) != p]
        self.store.setValue("recent/files", [p, *items][:MAX_RECENT])
        self.store.sync()

    def clear_recent(self) -> None:
        self.store.setValue("recent/files", [])
        self.store.sync()

    # ---- window --------------------------------------------------------------------
    def geometry(self) -> QByteArray | None:
        v = self.store.value("window/geometry")
        return v if isinstance(v, QByteArray) and not v.isEmpty() else None

    def window_state(self) -> QByteArray | None:
        v = self.store.value("window/state")
        return v if isinstance(v, QByteArray) and not v.isEmpty() else None

    def save_window(self, geometry: QByteArray, state: QByteArray) -> None:
        self.store.setValue("window/geometry", geometry)
        self.store.setValue("window/state", state)
        self.store.sync()

    def last_dir(self) -> str:
        return str(self.store.value("recent/last_dir", "") or "")

    def set_last_dir(self, path: Path | str) -> None:
        self.store.setValue("recent/last_dir", str(path))

    # ---- theme and session ---------------------------------------------------------
    def theme(self) -> str:
        """``system`` (default), ``light`` or ``dark``."""
        v = str(self.store.value("view/theme", "system") or "system")
        return v if v in ("system", "light", "dark") else "system"

    def set_theme(self, name: str) -> None:
        self.store.setValue("view/theme", name)
        self.store.sync()

    def reopen_session(self) -> bool:
        """Whether the last session's tabs open at start (off by default)."""
        return str(self.store.value("session/reopen", "false")).lower() == "true"

    def set_reopen_session(self, on: bool) -> None:
        self.store.setValue("session/reopen", "true" if on else "false")
        self.store.sync()

    def session(self) -> list[list[Path]]:
        """The trace tabs open when the window last closed: each tab's files."""
        raw = self.store.value("session/tabs", "[]")
        try:
            tabs = json.loads(raw if isinstance(raw, str) else "[]")
        except ValueError:
            return []
        return [[Path(p) for p in t] for t in tabs
                if isinstance(t, list) and t and all(isinstance(p, str) for p in t)]

    def save_session(self, tabs: list[list[Path]]) -> None:
        self.store.setValue("session/tabs",
                            json.dumps([[str(Path(p).resolve()) for p in t] for t in tabs]))
        self.store.sync()

    # ---- track choices per trace ---------------------------------------------------
    def track_state(self, identity: str) -> dict | None:
        """The timeline's track choices saved for a trace identity (None: none)."""
        raw = self.store.value(f"tracks/{identity}")
        try:
            v = json.loads(raw) if isinstance(raw, str) else None
        except ValueError:
            return None
        return v if isinstance(v, dict) else None

    def save_track_state(self, identity: str, state: dict) -> None:
        """Keep ``state`` for ``identity``; the oldest beyond MAX_TRACK_STATES go."""
        raw = self.store.value("tracks/index", "[]")
        try:
            index = json.loads(raw) if isinstance(raw, str) else []
        except ValueError:
            index = []
        index = [identity, *(k for k in index if isinstance(k, str) and k != identity)]
        for old in index[MAX_TRACK_STATES:]:
            self.store.remove(f"tracks/{old}")
        self.store.setValue(f"tracks/{identity}", json.dumps(state, sort_keys=True))
        self.store.setValue("tracks/index", json.dumps(index[:MAX_TRACK_STATES]))
        self.store.sync()
