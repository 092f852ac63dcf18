"""The app's theme: Fusion with a dark or light palette, chosen in View > Theme
(``system``, ``light``, ``dark``; kept in the settings), and the timeline canvas to
match (a light canvas in the light theme)."""

from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QStyleFactory

THEMES = ("system", "light", "dark")


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
        QPalette.ColorRole.Light: QColor(70, 72, 76),
        QPalette.ColorRole.Midlight: QColor(58, 60, 64),
        QPalette.ColorRole.Mid: QColor(40, 41, 44), QPalette.ColorRole.Dark: QColor(25, 26, 28),
        QPalette.ColorRole.Shadow: QColor(10, 10, 10),
    }
    for role, color in roles.items():
        p.setColor(role, color)
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text,
                 QPalette.ColorRole.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    return p


def wants_dark(app: QGuiApplication, choice: str = "system") -> bool:
    """``choice`` dark/light wins; for ``system``: $HIPSCOPE_THEME (dark/light), else
    the system colour scheme (Qt 6.5+)."""
    if choice in ("dark", "light"):
        return choice == "dark"
    env = os.environ.get("HIPSCOPE_THEME", "").lower()
    if env in ("dark", "light"):
        return env == "dark"
    hints = app.styleHints()
    return hasattr(hints, "colorScheme") and hints.colorScheme() == Qt.ColorScheme.Dark


def apply_theme(app: QApplication, choice: str = "system", timelines=()) -> bool:
    """Fusion everywhere (consistent look), a dark or light palette and the timeline
    canvas to match (``timelines`` are repainted); returns True for dark."""
    from ..views.timeline.theme import set_canvas

    dark = wants_dark(app, choice)
    app.setStyle(QStyleFactory.create("Fusion"))
    app.setPalette(dark_palette() if dark else app.style().standardPalette())
    app.setProperty("hipscope_theme", "dark" if dark else "light")
    set_canvas("dark" if dark else "light", timelines)
    return dark
