"""rocprofv3 JSON reader: real samples, a merged two-process file, hand-written API /
copy / marker / counter records, bad input. Expected figures come from the raw JSON."""

from __future__ import annotations

import collections
import copy
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from hipscope.parsers import TraceFormatError, get_reader, open_trace
from hipscope.parsers._validate import validate
from tests.conftest import ids, sample_dirs

DIRS = sample_dirs("rocprofv3-json")
READER = get_reader("rocprofv3-json")


def _files(d: Path) -> list[Path]:
    return sorted(p for p in d.iterdir() if p.name.endswith((".json", ".json.gz")))


def _raw(path: Path) -> dict:
    op = gzip.open if path.name.endswith(".gz") else open
    with op(path, "rt") as fh:
        return json.load(fh)


def _read(path: Path):
    return READER.read(path, lambda f: None, lambda: False)


@pytest.fixture(scope="module")
def sample_raw() -> dict:
    return _raw(_files(DIRS[0])[0])


# --------------------------------------------------------------------------- real samples


@pytest.mark.parametrize("d", DIRS, ids=ids(DIRS))
def test_sample_counts_names_and_durations(d: Path):
    for f in _files(d):
        raw = _raw(f)
        trace = _read(f)
        procs = raw["rocprofiler-sdk-tool"]
        dispatches = [r for p in procs for r in p["buffer_records"]["kernel_dispatch"]]
        assert len(trace.kernels) == len(dispatches)

        # per agent: the reader numbers GPU agents by node id
        per_dev = collections.Counter()
        gpu_count = set()
        durations = collections.defaultdict(int)
        for p in procs:
            host = p["metadata"].get("node", {}).get("hostname")
            gpus = sorted((a for a in p["agents"] if a["type"] == 2),
                          key=lambda a: a["node_id"])
            gpu_count.update((host, a["node_id"]) for a in gpus)
            name_of = {s["kernel_id"]: s["formatted_kernel_name"] for s in p["kernel_symbols"]}
            for r in p["buffer_records"]["kernel_dispatch"]:
                h = r["dispatch_info"]["agent_id"]["handle"]
                node = next(a["node_id"] for a in gpus if a["id"]["handle"] == h)
                per_dev[node] += 1
                durations[name_of[r["dispatch_info"]["kernel_id"]]] += (
                    r["end_timestamp"] - r["start_timestamp"])
        assert len(trace.devices) == len(gpu_count)
        dev = trace.kernels.numpy("device")
        raw_ids = trace.devices.strings("raw_id")
        got = collections.Counter({int(raw_ids[i]): int(c) for i, c in
                                   zip(*np.unique(dev, return_counts=True))})
        assert got == per_dev

        codes, cats = trace.kernels.codes("name")
        assert len(set(np.asarray(cats)[np.unique(codes)])) == len(durations)
        dur = trace.kernels.numpy("end") - trace.kernels.numpy("start")
        by_name = collections.defaultdict(int)
        for c, du in zip(codes.tolist(), dur.tolist()):
            by_name[cats[c]] += du
        top = sorted(durations, key=durations.get, reverse=True)[:5]
        for name in top + [min(durations, key=durations.get)]:
            assert by_name[name] == durations[name], name

        # first dispatch record, every field
        r0 = dispatches[0]
        row = trace.kernels.row(0)
        assert row["start"] == r0["start_timestamp"] and row["end"] == r0["end_timestamp"]
        assert row["dispatch_id"] == r0["dispatch_info"]["dispatch_id"]
        assert row["correlation_id"] == r0["correlation_id"]["internal"]
        assert row["grid_x"] == r0["dispatch_info"]["grid_size"]["x"]
        assert row["block_x"] == r0["dispatch_info"]["workgroup_size"]["x"]
        assert row["tid"] == r0["thread_id"]
        assert row["stream"] == r0["stream_id"]["handle"]
        assert row["pid"] == procs[0]["metadata"]["pid"]

        # queues: small ints per device, raw handle kept
        q_pairs = {(r["dispatch_info"]["agent_id"]["handle"], r["dispatch_info"]["queue_id"]
                    ["handle"]) for r in dispatches}
        assert len(trace.queues) == len(q_pairs)
        assert trace.queues.numpy("queue").max() < len(q_pairs)

        m = trace.meta
        assert m["format"] == "rocprofv3-json" and m["clock"] == "CLOCK_BOOTTIME"
        assert m["tool"] == "rocprofv3"
        assert m["pids"] == sorted({p["metadata"]["pid"] for p in procs})
        assert m["command"] == " ".join(procs[0]["metadata"]["command"])
        assert m["host"] == procs[0]["metadata"]["node"]["hostname"]
        json.dumps(m)
        assert READER.sniff(f) == 1.0
        validate(trace)


@pytest.mark.parametrize("d", DIRS, ids=ids(DIRS))
def test_sample_device_facts(d: Path):
    for f in _files(d):
        raw = _raw(f)
        trace = _read(f)
        p = raw["rocprofiler-sdk-tool"][0]
        gpus = sorted((a for a in p["agents"] if a["type"] == 2), key=lambda a: a["node_id"])
        for i, a in enumerate(gpus):
            row = trace.devices.row(i)
            assert row["name"] == a["product_name"]
            assert row["arch"] == a["name"]
            assert row["compute_units"] == a["cu_count"]
            assert row["raw_id"] == str(a["node_id"])
            assert row["vendor"] == "AMD"
        validate(trace)


# --------------------------------------------------------------------------- hand-made


def _hand_process(strings: dict) -> dict:
    """A small process per rocprofv3-schema.json: HIP API calls launching kernels and
    copies, roctx ranges (nested) and a mark, counter collection."""
    kinds = [k["kind"] for k in strings["buffer_records"]]
    k_hip = kinds.index("HIP_RUNTIME_API")
    k_copy = kinds.index("MEMORY_COPY")
    k_disp = kinds.index("KERNEL_DISPATCH")
    k_mark = kinds.index("MARKER_CORE_API")
    ops = strings["buffer_records"]
    op_launch = ops[k_hip]["operations"].index("hipLaunchKernel")
    op_memcpy = ops[k_hip]["operations"].index("hipMemcpy")
    op_htod = ops[k_copy]["operations"].index("MEMORY_COPY_HOST_TO_DEVICE")
    op_dtoh = ops[k_copy]["operations"].index("MEMORY_COPY_DEVICE_TO_HOST")
    op_push = ops[k_mark]["operations"].index("roctxRangePushA")
    op_mark_a = ops[k_mark]["operations"].index("roctxMarkA")

    def corr(i):
        return {"internal": i, "external": 0}

    def api(op, i, s, e):
        return {"size": 64, "kind": k_hip, "operation": op, "correlation_id": corr(i),
                "start_timestamp": s, "end_timestamp": e, "thread_id": 5001}

    def disp(i, s, e, kid, q, did):
        return {"size": 184, "kind": k_disp, "operation": 2, "thread_id": 5001,
                "correlation_id": corr(i), "start_timestamp": s, "end_timestamp": e,
                "dispatch_info": {"size": 72, "agent_id": {"handle": 22}, "queue_id":
                                  {"handle": q}, "kernel_id": kid, "dispatch_id": did,
                                  "private_segment_size": 0, "group_segment_size": 1024,
                                  "workgroup_size": {"x": 256, "y": 1, "z": 1},
                                  "grid_size": {"x": 65536, "y": 2, "z": 1}},
                "stream_id": {"handle": 1}}

    def cpy(i, op, s, e, src, dst, nbytes):
        return {"size": 80, "kind": k_copy, "operation": op, "correlation_id": corr(i),
                "start_timestamp": s, "end_timestamp": e, "thread_id": 5001,
                "src_agent_id": {"handle": src}, "dst_agent_id": {"handle": dst},
                "bytes": nbytes, "stream_id": {"handle": 1}}

    def sym(kid, mangled, formatted):
        return {"size": 88, "kernel_id": kid, "code_object_id": 1, "kernel_name": mangled,
                "kernel_object": 1, "kernarg_segment_size": 0, "kernarg_segment_alignment": 0,
                "group_segment_size": 0, "private_segment_size": 0, "sgpr_count": 16,
                "arch_vgpr_count": 12, "accum_vgpr_count": 4,
                "formatted_kernel_name": formatted, "demangled_kernel_name": formatted + ".kd",
                "truncated_kernel_name": formatted}

    t = 9_000_000_000
    return {
        "metadata": {"node": {"hostname": "handhost"}, "pid": 5001, "init_time": t,
                     "fini_time": t + 10_000_000, "command": ["./app", "-n", "2"],
                     "config": {"kernel_rename": False}},
        "agents": [
            {"size": 1, "id": {"handle": 21}, "type": 1, "name": "CPU", "product_name": "EPYC",
             "node_id": 0, "logical_node_id": 0, "cu_count": 64},
            {"size": 1, "id": {"handle": 22}, "type": 2, "name": "gfx942",
             "product_name": "AMD Instinct MI300X", "node_id": 1, "logical_node_id": 1,
             "cu_count": 304, "mem_banks": [{"size_in_bytes": 1 << 30}]},
        ],
        "counters": [{"id": {"handle": 7}, "name": "SQ_WAVES"},
                     {"id": {"handle": 8}, "name": "GRBM_GUI_ACTIVE"}],
        "strings": {"callback_records": [], "buffer_records": strings["buffer_records"],
                    "marker_api": [{"key": 100, "value": "outer"},
                                   {"key": 101, "value": "inner"},
                                   {"key": 102, "value": "tick"}],
                    "correlation_id": {"external": []}},
        "code_objects": [],
        "kernel_symbols": [sym(0, "", "0"), sym(1, "_Z3addv.kd", "add()"),
                           sym(2, "_Z3mulv.kd", "mul()")],
        "host_functions": [],
        "summary": [],
        "callback_records": {"counter_collection": [
            {"dispatch_data": {"size": 1, "correlation_id": corr(2), "dispatch_info":
                               disp(2, 0, 0, 1, 7, 1)["dispatch_info"]},
             "records": [{"counter_id": {"handle": 7}, "value": 10.0},
                         {"counter_id": {"handle": 7}, "value": 6.0},
                         {"counter_id": {"handle": 8}, "value": 3.5}],
             "thread_id": 5001, "arch_vgpr_count": 12, "sgpr_count": 16,
             "lds_block_size_v": 1024}]},
        "buffer_records": {
            "kernel_dispatch": [disp(2, t + 3000, t + 8000, 1, 7, 1),
                                disp(4, t + 9000, t + 9500, 2, 7, 2),
                                disp(99, t + 9600, t + 9700, 2, 8, 3)],
            "hip_api": [api(op_memcpy, 1, t + 100, t + 2000),
                        api(op_launch, 2, t + 2100, t + 2500),
                        api(op_memcpy, 3, t + 2600, t + 8800),
                        api(op_launch, 4, t + 8900, t + 8950)],
            "hsa_api": [],
            "marker_api": [
                {"size": 1, "kind": k_mark, "operation": op_push, "correlation_id": corr(100),
                 "start_timestamp": t + 50, "end_timestamp": t + 9900, "thread_id": 5001},
                {"size": 1, "kind": k_mark, "operation": op_push, "correlation_id": corr(101),
                 "start_timestamp": t + 90, "end_timestamp": t + 2050, "thread_id": 5001},
                {"size": 1, "kind": k_mark, "operation": op_mark_a, "correlation_id": corr(102),
                 "start_timestamp": t + 95, "end_timestamp": t + 95, "thread_id": 5001}],
            "memory_copy": [cpy(1, op_htod, t + 500, t + 1500, 21, 22, 4096),
                            cpy(3, op_dtoh, t + 8100, t + 8700, 22, 21, 1 << 20)],
        },
    }


def _write(path: Path, doc: dict) -> Path:
    with gzip.open(path, "wt") as fh:
        json.dump(doc, fh)
    return path


def test_two_processes_merge_and_link(tmp_path, sample_raw):
    base = sample_raw["rocprofiler-sdk-tool"][0]
    part = copy.copy(base)
    part["buffer_records"] = dict(base["buffer_records"])
    part["buffer_records"]["kernel_dispatch"] = base["buffer_records"]["kernel_dispatch"][:700]
    hand = _hand_process(base["strings"])
    f = _write(tmp_path / "multi_results.json.gz", {"rocprofiler-sdk-tool": [part, hand]})
    assert READER.sniff(f) == 1.0
    tr = _read(f)
    assert len(tr.kernels) == 700 + 3
    assert tr.meta["pids"] == [908, 5001]
    gpus_908 = sum(a["type"] == 2 for a in base["agents"])
    assert len(tr.devices) == gpus_908 + 1  # different hosts: devices kept apart

    k = tr.kernels.to_pandas()
    hk = k[k.pid == 5001].reset_index()
    assert list(hk["name"]) == ["add()", "mul()", "mul()"]
    assert list(hk["vgpr"]) == [12, 12, 12] and list(hk["accum_vgpr"]) == [4, 4, 4]
    assert list(hk["lds_bytes"]) == [1024] * 3 and list(hk["grid_y"]) == [2] * 3
    assert tr.device_name(int(hk["device"][0])) == "AMD Instinct MI300X"
    # kernel -> launching hipLaunchKernel (same correlation id, same process)
    api = tr.api.to_pandas()
    for i, corr in enumerate((2, 4)):
        a = api.iloc[int(hk["api_index"][i])]
        assert a["name"] == "hipLaunchKernel" and a["correlation_id"] == corr
        assert a["pid"] == 5001 and a["domain"] == "HIP_RUNTIME_API"
    assert hk["api_index"].isna()[2]  # correlation id 99 has no API record
    assert k[k.pid == 908]["api_index"].isna().all()
    # two queue handles on the hand GPU -> queues 0, 1
    assert sorted(hk["queue"].unique()) == [0, 1]

    c = tr.copies.to_pandas()
    assert list(c["direction"]) == ["HtoD", "DtoH"]
    assert list(c["bytes"]) == [4096, 1 << 20]
    assert list(c["name"]) == ["MEMORY_COPY_HOST_TO_DEVICE", "MEMORY_COPY_DEVICE_TO_HOST"]
    assert c["src_device"].isna()[0] and c["dst_device"].isna()[1]
    assert c["dst_device"][0] == hk["device"][0] == c["device"][1]
    for i in range(2):
        a = api.iloc[int(c["api_index"][i])]
        assert a["name"] == "hipMemcpy" and a["correlation_id"] == c["correlation_id"][i]

    m = tr.markers.to_pandas()
    assert list(m["name"]) == ["outer", "inner", "tick"]
    assert list(m["depth"]) == [0, 1, 2]
    assert m["end"][2] == m["start"][2]
    assert set(m["domain"]) == {"roctx"}

    ctr = tr.counters.to_pandas()
    assert dict(zip(ctr["counter"], ctr["value"])) == {"SQ_WAVES": 16.0, "GRBM_GUI_ACTIVE": 3.5}
    ki = int(ctr["kernel_index"][0])
    assert k["name"][ki] == "add()" and k["pid"][ki] == 5001
    validate(tr)


def test_open_trace_two_files_merge(tmp_path, sample_raw):
    base = sample_raw["rocprofiler-sdk-tool"][0]
    hand = _hand_process(base["strings"])
    a = _write(tmp_path / "5001_results.json.gz", {"rocprofiler-sdk-tool": [hand]})
    hand2 = copy.deepcopy(hand)
    hand2["metadata"]["pid"] = 5002
    b = _write(tmp_path / "5002_results.json.gz", {"rocprofiler-sdk-tool": [hand2]})
    tr = open_trace([a, b])
    assert len(tr.kernels) == 6 and len(tr.devices) == 1  # same host, same node id
    api = tr.api.to_pandas()
    k = tr.kernels.to_pandas()
    for i in (0, 1, 3, 4):
        assert api["pid"][int(k["api_index"][i])] == k["pid"][i]
    assert tr.meta["pids"] == [5001, 5002]
    validate(tr)


def test_kernel_rename(tmp_path, sample_raw):
    hand = _hand_process(sample_raw["rocprofiler-sdk-tool"][0]["strings"])
    hand["metadata"]["config"]["kernel_rename"] = True
    hand["strings"]["correlation_id"]["external"] = [{"key": 5, "value": "my_region"}]
    hand["buffer_records"]["kernel_dispatch"][1]["correlation_id"]["external"] = 5
    tr = _read(_write(tmp_path / "r.json.gz", {"rocprofiler-sdk-tool": [hand]}))
    assert tr.kernels.strings("name") == ["add()", "my_region", "mul()"]
    validate(tr)


def test_plain_json_and_empty_records(tmp_path, sample_raw):
    hand = _hand_process(sample_raw["rocprofiler-sdk-tool"][0]["strings"])
    for key in hand["buffer_records"]:
        hand["buffer_records"][key] = []
    hand["callback_records"]["counter_collection"] = []
    f = tmp_path / "1_results.json"
    f.write_text(json.dumps({"rocprofiler-sdk-tool": [hand]}, indent=1))
    assert READER.sniff(f) == 1.0
    tr = _read(f)
    assert len(tr.kernels) == 0 and len(tr.devices) == 1
    validate(tr)


# --------------------------------------------------------------------------- bad input


def test_truncated_gzip_keeps_whole_records(tmp_path, sample_raw):
    src = _files(DIRS[0])[0].read_bytes()
    f = tmp_path / "cut_results.json.gz"
    f.write_bytes(src[: len(src) * 3 // 4])
    tr = _read(f)
    n_all = len(sample_raw["rocprofiler-sdk-tool"][0]["buffer_records"]["kernel_dispatch"])
    assert 0 < len(tr.kernels) < n_all
    assert tr.meta["dropped"]["bytes"] > 0
    assert any("truncated" in w or "cut short" in w for w in tr.meta["warnings"])
    # kept records are the file's first ones, intact
    first = sample_raw["rocprofiler-sdk-tool"][0]["buffer_records"]["kernel_dispatch"]
    last = len(tr.kernels) - 1
    assert tr.kernels.row(last)["end"] == first[last]["end_timestamp"]
    validate(tr)


def test_truncated_plain_json(tmp_path, sample_raw):
    hand = _hand_process(sample_raw["rocprofiler-sdk-tool"][0]["strings"])
    text = json.dumps({"rocprofiler-sdk-tool": [hand]})
    cut = text.index('"hip_api"')  # inside the last kernel_dispatch record
    f = tmp_path / "t.json"
    f.write_text(text[: cut - 40])
    tr = _read(f)
    assert 1 <= len(tr.kernels) <= 3
    assert tr.meta["dropped"]["bytes"] > 0
    validate(tr)


@pytest.mark.parametrize("content, where", [
    (b'{"rocprofiler-sdk-tool": [ \x00\x01garbage', "byte"),
    (b'{"rocprofiler-sdk-tool": {"a": 1}}', "$.rocprofiler-sdk-tool"),
    (b'{"rocprofiler-sdk-tool": [{"buffer_records": {"kernel_dispatch": '
     b'[{"start_timestamp": "soon", "end_timestamp": 2, "dispatch_info": {}}]}}]}',
     "$.rocprofiler-sdk-tool[0].buffer_records.kernel_dispatch[0]"),
    (b'{"rocprofiler-sdk-tool": []}', "rocprofiler-sdk-tool"),
    (b'["rocprofiler-sdk-tool"]', "top level"),
    (b'{"something-else": 1}', "rocprofiler-sdk-tool"),
    (b"", "byte"),
])
def test_bad_input(tmp_path, content, where):
    f = tmp_path / "bad_results.json"
    f.write_bytes(content)
    with pytest.raises(TraceFormatError) as ei:
        _read(f)
    assert str(f) in str(ei.value) and where in str(ei.value)


def test_bad_gzip_and_unknown_agent(tmp_path, sample_raw):
    f = tmp_path / "x_results.json.gz"
    f.write_bytes(b"\x1f\x8b\x08\x00garbage-not-deflate" * 3)
    with pytest.raises(TraceFormatError):
        _read(f)
    hand = _hand_process(sample_raw["rocprofiler-sdk-tool"][0]["strings"])
    hand["buffer_records"]["kernel_dispatch"][0]["dispatch_info"]["agent_id"]["handle"] = 777
    g = _write(tmp_path / "y_results.json.gz", {"rocprofiler-sdk-tool": [hand]})
    with pytest.raises(TraceFormatError, match="777"):
        _read(g)


def test_sniff_rejects_other_json(tmp_path):
    f = tmp_path / "trace.json"
    f.write_text('{"traceEvents": []}')
    assert READER.sniff(f) == 0.0


def test_negative_start_is_dropped_not_a_17_hour_span(tmp_path, sample_raw):
    """W5: one dispatch with a negative start gave a 17.7 h span (busy 0.28 -> 0.9998)
    with no warning; W4: end before start was clamped to zero length."""
    from hipscope.analysis.report import build_report

    procs = [{**p, "buffer_records": {**p["buffer_records"], "kernel_dispatch": [
        dict(r) for r in p["buffer_records"]["kernel_dispatch"][:3000]]}}
        for p in sample_raw["rocprofiler-sdk-tool"]]
    doc = {**sample_raw, "rocprofiler-sdk-tool": procs}
    disp = procs[0]["buffer_records"]["kernel_dispatch"]
    disp[0]["start_timestamp"] = -disp[0]["start_timestamp"]
    disp[1]["start_timestamp"], disp[1]["end_timestamp"] = \
        disp[1]["end_timestamp"], disp[1]["start_timestamp"]
    path = _write(tmp_path / "908_results.json.gz", doc)
    tr = open_trace(path)
    rest = [(r["start_timestamp"], r["end_timestamp"])
            for p in doc["rocprofiler-sdk-tool"] for r in p["buffer_records"]["kernel_dispatch"]
            if 0 <= r["start_timestamp"] <= r["end_timestamp"]]
    assert len(tr.kernels) == len(rest)
    rep = build_report(tr)
    assert rep["span_ns"] == max(e for _s, e in rest) - min(s for s, _e in rest)
    assert sum("dropped 1 kernel that ends before it starts and 1 with a negative "
               "timestamp" in w for w in tr.warnings) == 1
