"""Byte-level mutations of a seed file, drawn through a Hypothesis ``draw`` function
(``st.data().draw``), so that the short derandomised CI run and the long campaign
share them. Each returns the new bytes and a short description for the note."""

from __future__ import annotations

import gzip
import re
import zlib

from hypothesis import strategies as st

# values that broke or nearly broke readers before: overflow, sign, NaN, huge, empty
INTERESTING = [b"0", b"-1", b"1", b"-0", b"9223372036854775807", b"-9223372036854775808",
               b"18446744073709551616", b"9.2e18", b"1e400", b"-1e400", b"nan", b"inf",
               b"-inf", b"NaN", b"null", b'""', b"", b"99,999,999,999,999,999,999,999",
               b"0x7f", b"1.5", b"2147483648", b"-2147483649", b"1e-400", b"true"]
NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
KINDS = ("truncate", "flip", "splice", "delete", "duplicate", "zero", "number", "line",
         "random")


def _pos(draw, data: bytes) -> int:
    return draw(st.integers(0, len(data)))


def _number(draw, data: bytes) -> tuple[bytes, str]:
    """Replace one numeric token (the first at or after a drawn position)."""
    m = NUMBER.search(data, _pos(draw, data)) or NUMBER.search(data)
    if m is None:
        return data, "number: no numeric token"
    new = draw(st.sampled_from(INTERESTING))
    return data[:m.start()] + new + data[m.end():], f"number at byte {m.start()} -> {new!r}"


def _line(draw, data: bytes) -> tuple[bytes, str]:
    """Drop, duplicate or swap whole lines (CSV rows, JSON lines)."""
    lines = data.split(b"\n")
    if len(lines) < 2:
        return data, "line: one line only"
    i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
    op = draw(st.sampled_from(["drop", "duplicate", "swap"]))
    if op == "drop":
        del lines[i]
    elif op == "duplicate":
        lines.insert(j, lines[i])
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines), f"line {op} {i} {j}"


def _bytes_op(draw, kind: str, data: bytes) -> tuple[bytes, str]:
    """The plain byte mutations: cut, overwrite, insert, remove, repeat, zero."""
    if kind == "truncate":
        cut = _pos(draw, data)
        return data[:cut], f"truncate at {cut}"
    if kind == "flip":
        out, where = bytearray(data), []
        for _ in range(draw(st.integers(1, 8)) if out else 0):
            i = draw(st.integers(0, len(out) - 1))
            out[i] = draw(st.integers(0, 255))
            where.append(i)
        return bytes(out), f"flip bytes {where}"
    if kind == "splice":
        i, junk = _pos(draw, data), draw(st.binary(min_size=1, max_size=64))
        return data[:i] + junk + data[i:], f"splice {len(junk)} bytes at {i}"
    i = _pos(draw, data)
    n = draw(st.integers(1, 4096))
    if kind == "delete":
        return data[:i] + data[i + n:], f"delete {n} bytes at {i}"
    if kind == "duplicate":
        return data[:i] + data[i:i + n] + data[i:], f"duplicate {n} bytes at {i}"
    return data[:i] + bytes(len(data[i:i + n])) + data[i + n:], f"zero {n} bytes at {i}"


def mutate(draw, data: bytes) -> tuple[bytes, str]:
    """One mutation of ``data``. A gzip file is mutated either as compressed bytes or
    as its content, re-gzipped (the latter reaches the JSON parsers)."""
    if data[:2] == b"\x1f\x8b" and draw(st.booleans()):
        inner = _gunzip(data)
        if inner is not None:
            out, what = mutate_plain(draw, inner)
            return gzip.compress(out, compresslevel=1, mtime=0), f"inside the gzip: {what}"
    return mutate_plain(draw, data)


def mutate_plain(draw, data: bytes) -> tuple[bytes, str]:
    kind = draw(st.sampled_from(KINDS))
    if kind == "number":
        return _number(draw, data)
    if kind == "line":
        return _line(draw, data)
    if kind == "random":
        junk = draw(st.binary(max_size=2048))
        return junk, f"random {len(junk)} bytes"
    return _bytes_op(draw, kind, data)


_GUNZIPPED: dict[int, bytes | None] = {}


def _gunzip(data: bytes) -> bytes | None:
    """The content of a pristine seed gzip (memoised: seeds are few and reused)."""
    key = hash(data)
    if key not in _GUNZIPPED:
        try:
            _GUNZIPPED[key] = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            _GUNZIPPED[key] = None
    return _GUNZIPPED[key]
