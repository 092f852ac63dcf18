"""Issue 16: switching the theme (View > Theme) leaves no panel with the old theme's
colours: no widget keeps a palette of its own that differs from the app's, and the
plots (queue delay, the tuner's A/B chart) take the new background and text colours."""

from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QWidget

from hipscope.app.main_window import MainWindow

ROLES = (QPalette.ColorRole.Window, QPalette.ColorRole.WindowText, QPalette.ColorRole.Base,
         QPalette.ColorRole.Text, QPalette.ColorRole.Highlight, QPalette.ColorRole.Button)


@pytest.fixture
def window(tiny_window):
    w, tab = tiny_window()
    yield w, tab
    w.theme_actions["system"].trigger()


def _stale(w: MainWindow) -> list[str]:
    """Widgets whose colours differ from the app's palette after a switch."""
    app = QApplication.instance()
    want = app.palette()
    out = []
    for wid in [w, *w.findChildren(QWidget)]:
        pal = QWidget.palette(wid)       # (the timeline names its colour table "palette")
        if isinstance(wid, pg.GraphicsView):
            if wid.backgroundBrush().color() != want.color(QPalette.ColorRole.Base):
                out.append(f"{type(wid).__name__}: background")
            for item in wid.scene().items():
                if isinstance(item, pg.AxisItem) and \
                        item.textPen().color() != want.color(QPalette.ColorRole.WindowText):
                    out.append(f"{type(wid).__name__}: axis text")
        group = pal.currentColorGroup()             # disabled widgets: their group
        wrong = [r.name for r in ROLES if pal.color(group, r) != want.color(group, r)]
        if wrong:
            out.append(f"{type(wid).__name__} {wid.objectName()!r}: {wrong}")
    return out


@pytest.mark.parametrize("first, then", [("dark", "light"), ("light", "dark")])
def test_a_theme_switch_leaves_no_old_colours(qtbot, window, first, then):
    w, tab = window
    w.theme_actions[first].trigger()
    for key in ("queue_delay", "tuner", "kernels"):     # the docks that hold plots / labels
        if key in w.docks:
            w.docks[key].show()
    qtbot.waitUntil(lambda: QApplication.instance().property("hipscope_theme") == first)
    assert tab.panels["tuner"].chart is not None        # built at the first test shown
    w.theme_actions[then].trigger()
    assert QApplication.instance().property("hipscope_theme") == then
    QApplication.sendPostedEvents()                     # the palette changes are posted
    QApplication.processEvents()
    plots = [x for x in w.findChildren(QWidget) if isinstance(x, pg.GraphicsView)]
    assert len(plots) >= 3                               # queue delay x2, the A/B chart
    assert _stale(w) == []
    busy = tab.panels["kernels"].busy_label
    assert busy.palette().color(busy.foregroundRole()) == \
        QApplication.instance().palette().color(QPalette.ColorRole.Highlight)
    assert busy.font().bold()
