"""The app's head start (hipscope/app/head_start.py): the trace named on the command
line is read while the window is built, and its tab adopts that read: the same trace
or error, its progress, its Cancel; any other load reads on its own."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hipscope.app.head_start import HeadStart, default_loader
from hipscope.model.progress import Cancelled

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "gpu" / "launch_bound.json.gz"


class Reads:
    """A loader that records its calls; ``gate`` holds each read until set."""

    def __init__(self, result=None, error: BaseException | None = None):
        self.calls: list[tuple[list[Path], str]] = []
        self.gate = threading.Event()
        self.started = threading.Event()
        self.saw_cancel = threading.Event()
        self.result, self.error = result, error

    def __call__(self, paths, progress, cancelled):
        self.calls.append((list(paths), threading.current_thread().name))
        self.started.set()
        progress(0.25)
        while not self.gate.wait(0.01):
            if cancelled():
                self.saw_cancel.set()
                raise Cancelled()
        if self.error is not None:
            raise self.error
        self.made = self.result if self.result is not None else object()
        return self.made


def test_the_read_starts_before_the_tab_asks_and_the_tab_gets_that_trace():
    reads = Reads()
    head = HeadStart([Path("a.csv")], reads)
    assert reads.started.wait(5)             # reading before any tab exists
    seen: list[float] = []
    threading.Timer(0.2, reads.gate.set).start()
    got = head.loader([Path("a.csv")], seen.append, lambda: False)
    assert got is reads.made
    assert [name for _p, name in reads.calls] == ["hipscope-head-start"]   # read once
    assert 0.25 in seen                       # the head start's progress reached the tab


def test_a_retry_and_other_paths_read_on_their_own():
    reads = Reads(result="trace")
    reads.gate.set()
    head = HeadStart([Path("a.csv")], reads)
    assert head.loader([Path("b.csv")], lambda f: None, lambda: False) == "trace"
    assert head.loader([Path("a.csv")], lambda f: None, lambda: False) == "trace"
    assert head.loader([Path("a.csv")], lambda f: None, lambda: False) == "trace"
    threads = [name for _p, name in reads.calls]
    assert threads.count("hipscope-head-start") == 1 and len(threads) == 3


def test_the_reads_error_is_the_tabs_error():
    err = ValueError("the file is cut")
    reads = Reads(error=err)
    reads.gate.set()
    head = HeadStart([Path("a.csv")], reads)
    with pytest.raises(ValueError) as got:
        head.loader([Path("a.csv")], lambda f: None, lambda: False)
    assert got.value is err


def test_the_tabs_cancel_stops_the_read():
    reads = Reads()
    head = HeadStart([Path("a.csv")], reads)
    assert reads.started.wait(5)
    cancel = threading.Event()
    threading.Timer(0.1, cancel.set).start()
    with pytest.raises(Cancelled):
        head.loader([Path("a.csv")], lambda f: None, cancel.is_set)
    assert reads.saw_cancel.wait(5)           # the read itself stopped


def test_a_head_start_no_tab_took_is_cancelled_and_the_path_then_reads_again():
    reads = Reads()
    head = HeadStart([Path("a.csv")], reads)
    assert reads.started.wait(5)
    head.cancel()
    assert reads.saw_cancel.wait(5)
    reads.gate.set()
    head.loader([Path("a.csv")], lambda f: None, lambda: False)
    assert len(reads.calls) == 2


def test_the_real_loader_through_a_head_start_gives_the_trace_a_plain_read_gives(
        tmp_path, monkeypatch):
    monkeypatch.setenv("HIPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    head = HeadStart([SAMPLE], default_loader)
    via_head = head.loader([SAMPLE], lambda f: None, lambda: False)
    plain = default_loader([SAMPLE], lambda f: None, lambda: False)
    assert len(via_head.kernels) == len(plain.kernels) > 0
    assert via_head.kernels.numpy("start").tolist() == plain.kernels.numpy("start").tolist()
