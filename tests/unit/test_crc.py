"""The caches' CRC-32 in threads equals zlib's of the whole buffer (manifests written
before it still verify), for every length around the piece boundaries."""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa
import pytest

from hipscope.parsers import crc


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(crc, "CHUNK", 4096)
    monkeypatch.setattr(crc, "_workers", lambda: 3)


@pytest.mark.parametrize("n", [0, 1, 4095, 3 * 4096 - 1, 3 * 4096, 3 * 4096 + 1,
                               5 * 4096 + 17, 64 * 4096 - 3])
def test_equal_to_zlib_for_every_length(small_pieces, n):
    data = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    want = zlib.crc32(data.tobytes())
    assert crc.crc32(data.tobytes()) == want
    assert crc.crc32(pa.py_buffer(data.tobytes())) == want      # the trace cache's buffers
    assert crc.crc32(memoryview(data.tobytes())[0:]) == want
    if n:
        assert crc.crc32(np.arange(n, dtype=np.int64)) == zlib.crc32(np.arange(n).tobytes())


def test_a_flipped_bit_anywhere_changes_it(small_pieces):
    data = bytearray(np.random.default_rng(1).integers(0, 256, 9 * 4096, np.uint8).tobytes())
    want = crc.crc32(bytes(data))
    for at in (0, 4095, 4096, 5 * 4096 + 3, len(data) - 1):
        data[at] ^= 0x10
        assert crc.crc32(bytes(data)) != want
        data[at] ^= 0x10
