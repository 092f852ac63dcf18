"""GPUs and streams of an Nsight Systems export.

Activity rows name a GPU by the process's *CUDA device id* (``deviceId``), which
``CUDA_VISIBLE_DEVICES`` renumbers. Newer exports map it with
``TARGET_INFO_CUDA_DEVICE (gpuId, cudaId, pid)`` onto ``TARGET_INFO_GPU.id``, which is
hipscope's device index; older ones have no such table and their ``TARGET_INFO_GPU.id`` is
the CUDA device id itself. Streams are numbered per (process, ``streamId``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._common import devices_table, group_key, group_rows
from .db import CUDA_DEVICE, GPU, Ints, NsysDb

_GPU_COLS = ("id", "name", "smCount", "totalMemory", "uuid", "computeMajor", "computeMinor",
             "busLocation")


class DeviceMap:
    """(pid, CUDA device id) -> hipscope device index; collects the devices used."""

    def __init__(self, db: NsysDb, warnings: list[str], provenance: dict[str, str]):
        self.db, self.warnings = db, warnings
        self.gpus = self._gpus()
        self.by_pid: dict[tuple[int, int], int] = {}
        self.by_cuda: dict[int, set[int]] = {}
        if db.has(CUDA_DEVICE, "gpuId") and db.has(CUDA_DEVICE, "cudaId"):
            rows = db.rows(CUDA_DEVICE, ("gpuId", "cudaId", "pid"))
            for g, c, p in zip(rows["gpuId"], rows["cudaId"], rows["pid"]):
                if isinstance(g, int) and isinstance(c, int):
                    self.by_cuda.setdefault(c, set()).add(g)
                    if isinstance(p, int):
                        self.by_pid[(p, c)] = g
            provenance["device"] = ("TARGET_INFO_GPU.id of the row's CUDA device (deviceId) "
                                    "in its process, via TARGET_INFO_CUDA_DEVICE")
        else:
            provenance["device"] = ("deviceId (CUDA device id); this export has no "
                                    "TARGET_INFO_CUDA_DEVICE, so it is taken as "
                                    "TARGET_INFO_GPU.id")
        self.used: set[int] = set()
        self.unmapped = 0

    def _gpus(self) -> dict[int, dict[str, Any]]:
        if not self.db.has(GPU, "id"):
            return {}
        rows = self.db.rows(GPU, _GPU_COLS)
        out = {}
        for i in range(len(rows["id"])):
            r = {c: rows[c][i] for c in _GPU_COLS}
            if isinstance(r["id"], int) and 0 <= r["id"] < 32768:
                out.setdefault(r["id"], r)
        return out

    def resolve(self, pid: Ints, cuda: Ints) -> np.ndarray:
        """Device index per row (-1 where the row names no device)."""
        out = np.full(len(cuda.values), -1, np.int64)
        ok = cuda.valid & (cuda.values >= 0) & (cuda.values < 32768)
        if not ok.any():
            return out
        p, c = np.where(pid.valid, pid.values, -1)[ok], cuda.values[ok]
        _u, first, inv = np.unique(group_key(p, c), return_index=True, return_inverse=True)
        mapped = np.array([self._one(int(p[i]), int(c[i])) for i in first], np.int64)
        out[ok] = mapped[inv.reshape(-1)]
        self.used.update(int(x) for x in mapped if x >= 0)
        return out

    def _one(self, pid: int, cuda: int) -> int:
        if not self.by_cuda:
            return cuda
        if (pid, cuda) in self.by_pid:
            return self.by_pid[(pid, cuda)]
        gpus = self.by_cuda.get(cuda, set())
        if len(gpus) == 1:
            return next(iter(gpus))
        self.unmapped += 1
        return cuda

    def table(self):
        """The devices table: every GPU the export lists, and any device rows name."""
        if self.unmapped:
            self.warnings.append(
                f"{self.unmapped} (process, CUDA device) pairs are not in "
                "TARGET_INFO_CUDA_DEVICE; their CUDA device id was taken as the GPU id")
        rows = []
        for idx in sorted(set(self.gpus) | self.used):
            g = self.gpus.get(idx, {})
            maj, mnr = g.get("computeMajor"), g.get("computeMinor")
            arch = f"sm_{maj}{mnr}" if isinstance(maj, int) and isinstance(mnr, int) else None
            rows.append({"index": idx, "name": str(g.get("name") or f"CUDA device {idx}"),
                         "vendor": "NVIDIA", "arch": arch,
                         "compute_units": _int_or_none(g.get("smCount"), 1 << 31),
                         "raw_id": str(g.get("uuid") or g.get("busLocation") or idx),
                         "memory_bytes": _int_or_none(g.get("totalMemory"), 1 << 63)})
        return devices_table(rows)


def _int_or_none(v: Any, limit: int) -> int | None:
    return v if isinstance(v, int) and 0 < v < limit else None


class StreamMap:
    """Dense stream numbers for (pid, streamId) over every table that names a stream."""

    def __init__(self):
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._keys: dict[tuple[int, int], int] = {}
        self._rows: list[dict[str, Any]] = []

    def add(self, pid: Ints, stream: Ints, device: np.ndarray) -> None:
        ok = stream.valid
        p = np.where(pid.valid, pid.values, -1)
        self._parts.append((p[ok], stream.values[ok], device[ok]))

    def finish(self) -> None:
        if not self._parts:
            return
        p, s, d = (np.concatenate(x) for x in zip(*self._parts))
        if not len(p):
            return
        (up, us), _inv, first = group_rows(p, s)
        for i, (a, b) in enumerate(zip(up.tolist(), us.tolist())):
            self._keys[(a, b)] = i
            dev = int(d[first[i]])
            self._rows.append({"stream": i, "device": dev if dev >= 0 else None,
                               "pid": a if 0 <= a < 1 << 31 else None, "raw_id": str(b),
                               "name": f"Stream {b}"})

    def lookup(self, pid: Ints, stream: Ints) -> np.ndarray:
        out = np.full(len(stream.values), -1, np.int64)
        if not stream.valid.any():
            return out
        p = np.where(pid.valid, pid.values, -1)[stream.valid]
        s = stream.values[stream.valid]
        _u, first, inv = np.unique(group_key(p, s), return_index=True, return_inverse=True)
        small = np.array([self._keys.get((int(p[i]), int(s[i])), -1) for i in first],
                         np.int64)
        out[stream.valid] = small[inv.reshape(-1)]
        return out

    def columns(self) -> dict[str, list]:
        return {c: [r[c] for r in self._rows] for c in ("stream", "device", "pid", "raw_id",
                                                         "name")}
