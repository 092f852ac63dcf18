"""Build rocprofv3-like ``.pftrace`` files the way the Perfetto SDK encodes them.

Follows ROCm/rocm-systems projects/rocprofiler-sdk/source/lib/output/generatePerfetto.cpp:
process track + main-thread track (the sequence's default track), other threads on
custom tracks ``THREAD <n> (<tid>)``, kernels and copies on ``STREAM [" <id> "] `` tracks
(or ``COMPUTE Agent [<n>] QUEUE [<q>] GPU`` with group-by-queue), event names,
categories and annotation names interned, ``Flow::ProcessScoped(corr_id)`` on the API
slice and on its kernel (same flow id = corr_id XOR the process-track uuid), explicit
BOOTTIME timestamps (``timestamp_clock_id = 6``) on a sequence whose default clock is
the SDK's incremental clock 64, and a ``COPY BYTES`` counter track.
"""

from __future__ import annotations

from pathlib import Path

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb2

PID = 4242
MAIN_TID = 4242
PROCESS_UUID = 0x5EED_0000_1234
T0 = 1_000_000_000_000


class SdkLikeWriter:
    def __init__(self, seq_id: int = 1):
        self.trace = pb2.Trace()
        self.seq = seq_id
        self.names: dict[str, int] = {}
        self.cats: dict[str, int] = {}
        self.anns: dict[str, int] = {}
        self.first = True

    def packet(self) -> pb2.TracePacket:
        p = self.trace.packet.add()
        p.trusted_packet_sequence_id = self.seq
        return p

    def start_sequence(self, default_track: int) -> None:
        p = self.packet()
        p.sequence_flags = 1  # SEQ_INCREMENTAL_STATE_CLEARED
        p.trace_packet_defaults.timestamp_clock_id = 64
        p.trace_packet_defaults.track_event_defaults.track_uuid = default_track
        c = p.clock_snapshot.clocks.add()
        c.clock_id, c.timestamp = 6, T0
        c = p.clock_snapshot.clocks.add()
        c.clock_id, c.timestamp, c.is_incremental = 64, T0, True
        self.names.clear()
        self.cats.clear()
        self.anns.clear()
        self.last_inc = T0

    def _iid(self, table: dict, s: str, kind: str, p: pb2.TracePacket) -> int:
        if s not in table:
            table[s] = len(table) + 1
            getattr(p.interned_data, kind).add(iid=table[s], name=s)
        return table[s]

    def descriptor(self, uuid: int, name: str | None = None, parent: int | None = None,
                   pid: int | None = None, tid: int | None = None, counter=False) -> None:
        p = self.packet()
        td = p.track_descriptor
        td.uuid = uuid
        if parent is not None:
            td.parent_uuid = parent
        if name is not None:
            td.name = name
        if tid is not None:
            td.thread.pid, td.thread.tid = pid, tid
        elif pid is not None:
            td.process.pid = pid
        if counter:
            td.counter.unit = pb2.CounterDescriptor.UNIT_SIZE_BYTES
            td.counter.unit_multiplier = 1024

    def begin(self, ts: int, cat: str, name: str, track: int | None, ann: dict,
              flow: int | None = None, incremental: bool = False) -> None:
        p = self.packet()
        p.sequence_flags = 2
        if incremental:
            p.timestamp = ts - self.last_inc
            self.last_inc = ts
        else:
            p.timestamp, p.timestamp_clock_id = ts, 6
        te = p.track_event
        te.type = pb2.TrackEvent.TYPE_SLICE_BEGIN
        if track is not None:
            te.track_uuid = track
        te.category_iids.append(self._iid(self.cats, cat, "event_categories", p))
        te.name_iid = self._iid(self.names, name, "event_names", p)
        if flow is not None:
            te.flow_ids.append(flow)
        for k, v in ann.items():
            da = te.debug_annotations.add()
            if k.isupper() and "_" not in k:  # PMC: add_perfetto_annotation, plain name
                da.name = k
            else:
                da.name_iid = self._iid(self.anns, k, "debug_annotation_names", p)
            if isinstance(v, str):
                da.string_value = v
            elif isinstance(v, float):
                da.double_value = v
            elif v < 0:
                da.int_value = v
            else:
                da.uint_value = v

    def end(self, ts: int, cat: str, track: int | None, incremental: bool = False) -> None:
        p = self.packet()
        p.sequence_flags = 2
        if incremental:
            p.timestamp = ts - self.last_inc
            self.last_inc = ts
        else:
            p.timestamp, p.timestamp_clock_id = ts, 6
        te = p.track_event
        te.type = pb2.TrackEvent.TYPE_SLICE_END
        if track is not None:
            te.track_uuid = track
        te.category_iids.append(self._iid(self.cats, cat, "event_categories", p))

    def counter(self, ts: int, track: int, value: int) -> None:
        p = self.packet()
        p.sequence_flags = 2
        p.timestamp, p.timestamp_clock_id = ts, 6
        te = p.track_event
        te.type = pb2.TrackEvent.TYPE_COUNTER
        te.track_uuid = track
        te.counter_value = value

    def save(self, path: Path) -> bytes:
        raw = self.trace.SerializeToString()
        Path(path).write_bytes(raw)
        return raw


def make_rocprof_like(path: Path, n_kernels: int = 20, *, group_by_queue: bool = False,
                      second_thread: bool = True) -> dict:
    """A rocprofv3-like trace with ``n_kernels`` hipLaunchKernel -> kernel pairs, a copy,
    a roctx range, a counter track and (every 4th launch) launches from a second thread.
    Returns the ground truth (what a reader must find)."""
    w = SdkLikeWriter()
    main_track = PROCESS_UUID ^ 0xABCDEF
    w.descriptor(PROCESS_UUID, pid=PID)
    w.descriptor(main_track, parent=PROCESS_UUID, pid=PID, tid=MAIN_TID)
    tid2 = 4250
    thr2 = tid2 ^ PROCESS_UUID
    w.descriptor(thr2, name=f"THREAD 1 ({tid2})", parent=PROCESS_UUID)
    if group_by_queue:
        gpu_track = 77
        w.descriptor(gpu_track, name="COMPUTE Agent [2] QUEUE [0] GPU", parent=PROCESS_UUID)
    else:
        gpu_track = 88
        w.descriptor(gpu_track, name='STREAM [" 0 "] ', parent=PROCESS_UUID)
    copy_track = 99
    w.descriptor(copy_track, name='STREAM [" 0 "] ' if not group_by_queue else
                 "COPY to AGENT [2] THREAD [0] (GPU)", parent=PROCESS_UUID)
    cnt_track = 111
    w.descriptor(cnt_track, name="COPY BYTES to Agent [2] (GPU)", counter=True)
    w.start_sequence(main_track)
    truth = {"kernels": [], "links": []}
    t = T0 + 1000
    corr = 0
    # roctx range around everything on the main thread
    w.begin(t, "marker_api", "outer range", None,
            {"begin_ns": t, "end_ns": 0, "tid": MAIN_TID, "corr_id": 1})
    corr += 1
    # (kernels written after API calls, like the writer: API loop first, kernels later)
    kernels = []
    for i in range(n_kernels):
        corr += 1
        on2 = second_thread and i % 4 == 3
        track = thr2 if on2 else None
        tid = tid2 if on2 else MAIN_TID
        a0, a1 = t + 10, t + 40
        w.begin(a0, "hip_api", "hipLaunchKernel", track,
                {"begin_ns": a0, "end_ns": a1, "delta_ns": a1 - a0, "tid": tid,
                 "kind": 3, "operation": 42, "corr_id": corr, "ancestor_id": 0,
                 "stream_ID": 0}, flow=corr ^ PROCESS_UUID, incremental=not on2)
        # an HSA call nested in the HIP call (own corr id, no kernel)
        w.begin(a0 + 5, "hsa_api", "hsa_signal_store_screlease", track,
                {"corr_id": 100000 + i, "tid": tid}, flow=(100000 + i) ^ PROCESS_UUID,
                incremental=not on2)
        w.end(a0 + 8, "hsa_api", track, incremental=not on2)
        w.end(a1, "hip_api", track, incremental=not on2)
        k0 = t + 50
        k1 = k0 + 100 + i
        name = "vecAdd(float*, float const*, int)" if i % 2 == 0 else "void gemm<128>(...)"
        kernels.append((k0, k1, name, corr, tid, i))
        t = k1 + 20
    t_end = t
    w.end(t_end, "marker_api", None)
    for k0, k1, name, c, tid, i in kernels:
        ann = {"begin_ns": k0, "end_ns": k1, "delta_ns": k1 - k0, "kind": 11,
               "agent": "Agent-2", "agent_type": "GPU", "corr_id": c, "queue": 0,
               "tid": tid, "kernel_id": 7 + (i % 2), "Scratch_Size": 0,
               "LDS_Block_Size": 1024 * (i % 2), "VGPR_Count": 32, "Accum_VGPR_Count": 0,
               "SGPR_Count": 24, "workgroup_size": 256, "grid_size": 256 * 1024,
               "stream_ID": 0, "SQWAVES": 4096.0}
        w.begin(k0, "kernel_dispatch", name, gpu_track, ann, flow=c ^ PROCESS_UUID)
        w.end(k1, "kernel_dispatch", gpu_track)
        truth["kernels"].append({"name": name, "start": k0, "end": k1, "corr": c,
                                 "tid": tid})
    # one HtoD copy, its API call on the main thread
    corr += 1
    c0 = t_end + 100
    w.begin(c0, "hip_api", "hipMemcpyAsync", None,
            {"corr_id": corr, "tid": MAIN_TID, "stream_ID": 0}, flow=corr ^ PROCESS_UUID)
    w.end(c0 + 50, "hip_api", None)
    w.begin(c0 + 60, "memory_copy", "MEMORY_COPY_HOST_TO_DEVICE", copy_track,
            {"begin_ns": c0 + 60, "end_ns": c0 + 160, "kind": 12, "operation": 1,
             "src_agent": "Agent-0", "dst_agent": "Agent-2", "copy_bytes": 1 << 20,
             "corr_id": corr, "tid": MAIN_TID, "stream_ID": 0}, flow=corr ^ PROCESS_UUID)
    w.end(c0 + 160, "memory_copy", copy_track)
    w.counter(c0 + 60, cnt_track, 1024)
    w.counter(c0 + 160, cnt_track, 0)
    w.save(path)
    truth["n_api"] = 2 * n_kernels + 1
    truth["copy"] = {"start": c0 + 60, "end": c0 + 160, "bytes": 1 << 20,
                     "corr": corr}
    truth["marker"] = {"name": "outer range", "start": T0 + 1000, "end": t_end}
    return truth
