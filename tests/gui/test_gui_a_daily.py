"""Issue 16 item 13: View > Theme (with a light timeline canvas in the light theme),
recent files and the bundled sample on the empty screen, reopening the last
session's tabs (a setting)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QStyleFactory

from hipscope.app.empty_page import sample_path
from hipscope.app.settings import Settings
from hipscope.views.timeline.render import AXIS_H

from .conftest import make_tiny_trace, stand_in


def tiny_loader(paths, progress, cancelled):
    return make_tiny_trace()


@pytest.fixture(autouse=True)
def _restore_theme(qapp):
    """The theme is the application's: leave it (and the canvas) as it was."""
    from hipscope.views.timeline import palette as pal

    style, palette, canvas = qapp.style().name(), qapp.palette(), pal.CANVAS
    yield
    qapp.setStyle(QStyleFactory.create(style))
    qapp.setPalette(palette)
    pal.set_canvas(canvas)


@pytest.fixture
def window(make_window):
    return lambda **kw: make_window(loader=tiny_loader, size=(1400, 900), **kw)


def _files(tmp_path, *names):
    return [stand_in(tmp_path, n) for n in names]


def _loaded(qtbot, tab):
    qtbot.waitUntil(lambda: tab.state == "loaded", timeout=20_000)
    return tab


def _canvas_lightness(tab) -> int:
    """The timeline's label column under the axis (no event is drawn there)."""
    img = tab.timeline.grab().toImage()
    return img.pixelColor(3, AXIS_H + 3).lightness()


def test_theme_toggle_repaints_the_app_and_the_timeline_canvas(window, qtbot, qapp, tmp_path):
    (p,) = _files(tmp_path, "a.trace")
    w = window()
    tab = _loaded(qtbot, w.open_paths([p])[0])
    w.action_by_id["view.theme.dark"].trigger()
    assert qapp.palette().color(QPalette.ColorRole.Window).lightness() < 100
    assert _canvas_lightness(tab) < 80
    w.action_by_id["view.theme.light"].trigger()
    assert qapp.palette().color(QPalette.ColorRole.Window).lightness() > 180
    assert _canvas_lightness(tab) > 200                 # the open tab follows at once
    assert w.action_by_id["view.theme.light"].isChecked()
    assert not w.action_by_id["view.theme.dark"].isChecked()
    assert Settings().theme() == "light"                 # kept for the next start
    tab2 = _loaded(qtbot, w.open_paths(_files(tmp_path, "b.trace"))[0])
    assert _canvas_lightness(tab2) > 200                 # a new tab starts light
    w2 = window()
    assert w2.action_by_id["view.theme.light"].isChecked()


def test_empty_screen_offers_recent_files_and_the_sample(window, qtbot, tmp_path):
    a, b = _files(tmp_path, "first.trace", "second.trace")
    s = Settings()
    s.add_recent(tmp_path / "gone.trace")               # no longer on disk: not offered
    s.add_recent(a)
    s.add_recent(b)
    w = window()
    assert w._central_stack.currentWidget() is w.empty_page
    page = w.empty_page
    assert [btn.text() for btn in page.recent_buttons] == ["second.trace", "first.trace"]
    assert all(btn.isVisible() for btn in page.recent_buttons)
    qtbot.mouseClick(page.recent_buttons[1], Qt.MouseButton.LeftButton)
    tab = _loaded(qtbot, w.current_tab())
    assert tab.paths == [a]
    w.close_tab(tab)
    assert w._central_stack.currentWidget() is page
    assert sample_path().exists() and page.sample_button.isVisible()
    qtbot.mouseClick(page.sample_button, Qt.MouseButton.LeftButton)
    assert _loaded(qtbot, w.current_tab()).paths == [sample_path()]


def test_last_sessions_tabs_reopen_when_switched_on(window, qtbot, tmp_path):
    a, b, c = _files(tmp_path, "a.trace", "b.trace", "c.trace")
    w = window()
    assert not w.reopen_action.isChecked()               # off by default
    w.reopen_action.trigger()
    for tab in (*w.open_paths([a, b]), w.open_run_trace([c, a])):
        _loaded(qtbot, tab)
    w.close()
    w2 = window()
    assert w2.reopen_action.isChecked()
    reopened = [t.paths for t in w2.restore_session()]
    assert reopened == [[a.resolve()], [b.resolve()], [c.resolve(), a.resolve()]]
    w2.close()
    b.unlink()                                           # a tab whose file is gone is skipped
    w3 = window()
    assert [t.paths for t in w3.restore_session()] == [[a.resolve()], [c.resolve(), a.resolve()]]
    w3.reopen_action.trigger()                           # switched off: nothing reopens
    w3.close()
    assert window().restore_session() == []
