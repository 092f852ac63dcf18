"""`HostKeyAsker`: the launchers' ``host_key_callback``, asked on the GUI thread."""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QMessageBox, QWidget


class _Question:
    def __init__(self, host: str, key_type: str, fp: str):
        self.host, self.key_type, self.fp = host, key_type, fp
        self.answer = False
        self.done = threading.Event()


class HostKeyAsker(QObject):
    """A ``host_key_callback`` for the launchers: called on any thread, asks the user on
    the GUI thread (a message box with the fingerprint) and returns the answer."""

    _asked = Signal(object)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._pending: set[_Question] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._asked.connect(self._on_asked, Qt.ConnectionType.QueuedConnection)

    def __call__(self, host: str, key_type: str, fp: str) -> bool:
        if threading.current_thread() is threading.main_thread():
            return self.ask(host, key_type, fp)
        q = _Question(host, key_type, fp)
        with self._lock:
            if self._closed:
                return False
            self._pending.add(q)
        self._asked.emit(q)
        q.done.wait()
        return q.answer

    def ask(self, host: str, key_type: str, fp: str) -> bool:
        owner = self.parent()
        parent = owner if isinstance(owner, QWidget) else None
        text = (f"The authenticity of host {host} can't be established.\n"
                f"Its {key_type} key fingerprint is\n\n    {fp}\n\n"
                "Trust this key and add it to known_hosts? Check the fingerprint with "
                "the host's administrator first.")
        got = QMessageBox.question(parent, "Unknown SSH host key", text,
                                   QMessageBox.StandardButton.Yes
                                   | QMessageBox.StandardButton.No,
                                   QMessageBox.StandardButton.No)
        return got == QMessageBox.StandardButton.Yes

    def _on_asked(self, q: _Question) -> None:
        if not q.done.is_set():
            q.answer = False if self._closed else self.ask(q.host, q.key_type, q.fp)
            q.done.set()
        with self._lock:
            self._pending.discard(q)

    def shutdown(self) -> None:
        """Answer 'no' to every waiting question (the window is closing)."""
        with self._lock:
            self._closed = True
            pending, self._pending = list(self._pending), set()
        for q in pending:
            q.done.set()
