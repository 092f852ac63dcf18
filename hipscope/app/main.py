"""`run_app`: start the Qt application, open traces, optionally save a screenshot."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEventLoop, Qt, QTimer
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QStyleFactory

log = logging.getLogger(__name__)

SCREENSHOT_SIZE = (1600, 1000)
SETTLE_MS = 300           # let deferred drawing (timers, level of detail) finish


def dark_palette() -> QPalette:
    p = QPalette()
    base, window, text = QColor(30, 31, 34), QColor(43, 45, 48), QColor(223, 225, 229)
    disabled = QColor(128, 130, 134)
    roles = {
        QPalette.ColorRole.Window: window, QPalette.ColorRole.WindowText: text,
        QPalette.ColorRole.Base: base, QPalette.ColorRole.AlternateBase: QColor(37, 38, 41),
        QPalette.ColorRole.ToolTipBase: QColor(55, 57, 61), QPalette.ColorRole.ToolTipText: text,
        QPalette.ColorRole.PlaceholderText: disabled, QPalette.ColorRole.Text: text,
        QPalette.ColorRole.Button: window, QPalette.ColorRole.ButtonText: text,
        QPalette.ColorRole.BrightText: QColor(255, 80, 80),
        QPalette.ColorRole.Link: QColor(86, 156, 214),
        QPalette.ColorRole.Highlight: QColor(53, 116, 240),
        QPalette.ColorRole.HighlightedText: QColor(255, 255, 255),
        QPalette.ColorRole.Light: QColor(70, 72, 76), QPalette.ColorRole.Midlight: QColor(58, 60, 64),
        QPalette.ColorRole.Mid: QColor(40, 41, 44), QPalette.ColorRole.Dark: QColor(25, 26, 28),
        QPalette.ColorRole.Shadow: QColor(10, 10, 10),
    }
    for role, color in roles.items():
        p.setColor(role, color)
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text,
                 QPalette.ColorRole.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    return p


def wants_dark(app: QGuiApplication) -> bool:
    """$HIPSCOPE_THEME (dark/light) wins; else the system colour scheme (Qt 6.5+)."""
    env = os.environ.get("HIPSCOPE_THEME", "").lower()
    if env in ("dark", "light"):
        return env == "dark"
    hints = app.styleHints()
    return hasattr(hints, "colorScheme") and hints.colorScheme() == Qt.ColorScheme.Dark


def apply_theme(app: QApplication) -> None:
    """Fusion everywhere (consistent look); a dark palette when the system is dark."""
    app.setStyle(QStyleFactory.create("Fusion"))
    app.setPalette(dark_palette() if wants_dark(app) else app.style().standardPalette())


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
    apply_theme(app)
    hints = app.styleHints()
    if hasattr(hints, "colorSchemeChanged") and not app.property("hipscope_theme_hooked"):
        app.setProperty("hipscope_theme_hooked", True)
        hints.colorSchemeChanged.connect(lambda _s: apply_theme(app))
    return app


def run_app(paths: list[Path], screenshot: Path | None = None, compare: bool = False) -> int:
    """Open the main window with ``paths`` (one tab each; with ``compare``: one
    comparison tab of them all, the first is A). With ``screenshot``: wait until
    every tab has loaded and drawn, save the window to that PNG and return 0; print
    the error and return 2 when a trace could not be opened."""
    from .main_window import MainWindow

    app = _application()
    window = MainWindow(persist=screenshot is None)
    if screenshot is not None:
        window.resize(*SCREENSHOT_SIZE)
    window.show()
    if compare:
        window.compare_paths([Path(p) for p in paths])
    else:
        window.open_paths([Path(p) for p in paths])
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
    timelines = [tl for tab in window.tab_list() for tl in tab.timelines]
    for tl in timelines:                   # the timeline prepares its rows in a worker
        if tl.preparing:
            wait = QEventLoop()
            tl.prepared.connect(wait.quit)
            QTimer.singleShot(60_000, wait.quit)
            if tl.preparing:
                wait.exec()
    settle = QEventLoop()
    QTimer.singleShot(SETTLE_MS, settle.quit)
    settle.exec()
    app.processEvents()
    out.parent.mkdir(parents=True, exist_ok=True)
    if not window.grab().save(str(out)):
        print(f"hipscope: could not write the screenshot to {out}.", file=sys.stderr)
        return 2
    for tab in failed:
        print(f"hipscope: {tab.error}", file=sys.stderr)
    return 2 if failed else 0
