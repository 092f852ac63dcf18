"""The packets of a Perfetto trace walked in order: interned state per sequence,
clocks, track descriptors, and track events paired into slices."""

from __future__ import annotations

from collections import defaultdict
from operator import itemgetter
from pathlib import Path
from typing import Any

from ..base import TraceFormatError, check_cancel
from .proto import (
    BEGIN,
    BOOTTIME,
    CLOCK_NAMES,
    COUNTER,
    END,
    INSTANT,
    NESTED,
    SEQ_INCREMENTAL_STATE_CLEARED,
    SEQ_NEEDS_INCREMENTAL_STATE,
    Buffer,
    Seq,
    decode_error,
    perfetto_pb2,
)


def _clock_snapshot(cs, seq: Seq, global_snaps: list, primary_clock: list) -> None:
    if cs.HasField("primary_trace_clock"):
        primary_clock[0] = int(cs.primary_trace_clock)
    builtin: dict[int, int] = {}
    scoped = []
    for c in cs.clocks:
        if 64 <= c.clock_id <= 127:
            scoped.append(c)
        else:
            builtin[c.clock_id] = c.timestamp
    if builtin:
        global_snaps.append(builtin)
    if scoped and builtin:
        ref = primary_clock[0] if primary_clock[0] in builtin else next(iter(builtin))
        for c in scoped:
            mult = c.unit_multiplier_ns or 1
            seq.clocks[c.clock_id] = [c.timestamp, mult, bool(c.is_incremental), ref,
                                      builtin[ref], c.timestamp]


def track_descriptor_of(td, tracks: dict) -> None:
    t = tracks.setdefault(td.uuid, {})
    if td.HasField("parent_uuid"):
        t["parent"] = td.parent_uuid
    nm = None
    if td.HasField("name"):
        nm = td.name
    elif td.HasField("static_name"):
        nm = td.static_name
    elif td.HasField("atrace_name"):
        nm = td.atrace_name
    if nm is not None:
        t["name"] = nm
    if td.HasField("description"):
        t["description"] = td.description
    if td.HasField("process"):
        t["pid"] = td.process.pid
        if td.process.process_name:
            t["process_name"] = td.process.process_name
    if td.HasField("thread"):
        t["pid"] = td.thread.pid
        t["tid"] = td.thread.tid
        if td.thread.thread_name:
            t["thread_name"] = td.thread.thread_name
    if td.HasField("counter"):
        t["counter"] = True


def _annotations(ev, seq: Seq) -> dict[str, Any]:
    ann: dict[str, Any] = {}
    aget = seq.ann_names.get
    for da in ev.debug_annotations:
        aiid = da.name_iid
        an = aget(aiid) if aiid else da.name
        if an is None:
            continue
        w = da.WhichOneof("value")
        if w is None or w in NESTED:
            ann[an] = None
        elif w == "string_value_iid":
            ann[an] = seq.ann_strings.get(da.string_value_iid)
        else:
            ann[an] = getattr(da, w)
    return ann


def _flows(ev) -> tuple:
    flows = tuple(ev.flow_ids)
    tf = ev.terminating_flow_ids
    if tf:
        flows += tuple(tf)
    if not flows:
        flows = tuple(ev.flow_ids_old) + tuple(ev.terminating_flow_ids_old)
    return flows


class Walk:
    """State of one pass over the packets; ``slices`` are
    ``[track, start, end, name, cats, ann, flows, seq_depth]``."""

    def __init__(self) -> None:
        self.seqs: dict[int, Seq] = defaultdict(Seq)
        self.tracks: dict[int, dict[str, Any]] = {}
        self.open_slices: dict[int, list] = defaultdict(list)
        self.slices: list[list] = []
        self.counters_seen: dict[int, int] = defaultdict(int)
        self.clock_ids_used: set[int] = set()
        self.global_snaps: list[dict[int, int]] = []
        self.primary_clock = [BOOTTIME]
        self.unresolved = 0
        self.skipped_invalid = 0
        self.n_begun = 0
        self.hipscope_made = False
        self.source_clock = None
        self.unmatched_ends = 0

    def run(self, path: Path, data: Buffer, ranges: list, progress, cancelled) -> None:
        fromstring = perfetto_pb2().TracePacket.FromString
        DecodeError = decode_error()
        n_packets = len(ranges)
        step = max(1, n_packets // 100)
        for i, (a, b) in enumerate(ranges):
            if i % step == 0:
                check_cancel(cancelled)
                progress(0.8 * i / max(1, n_packets))
            try:
                pkt = fromstring(data[a:b])
            except DecodeError as exc:
                raise TraceFormatError(path, f"packet {i} at byte {a}",
                                       "a valid TracePacket protobuf", str(exc)) from None
            self.packet(pkt)

    def _interned(self, seq: Seq, idata) -> None:
        for e in idata.event_names:
            seq.names[e.iid] = e.name
        for e in idata.event_categories:
            seq.cats[e.iid] = e.name
            if e.name == "hipscope":
                self.hipscope_made = True
            elif e.name.startswith("hipscope-clock:"):
                self.source_clock = e.name[len("hipscope-clock:"):]
        for e in idata.debug_annotation_names:
            seq.ann_names[e.iid] = e.name
        for e in idata.debug_annotation_string_values:
            seq.ann_strings[e.iid] = e.str.decode("utf-8", "replace")

    def packet(self, pkt) -> None:
        seq = self.seqs[pkt.trusted_packet_sequence_id]
        flags = pkt.sequence_flags
        if flags & SEQ_INCREMENTAL_STATE_CLEARED or pkt.incremental_state_cleared:
            seq.clear()
        elif pkt.previous_packet_dropped:
            seq.valid = False
        if pkt.HasField("trace_packet_defaults"):
            d = pkt.trace_packet_defaults
            if d.HasField("timestamp_clock_id"):
                seq.default_clock = d.timestamp_clock_id
            if d.HasField("track_event_defaults") and \
                    d.track_event_defaults.HasField("track_uuid"):
                seq.default_track = d.track_event_defaults.track_uuid
        if pkt.HasField("interned_data"):
            self._interned(seq, pkt.interned_data)
        which = pkt.WhichOneof("data")
        if which != "track_event":
            if which == "clock_snapshot":
                _clock_snapshot(pkt.clock_snapshot, seq, self.global_snaps, self.primary_clock)
            elif which == "track_descriptor":
                track_descriptor_of(pkt.track_descriptor, self.tracks)
            return
        if flags & SEQ_NEEDS_INCREMENTAL_STATE and not seq.valid:
            self.skipped_invalid += 1
            return
        self.event(pkt, seq)

    def _timestamp(self, pkt, seq: Seq, ev) -> tuple | None:
        """(ts, clock) of a track event; None when its clock is unknown."""
        if pkt.HasField("timestamp"):
            ts = pkt.timestamp
            if pkt.HasField("timestamp_clock_id"):
                clock = pkt.timestamp_clock_id
            else:
                clock = seq.default_clock
                if clock is None:
                    clock = self.primary_clock[0]
            if 64 <= clock <= 127:
                st = seq.clocks.get(clock)
                if st is None:
                    return None
                if st[2]:
                    st[0] += ts
                    ts = st[0]
                ts = st[4] + (ts - st[5]) * st[1]
                clock = st[3]
        elif ev.HasField("timestamp_absolute_us"):
            ts, clock = ev.timestamp_absolute_us * 1000, self.primary_clock[0]
        else:
            ts, clock = None, self.primary_clock[0]
        return ts, clock

    def event(self, pkt, seq: Seq) -> None:
        ev = pkt.track_event
        got = self._timestamp(pkt, seq, ev)
        if got is None:
            self.unresolved += 1
            return
        ts, clock = got
        self.clock_ids_used.add(clock)
        track = ev.track_uuid if ev.HasField("track_uuid") else seq.default_track
        if track is None:
            track = 0
        etype = ev.type
        if etype == END:
            stack = self.open_slices.get(track)
            if not stack:
                self.unmatched_ends += 1
                return
            s = stack.pop()
            s[2] = (ts, clock)
            self.slices.append(s)
            return
        if etype == COUNTER:
            self.counters_seen[track] += 1
            return
        if etype != BEGIN and etype != INSTANT:
            return
        self._begin(ev, seq, track, etype, (ts, clock))

    def _begin(self, ev, seq: Seq, track: int, etype: int, when: tuple) -> None:
        iid = ev.name_iid
        if iid:
            name = seq.names.get(iid)
            if name is None:
                self.unresolved += 1
                if etype == BEGIN:
                    self.open_slices[track].append([track, None, None, None, (), {}, (), -1])
                return
        else:
            name = ev.name
        cids = ev.category_iids
        if cids:
            cget = seq.cats.get
            cats = (cget(cids[0], ""),) if len(cids) == 1 else \
                tuple([cget(c, "") for c in cids])
        else:
            cats = tuple(ev.categories)
        rec = [track, when, None, name, cats, _annotations(ev, seq), _flows(ev), self.n_begun]
        self.n_begun += 1
        if etype == INSTANT:
            rec[2] = rec[1]
            self.slices.append(rec)
        else:
            self.open_slices[track].append(rec)

    def finish(self, warnings: list[str], dropped: dict[str, int]) -> tuple[list, str]:
        """The whole slices on the primary clock, sorted; and the clock's name."""
        if self.unmatched_ends:
            dropped["slice ends without a begin"] = self.unmatched_ends
        unterminated = sum(len(v) for v in self.open_slices.values())
        if unterminated:
            dropped["slices without an end"] = unterminated
            warnings.append(f"{unterminated} slice(s) have a begin but no end (file cut "
                            f"short?); dropped")
        if self.unresolved:
            dropped["events with unknown interned ids or clocks"] = self.unresolved
            warnings.append(f"{self.unresolved} event(s) refer to interned names or clocks "
                            f"that were never defined on their sequence; dropped")
        if self.skipped_invalid:
            dropped["events after lost incremental state"] = self.skipped_invalid
            warnings.append(f"{self.skipped_invalid} event(s) need interned state that was "
                            f"lost (previous_packet_dropped); dropped")
        # drop placeholder records for unresolved begins
        slices = [s for s in self.slices if s[3] is not None]
        conv = self.clock_offsets(warnings)

        def tconv(t):
            return None if t[0] is None else t[0] + conv.get(t[1], 0)

        if conv:
            for s in slices:
                s[1] = tconv(s[1])
                s[2] = tconv(s[2])
        else:  # every event on the primary clock: no offsets
            for s in slices:
                s[1] = s[1][0]
                s[2] = s[2][0]
        slices = [s for s in slices if s[1] is not None and s[2] is not None]
        slices.sort(key=itemgetter(1, 7))
        target = self.primary_clock[0]
        clock_name = CLOCK_NAMES.get(target, f"clock {target}")
        if self.hipscope_made and self.source_clock:
            clock_name = self.source_clock  # hipscope's export keeps the source's clock
        return slices, clock_name

    def clock_offsets(self, warnings: list[str]) -> dict[int, int]:
        """Offset of each clock used to the primary trace clock."""
        target = self.primary_clock[0]
        conv: dict[int, int] = {}
        for c in self.clock_ids_used:
            if c == target:
                continue
            off = None
            for snap in self.global_snaps:
                if c in snap and target in snap:
                    off = snap[target] - snap[c]
                    break
            if off is None:
                warnings.append(f"no clock snapshot relates clock {c} to clock {target}; "
                                f"its timestamps are used unconverted")
                off = 0
            conv[c] = off
        return conv
