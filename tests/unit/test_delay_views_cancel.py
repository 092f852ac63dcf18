"""The queue-delay view's one worker call stops when cancelled (model/progress.py)."""

from __future__ import annotations

import pytest

from hipscope.analysis import delay_views as dv
from hipscope.cli.main import demo_trace_path
from hipscope.model.progress import Cancelled
from hipscope.parsers import open_trace
from tests.conftest import CancelAfter


def test_compute_view_data_is_cancelled_between_its_steps():
    tr = open_trace(demo_trace_path())
    never = CancelAfter(10**9)
    full = dv.compute_view_data(tr, cancelled=never)
    assert full.data is not None and len(full.data.delay) and full.worst
    again = CancelAfter(10**9)                # the delays now come from the service
    dv.compute_view_data(tr, cancelled=again)
    assert again.calls >= 4                    # between each of its four steps at least
    for n in range(1, again.calls + 1):        # each check stops it, the last one too
        stop = CancelAfter(n)
        with pytest.raises(Cancelled):
            dv.compute_view_data(tr, cancelled=stop)
        assert stop.calls == n
