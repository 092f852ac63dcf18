"""A whole file read in parallel pieces (parsers/reading.py ``read_whole`` and its C
helper ``_fastread``): the same bytes as one read(), a file that shrank or changed is
read plainly, errors are OSError, and a missing extension reads with read()."""

from __future__ import annotations

import os

import numpy as np
import pytest

from hipscope.parsers import reading

fastread = pytest.importorskip("hipscope.parsers._fastread")


def _file(path, n: int) -> bytes:
    data = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8).tobytes()
    path.write_bytes(data)
    return data


@pytest.mark.parametrize("n", [0, 1, 4095, reading.PARALLEL_MIN + 12_345])
def test_read_whole_gives_the_bytes_one_read_gives(tmp_path, n):
    p = tmp_path / "t.json"
    want = _file(p, n)
    got = reading.read_whole(p)
    assert type(got) is bytes and got == want == p.read_bytes()


@pytest.mark.parametrize("threads", [1, 2, 3, 8, 99])
def test_the_pieces_join_whatever_the_thread_count(tmp_path, threads):
    p = tmp_path / "t.bin"
    want = _file(p, 1_000_003)
    with open(p, "rb") as fh:
        assert fastread.read(fh.fileno(), len(want), threads) == want


def test_a_file_that_ends_early_is_none_and_errors_are_oserror(tmp_path):
    p = tmp_path / "t.bin"
    want = _file(p, 10_000)
    with open(p, "rb") as fh:
        assert fastread.read(fh.fileno(), len(want) + 1, 2) is None    # it shrank
    fd = os.open(tmp_path, os.O_RDONLY)                            # a folder: EISDIR
    try:
        with pytest.raises(OSError):
            fastread.read(fd, 10, 2)
    finally:
        os.close(fd)


def test_a_file_that_changed_while_read_is_read_plainly(tmp_path, monkeypatch):
    p = tmp_path / "t.json"
    want = _file(p, reading.PARALLEL_MIN)

    class Shrank:                      # the file ended before its size: read() reads it
        @staticmethod
        def read(fd, size, threads):
            return None

    monkeypatch.setattr(reading, "_fastread", lambda: Shrank)
    assert reading.read_whole(p) == want

    class Grew:                        # it grew during the read: read() to its end
        @staticmethod
        def read(fd, size, threads):
            with open(p, "ab") as fh:
                fh.write(b"tail")
            return want

    monkeypatch.setattr(reading, "_fastread", lambda: Grew)
    assert reading.read_whole(p) == want + b"tail"
    monkeypatch.setattr(reading, "_fastread", lambda: None)        # not built
    assert reading.read_whole(p) == want + b"tail"
