"""The one Observable: the state objects and the launchers share its listener rules."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from hipscope.analysis.compare_state import CompareState
from hipscope.launchers.base import Launcher
from hipscope.model.observable import Observable
from hipscope.model.view_state import ViewState
from hipscope.tuner.state import TunerState


def test_every_state_object_is_the_one_observable():
    for cls in (ViewState, CompareState, TunerState, Launcher):
        assert issubclass(cls, Observable)


def test_view_state_listeners_get_pairs_and_can_be_removed():
    vs, seen = ViewState(), []
    remove = vs.subscribe(lambda what, value: seen.append((what, value)))
    vs.set_window(10, 20)
    remove()
    vs.set_window(30, 40)
    assert seen == [("window", (10, 20))]


def test_listeners_stay_out_of_dataclass_equality_and_replace():
    a, b = ViewState(), ViewState()
    a.subscribe(lambda *_: None)
    assert a == b
    c = replace(a, find_text="x")
    c.set_window(5, 6)          # a's listener is not copied into c
    assert c.window == (5, 6)


def test_a_view_state_listener_bug_reaches_the_caller():
    vs = ViewState()
    vs.subscribe(lambda *_: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        vs.set_window(1, 2)


def test_a_tuner_listener_bug_is_logged_and_the_others_still_run(caplog):
    st, seen = TunerState(), []
    st.subscribe(lambda *_: 1 / 0)
    st.subscribe(lambda what, _v: seen.append(what))
    with caplog.at_level(logging.ERROR, logger="hipscope.model.observable"):
        st.set_program("prog")
    assert seen == ["program_changed"]
    assert "TunerState listener" in caplog.text


def test_value_only_listeners_and_watch():
    class Events(Observable):
        _listeners_take_value_only = True

    ev, plain, pairs = Events(), [], []
    ev.subscribe(plain.append)
    ev.watch(lambda what, value: pairs.append((what, value)))
    ev._emit("state", {"kind": "state"})
    assert plain == [{"kind": "state"}]
    assert pairs == [("state", {"kind": "state"})]
