"""Persistent settings (QSettings): window geometry, dock layout, recent files.

The organisation/application names of the QCoreApplication pick the store, so a
test that sets its own names (and ``QSettings.setPath``) never touches the user's.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

MAX_RECENT = 10


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
