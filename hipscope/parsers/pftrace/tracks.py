"""What the tables of a pftrace take from its tracks (pid, tid, COMPUTE / STREAM / COPY
names, hipscope's device descriptions), and where each column comes from."""

from __future__ import annotations

import json
from typing import Any

from .proto import RE_COMPUTE, RE_COPY, RE_STREAM, RE_THREAD

PROVENANCE = {
    "kernels.start/end": (
        "begin_ns/end_ns debug annotations where present, else the slice times. "
        "rocprofv3 rewrites overlapping kernels on one queue to meet at their "
        "midpoint before writing (firmware-timestamp work-around in "
        "generatePerfetto.cpp) and its begin_ns/end_ns annotations carry the same "
        "rewritten values, so such kernels can differ from CSV/JSON/rocpd"),
    "kernels.grid_x": "grid_size annotation = product x*y*z of the grid in "
                      "work-items (grid_y/z left null) unless grid_x/y/z annotations",
    "kernels.block_x": "workgroup_size annotation = product x*y*z of the workgroup "
                       "(block_y/z left null) unless block_x/y/z annotations",
    "kernels.device": "agent annotation ('Agent-N'/'GPU-N') or the "
                      "'COMPUTE <Agent|GPU> [N] QUEUE [q]' track name",
    "kernels.queue": "queue annotation (handle - 1) or the COMPUTE track name",
    "kernels.stream": "stream_ID annotation or the 'STREAM [\" N \"]' track name",
    "kernels.lds_bytes": "LDS_Block_Size annotation (dispatch group segment size)",
    "kernels.scratch_bytes": "Scratch_Size annotation (private segment size)",
    "kernels.api_index": "shared flow id (Flow::ProcessScoped(correlation id)), "
                         "else equal corr_id annotations within a pid",
    "copies.direction": "direction annotation or the copy slice name "
                        "(MEMORY_COPY_HOST_TO_DEVICE ...)",
    "copies.bytes": "copy_bytes annotation",
    "api.domain": "slice category (hip_api -> HIP_RUNTIME_API, __hip* names -> "
                  "HIP_COMPILER_API; hsa_api -> HSA_CORE_API, hsa_amd_* -> "
                  "HSA_AMD_EXT_API ...)",
    "markers.depth": "computed from the nesting of ranges per pid/tid/device/stream; "
                     "instant marks get 0",
    "counters": "kernel slice annotations other than the writer's known fields "
                "(one per PMC)",
}



class Tracks:
    """Per-track facts (pid, tid, COMPUTE/STREAM/COPY names...) through the parent chain."""

    def __init__(self, tracks: dict):
        self.tracks = tracks
        self.cache: dict[int, dict] = {}

    def __call__(self, uuid: int) -> dict:
        got = self.cache.get(uuid)
        if got is None:
            got = self.cache[uuid] = self._resolve(uuid)
        return got

    def _chain(self, uuid: int) -> list[dict]:
        chain, cur, seen = [], uuid, set()
        while cur is not None and cur not in seen:
            seen.add(cur)
            t = self.tracks.get(cur)
            if t is None:
                break
            chain.append(t)
            cur = t.get("parent")
        return chain

    def _resolve(self, uuid: int) -> dict:
        chain = self._chain(uuid)
        out: dict[str, Any] = {"name": (chain[0] if chain else {}).get("name")}
        for t in chain:
            out.setdefault("pid", t.get("pid"))
            if out["pid"] is None:
                out["pid"] = t.get("pid")
            if "tid" in t and out.get("tid") is None:
                out["tid"] = t["tid"]
            self._from_name(out, t.get("name") or "")
            desc = t.get("description")
            if desc and out.get("hs_device") is None and desc.startswith("{"):
                try:
                    d = json.loads(desc)
                except ValueError:
                    d = None
                if isinstance(d, dict) and isinstance(d.get("hipscope_device"), dict):
                    out["hs_device"] = d["hipscope_device"]
        return out

    @staticmethod
    def _from_name(out: dict, nm: str) -> None:
        if out.get("compute") is None:
            m = RE_COMPUTE.match(nm)
            if m:
                out["compute"] = (m.group(1), int(m.group(2)), int(m.group(3)))
        if out.get("stream") is None:
            m = RE_STREAM.match(nm)
            if m:
                out["stream"] = int(m.group(1))
        if out.get("copy_agent") is None:
            m = RE_COPY.match(nm)
            if m:
                out["copy_agent"] = int(m.group(1))
        if out.get("tid") is None:
            m = RE_THREAD.match(nm)
            if m:
                out["tid"] = int(m.group(1))
