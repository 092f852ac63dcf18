"""`run_app`: start the Qt application, open traces, optionally save a screenshot."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEventLoop, Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from .head_start import HeadStart, head_start
from .settings import Settings
from .theme import apply_theme, dark_palette, wants_dark

__all__ = ["apply_theme", "dark_palette", "run_app", "wants_dark"]

log = logging.getLogger(__name__)

SCREENSHOT_SIZE = (1920, 1080)
SETTLE_MS = 300           # let deferred drawing (timers, level of detail) finish


def _application() -> QApplication:
    app = QApplication.instance()
    if app is None:
        QGuiApplication.setHighDpiScaleFactorRoundingPolicy(
            Qt.HighDpiScaleFactorRoundingPolicy.PassThrough)
        app = QApplication(sys.argv[:1])
    if not QCoreApplication.organizationName():
        QCoreApplication.setOrganizationName("hipscope")
    if QCoreApplication.applicationName() in ("", "python", "python3", Path(sys.argv[0]).name):
        QCoreApplication.setApplicationName("hipscope")
    app.setApplicationDisplayName("hipscope")
    apply_theme(app, Settings().theme())
    return app


def run_app(paths: list[Path], screenshot: Path | None = None, compare: bool = False,
            ranks: bool = False, head: HeadStart | None = None) -> int:
    """Open the main window with ``paths`` (one tab each; with ``compare``: one
    comparison tab of them all, the first is A; with ``ranks``: one Ranks tab of the
    job they make up). With ``screenshot``: wait until
    every tab has loaded and drawn, save the window to that PNG (and what it shows
    to the same name with ``.json``, app/screen_state.py) and return 0; print the
    error and return 2 when a trace could not be opened. ``head``: the read of
    ``paths`` already started (:func:`.head_start.head_start`); else it starts here,
    while Qt and the window are built."""
    from ..analysis import persist
    from ..parsers import cache_jobs

    was_behind = persist.write_behind(True)   # the first frame does not wait for its file
    if head is None:
        head = head_start(paths, compare, ranks)
    try:
        return _run(head, paths, screenshot, compare, ranks)
    finally:
        if head is not None:
            head.cancel()
        cache_jobs.release_all()     # entries held for a first frame: stored now, while
        cache_jobs.flush()           # the interpreter still runs their thread pools
        persist.flush()
        persist.write_behind(was_behind)     # an in-process caller (a test) gets it back


def _run(head, paths: list[Path], screenshot: Path | None, compare: bool, ranks: bool
         ) -> int:
    from .main_window import MainWindow

    app = _application()
    window = MainWindow(persist=screenshot is None,
                        loader=head.loader if head is not None else None)
    if screenshot is not None:
        window.resize(*SCREENSHOT_SIZE)
    window.show()
    if compare:
        window.compare_paths([Path(p) for p in paths])
    elif ranks and paths:
        from .ranks_ui import open_ranks

        open_ranks(window, paths)
    elif paths:
        window.open_paths([Path(p) for p in paths])
    elif screenshot is None:
        window.restore_session()           # the last session's tabs, when switched on
    if screenshot is None:
        window.raise_()
        rc = app.exec()
        return int(rc)
    try:
        return _screenshot(app, window, Path(screenshot))
    finally:
        window.close()
        window.deleteLater()
        QCoreApplication.sendPostedEvents(None, 0)


def _screenshot(app: QApplication, window, out: Path) -> int:
    loop = QEventLoop()
    window.loads_settled.connect(loop.quit)
    if window.is_loading():
        loop.exec()
    failed = [t for t in window.tab_list() if t.state == "failed"]
    for tab in window.tab_list():
        for tl in tab.timelines:           # the timeline prepares its rows in a worker
            _wait_for(tl.prepared, lambda tl=tl: tl.preparing)
        diags = getattr(tab, "diagnostics", None)
        if diags is not None:              # so do big traces' diagnostics
            _wait_for(diags.changed, lambda d=diags: d.pending)
    settle = QEventLoop()
    QTimer.singleShot(SETTLE_MS, settle.quit)
    settle.exec()
    app.processEvents()
    out.parent.mkdir(parents=True, exist_ok=True)
    if not window.grab().save(str(out)):
        print(f"hipscope: could not write the screenshot to {out}.", file=sys.stderr)
        return 2
    from .screen_state import write_screen_state

    try:
        write_screen_state(window, out)
    except OSError as exc:
        print(f"hipscope: could not write {out.with_suffix('.json')}: {exc.strerror}.",
              file=sys.stderr)
        return 2
    for tab in failed:
        print(f"hipscope: {tab.error}", file=sys.stderr)
    return 2 if failed else 0


def _wait_for(signal, busy, timeout_ms: int = 60_000) -> None:
    """Run the event loop until ``signal`` fires, while ``busy()`` (at most the timeout)."""
    if not busy():
        return
    wait = QEventLoop()
    signal.connect(wait.quit)
    QTimer.singleShot(timeout_ms, wait.quit)
    if busy():
        wait.exec()
