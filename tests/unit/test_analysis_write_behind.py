"""The analysis cache written behind (the app: ``persist.write_behind``): ``save``
returns before the file is on disk, a load of that result waits for its write and gets
the value, the value's arrays are read-only from the save on (a write in flight never
sees them change), and the process does not end before its writes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from hipscope.analysis import persist
from hipscope.parsers import open_trace
from tests.conftest import DATA

ROOT = Path(__file__).resolve().parents[2]
LINKED = DATA / "gpu" / "launch_bound.json.gz"


@pytest.fixture
def behind():
    persist.write_behind(True)
    try:
        yield
    finally:
        persist.flush()
        persist.write_behind(False)


@pytest.fixture
def held(monkeypatch):
    """Writes wait for ``gate``; ``started`` once one began."""
    gate, started = threading.Event(), threading.Event()
    real = persist._write_atomic

    def slow(p, pieces):
        started.set()
        assert gate.wait(30)
        real(p, pieces)

    monkeypatch.setattr(persist, "_write_atomic", slow)
    return gate, started


def _store():
    tr = open_trace(LINKED, use_cache=True)
    store = persist.store_for(tr)
    assert store is not None
    return store


def test_save_returns_before_the_write_and_a_load_waits_for_it(behind, held):
    gate, started = held
    store = _store()
    value = {"a": np.arange(1000, dtype=np.int64), "n": 3}
    assert store.save(("test_result",), value) is True
    assert started.wait(10)
    assert not store._path(("test_result",)).exists()      # not written yet
    threading.Timer(0.2, gate.set).start()
    (got,) = store.load(("test_result",))                   # waits for the write
    assert got["n"] == 3 and got["a"].tolist() == list(range(1000))


def test_the_saved_values_arrays_are_read_only(behind):
    store = _store()
    a = np.arange(10)
    store.save(("test_frozen",), {"a": a})
    with pytest.raises(ValueError):
        a[0] = 99
    persist.flush()
    (got,) = store.load(("test_frozen",))
    assert got["a"].tolist() == list(range(10))


def test_writes_of_one_result_land_in_order(behind, held):
    gate, _started = held
    store = _store()
    for i in range(3):
        store.save(("test_order",), {"i": i})
    gate.set()
    persist.flush()
    assert store.load(("test_order",))[0] == {"i": 2}


def test_in_line_without_write_behind():
    store = _store()
    a = np.arange(5)
    assert store.save(("test_inline",), {"a": a}) is True
    assert store._path(("test_inline",)).exists()
    a[0] = 7                                   # the caller's array stays its own


PROGRAM = """
import sys, numpy as np
from hipscope.analysis import persist
from hipscope.parsers import open_trace
tr = open_trace(sys.argv[1], use_cache=True)
persist.write_behind(True)
persist.store_for(tr).save(("test_exit",), {"a": np.arange(4_000_000)})
print(persist.store_for(tr)._path(("test_exit",)))
"""


def test_the_process_ends_after_its_writes(tmp_path):
    env = dict(os.environ, HIPSCOPE_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", PROGRAM, str(LINKED)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    p = Path(out.stdout.strip())
    key = p.parent.parent.name                 # the trace's cache entry
    got = persist.from_bytes(persist._verified(memoryview(p.read_bytes()), key), copy=True)
    assert got["a"].tolist() == list(range(4_000_000))
