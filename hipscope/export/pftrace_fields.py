"""Protobuf fields encoded column-wise with numpy for :mod:`hipscope.export.pftrace_writer`:
one field for every row of a group of packets (absent where its ``present`` mask is
False), sized first, then written at each row's position of one shared output buffer,
so that groups of packets encoded separately (one per table) interleave in time order
without copying."""

from __future__ import annotations

import numpy as np


# --------------------------------------------------------------------------- varints
def varint_py(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_tag(field: int, wire: int) -> bytes:
    return varint_py((field << 3) | wire)


def varint_len(v: np.ndarray) -> np.ndarray:
    """Bytes of each uint64 as a varint (1..10)."""
    v = v.astype(np.uint64, copy=False)
    n = np.ones(len(v), dtype=np.int64)
    for k in range(1, 10):
        n += v >= np.uint64(1 << (7 * k))
    return n


def _write_varints(out: np.ndarray, pos: np.ndarray, v: np.ndarray, lens: np.ndarray):
    v = v.astype(np.uint64, copy=False)
    maxlen = int(lens.max()) if len(lens) else 0
    for k in range(maxlen):
        sel = lens > k
        if not sel.all():
            idx = np.nonzero(sel)[0]
            vk, pk, lk = v[idx], pos[idx], lens[idx]
        else:
            vk, pk, lk = v, pos, lens
        byte = ((vk >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        byte |= np.where(lk > k + 1, np.uint8(0x80), np.uint8(0))
        out[pk + k] = byte


def _write_const(out: np.ndarray, pos: np.ndarray, raw: bytes) -> None:
    for k, b in enumerate(raw):
        out[pos + k] = b


# --------------------------------------------------------------------------- fields
class Field:
    """A protobuf field for every row of a chunk (absent where ``present`` is False)."""

    def sizes(self) -> np.ndarray:  # bytes per row
        raise NotImplementedError

    def write(self, out: np.ndarray, cur: np.ndarray) -> None:  # advances cur in place
        raise NotImplementedError


class Const(Field):
    def __init__(self, raw: bytes, n: int, present: np.ndarray | None = None):
        self.raw, self.n, self.present = raw, n, present

    def sizes(self):
        s = np.full(self.n, len(self.raw), dtype=np.int64)
        return s if self.present is None else np.where(self.present, s, 0)

    def write(self, out, cur):
        if self.present is None:
            _write_const(out, cur, self.raw)
            cur += len(self.raw)
        else:
            idx = np.nonzero(self.present)[0]
            _write_const(out, cur[idx], self.raw)
            cur[idx] += len(self.raw)


class Varint(Field):
    def __init__(self, tag: bytes, values: np.ndarray, present: np.ndarray | None = None):
        self.tag, self.values, self.present = tag, values.astype(np.uint64), present
        self.lens = varint_len(self.values)

    def sizes(self):
        s = self.lens + len(self.tag)
        return s if self.present is None else np.where(self.present, s, 0)

    def write(self, out, cur):
        if self.present is None:
            idx = slice(None)
            pos = cur
        else:
            idx = np.nonzero(self.present)[0]
            pos = cur[idx]
        _write_const(out, pos, self.tag)
        _write_varints(out, pos + len(self.tag), self.values[idx], self.lens[idx])
        if self.present is None:
            cur += self.lens + len(self.tag)
        else:
            cur[idx] += self.lens[idx] + len(self.tag)


class Fixed64(Field):
    def __init__(self, tag: bytes, values: np.ndarray, present: np.ndarray):
        self.tag, self.values, self.present = tag, values.astype("<u8"), present

    def sizes(self):
        return np.where(self.present, len(self.tag) + 8, 0).astype(np.int64)

    def write(self, out, cur):
        idx = np.nonzero(self.present)[0]
        pos = cur[idx]
        _write_const(out, pos, self.tag)
        raw = self.values[idx].view(np.uint8).reshape(-1, 8)
        for k in range(8):
            out[pos + len(self.tag) + k] = raw[:, k]
        cur[idx] += len(self.tag) + 8


class RaggedFixed64(Field):
    """repeated fixed64 (non-packed): ``counts[i]`` values per row from ``flat``
    (row-major)."""

    def __init__(self, tag: bytes, counts: np.ndarray, flat: np.ndarray):
        self.tag, self.counts, self.flat = tag, counts.astype(np.int64), flat.astype("<u8")

    def sizes(self):
        return self.counts * (len(self.tag) + 8)

    def write(self, out, cur):
        if not len(self.flat):
            return
        rows = np.repeat(np.arange(len(self.counts)), self.counts)
        first = np.cumsum(self.counts) - self.counts
        rank = np.arange(len(self.flat)) - first[rows]
        step = len(self.tag) + 8
        pos = cur[rows] + rank * step
        _write_const(out, pos, self.tag)
        raw = self.flat.view(np.uint8).reshape(-1, 8)
        for k in range(8):
            out[pos + len(self.tag) + k] = raw[:, k]
        cur += self.counts * step


class Lookup(Field):
    """A pre-encoded byte string per row chosen by ``codes`` from ``table``."""

    def __init__(self, codes: np.ndarray, table: list[bytes], present: np.ndarray):
        self.codes, self.present = codes.astype(np.int64), present
        self.table = table
        self.tlen = np.array([len(t) for t in table], dtype=np.int64)

    def sizes(self):
        s = np.zeros(len(self.codes), dtype=np.int64)
        s[self.present] = self.tlen[self.codes[self.present]]
        return s

    def write(self, out, cur):
        for code, raw in enumerate(self.table):
            idx = np.nonzero(self.present & (self.codes == code))[0]
            if len(idx):
                _write_const(out, cur[idx], raw)
                cur[idx] += len(raw)


class Message(Field):
    """A nested message present on every row of the chunk."""

    def __init__(self, tag: bytes, fields: list[Field]):
        self.tag, self.fields = tag, fields
        self.body = None

    def sizes(self):
        body = np.zeros(0, np.int64)
        for i, f in enumerate(self.fields):
            s = f.sizes()
            body = s if i == 0 else body + s
        self.body = body
        self.blen = varint_len(body.astype(np.uint64))
        return len(self.tag) + self.blen + body

    def write(self, out, cur):
        if self.body is None:
            self.sizes()
        _write_const(out, cur, self.tag)
        _write_varints(out, cur + len(self.tag), self.body.astype(np.uint64), self.blen)
        cur += len(self.tag) + self.blen
        for f in self.fields:
            f.write(out, cur)


def encode_groups(groups: list[tuple[np.ndarray, list[Field]]], n: int) -> bytes:
    """``n`` ``Trace.packet`` records (tag 0x0a + length + TracePacket): group ``i``
    holds the rows ``idx`` (positions among the ``n``) and their packet fields."""
    sizes = np.zeros(n, dtype=np.int64)
    bodies = []
    for idx, fields in groups:
        body = np.zeros(len(idx), dtype=np.int64)
        for f in fields:
            body += f.sizes()
        blen = varint_len(body.astype(np.uint64))
        sizes[idx] = 1 + blen + body
        bodies.append((body, blen))
    total = int(sizes.sum())
    out = np.zeros(total, dtype=np.uint8)
    pos = np.cumsum(sizes) - sizes
    for (idx, fields), (body, blen) in zip(groups, bodies):
        cur = pos[idx]
        out[cur] = 0x0A
        _write_varints(out, cur + 1, body.astype(np.uint64), blen)
        cur = cur + 1 + blen
        for f in fields:
            f.write(out, cur)
    return out.tobytes()


def gather_ragged(flat: np.ndarray, ptr: np.ndarray, cnt: np.ndarray) -> np.ndarray:
    total = int(cnt.sum())
    if not total:
        return np.zeros(0, flat.dtype)
    first = np.cumsum(cnt) - cnt
    rows = np.repeat(np.arange(len(cnt)), cnt)
    idx = ptr[rows] + (np.arange(total) - first[rows])
    return flat[idx]
