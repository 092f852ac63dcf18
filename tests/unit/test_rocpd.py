"""rocpd reader: the synthetic two-rank fixture databases (ground truth expected.json, twin
CSV set), a small database built here per rocpd_tables.sql / data_views.sql, bad input.
Expected figures come from plain sqlite3 queries or the ground truth, never the reader."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from hipscope.parsers import TraceFormatError, get_reader, open_trace
from hipscope.parsers._validate import validate
from tests.conftest import DATA, SAMPLES

READER = get_reader("rocpd")
FIX = DATA / "rocpd"
DBS = [FIX / "4242_results.db", FIX / "4243_results.db"]
EXPECTED = DATA / "fixtures" / "expected.json"
TWIN = DATA / "rocprofv3-csv-twin"

needs_fixtures = pytest.mark.skipif(
    not all(p.exists() for p in DBS),
    reason="fixture databases tests/data/rocpd/424[23]_results.db not generated yet "
           "(tests/data/fixtures/make_fixtures.py)")


def _read(path):
    return READER.read(Path(path), lambda f: None, lambda: False)


# --------------------------------------------------------------------------- mini rocpd db
# A small database laid out like rocprofv3 writes it: suffixed physical tables, the
# unsuffixed rocpd_* views over them, and the data views the reader queries (same output
# columns as rocprofiler-sdk's data_views.sql).

_SFX = "_0195a1b2_c3d4_7e5f_8a9b_0c1d2e3f4a5b"
_TABLES = {
    "rocpd_metadata": "id INTEGER PRIMARY KEY, tag TEXT, value TEXT",
    "rocpd_string": "id INTEGER PRIMARY KEY, guid TEXT, string TEXT",
    "rocpd_info_node": "id INTEGER PRIMARY KEY, guid TEXT, hash INT, machine_id TEXT, "
                       "system_name TEXT, hostname TEXT, release TEXT, version TEXT",
    "rocpd_info_process": "id INTEGER PRIMARY KEY, guid TEXT, nid INT, ppid INT, pid INT, "
                          "init INT, fini INT, start INT, \"end\" INT, command TEXT, "
                          "environment TEXT, extdata TEXT",
    "rocpd_info_thread": "id INTEGER PRIMARY KEY, guid TEXT, nid INT, ppid INT, pid INT, "
                         "tid INT, name TEXT, start INT, \"end\" INT, extdata TEXT",
    "rocpd_info_agent": "id INTEGER PRIMARY KEY, guid TEXT, nid INT, pid INT, type TEXT, "
                        "absolute_index INT, logical_index INT, type_index INT, uuid INT, "
                        "name TEXT, model_name TEXT, vendor_name TEXT, product_name TEXT, "
                        "user_name TEXT, extdata TEXT",
    "rocpd_info_queue": "id INTEGER PRIMARY KEY, guid TEXT, nid INT, pid INT, name TEXT",
    "rocpd_info_stream": "id INTEGER PRIMARY KEY, guid TEXT, nid INT, pid INT, name TEXT",
    "rocpd_info_pmc": "id INTEGER PRIMARY KEY, guid TEXT, nid INT, pid INT, agent_id INT, "
                      "name TEXT, symbol TEXT",
    "rocpd_info_kernel_symbol": "id INTEGER PRIMARY KEY, guid TEXT, nid INT, pid INT, "
                                "code_object_id INT, kernel_name TEXT, display_name TEXT, "
                                "group_segment_size INT, private_segment_size INT, "
                                "sgpr_count INT, arch_vgpr_count INT, accum_vgpr_count INT",
    "rocpd_event": "id INTEGER PRIMARY KEY, guid TEXT, category_id INT, stack_id INT, "
                   "parent_stack_id INT, correlation_id INT, extdata TEXT DEFAULT '{}'",
    "rocpd_region": "id INTEGER PRIMARY KEY, guid TEXT, nid INT, pid INT, tid INT, "
                    "start INT, \"end\" INT, name_id INT, event_id INT",
    "rocpd_track": "id INTEGER PRIMARY KEY, guid TEXT, nid INT, pid INT, tid INT, name_id INT",
    "rocpd_sample": "id INTEGER PRIMARY KEY, guid TEXT, track_id INT, timestamp INT, "
                    "event_id INT",
    "rocpd_kernel_dispatch": "id INTEGER PRIMARY KEY, guid TEXT, nid INT, pid INT, tid INT, "
                             "agent_id INT, kernel_id INT, dispatch_id INT, queue_id INT, "
                             "stream_id INT, start INT, \"end\" INT, private_segment_size INT, "
                             "group_segment_size INT, workgroup_size_x INT, "
                             "workgroup_size_y INT, workgroup_size_z INT, grid_size_x INT, "
                             "grid_size_y INT, grid_size_z INT, region_name_id INT, "
                             "event_id INT",
    "rocpd_memory_copy": "id INTEGER PRIMARY KEY, guid TEXT, nid INT, pid INT, tid INT, "
                         "start INT, \"end\" INT, name_id INT, dst_agent_id INT, "
                         "src_agent_id INT, size INT, queue_id INT, stream_id INT, "
                         "region_name_id INT, event_id INT",
    "rocpd_pmc_event": "id INTEGER PRIMARY KEY, guid TEXT, event_id INT, pmc_id INT, "
                       "value REAL",
}
_CAT = "(SELECT string FROM rocpd_string RS WHERE RS.id = E.category_id AND RS.guid = E.guid)"
_VIEWS = [
    """CREATE VIEW processes AS SELECT N.id AS nid, N.hostname, P.guid, P.ppid, P.pid,
        P.init, P.start, P."end", P.fini, P.command FROM rocpd_info_process P
        JOIN rocpd_info_node N ON N.id = P.nid AND N.guid = P.guid""",
    f"""CREATE VIEW regions AS SELECT R.id, R.guid, {_CAT} AS category, S.string AS name,
        R.nid, P.pid, T.tid, R.start, R."end", R."end" - R.start AS duration, R.event_id,
        E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id, E.extdata
        FROM rocpd_region R JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid
        JOIN rocpd_string S ON S.id = R.name_id AND S.guid = R.guid
        JOIN rocpd_info_process P ON P.id = R.pid AND P.guid = R.guid
        JOIN rocpd_info_thread T ON T.id = R.tid AND T.guid = R.guid""",
    f"""CREATE VIEW samples AS SELECT R.id, R.guid, {_CAT} AS category,
        (SELECT string FROM rocpd_string RS WHERE RS.id = T.name_id AND RS.guid = T.guid)
        AS name, T.nid, P.pid, TH.tid, R.timestamp, R.event_id, E.stack_id,
        E.correlation_id AS corr_id, E.extdata
        FROM rocpd_sample R JOIN rocpd_track T ON T.id = R.track_id AND T.guid = R.guid
        JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid
        JOIN rocpd_info_process P ON P.id = T.pid AND P.guid = T.guid
        JOIN rocpd_info_thread TH ON TH.id = T.tid AND TH.guid = T.guid""",
    f"""CREATE VIEW kernels AS SELECT K.id, K.guid, T.tid, {_CAT} AS category,
        RN.string AS region, S.display_name AS name, K.nid, P.pid,
        A.absolute_index AS agent_abs_index, A.logical_index AS agent_log_index,
        A.type_index AS agent_type_index, A.type AS agent_type, K.kernel_id, K.dispatch_id,
        K.stream_id, K.queue_id, Q.name AS queue, ST.name AS stream, K.start, K."end",
        K."end" - K.start AS duration, K.grid_size_x AS grid_x, K.grid_size_y AS grid_y,
        K.grid_size_z AS grid_z, K.workgroup_size_x AS workgroup_x,
        K.workgroup_size_y AS workgroup_y, K.workgroup_size_z AS workgroup_z,
        K.group_segment_size AS lds_size, K.private_segment_size AS scratch_size,
        S.arch_vgpr_count AS vgpr_count, S.accum_vgpr_count, S.sgpr_count, E.stack_id,
        E.parent_stack_id, E.correlation_id AS corr_id
        FROM rocpd_kernel_dispatch K
        JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid
        JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid
        JOIN rocpd_string RN ON RN.id = K.region_name_id AND RN.guid = K.guid
        JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
        LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id AND ST.guid = K.guid
        LEFT JOIN rocpd_info_queue Q ON Q.id = K.queue_id AND Q.guid = K.guid
        JOIN rocpd_info_process P ON P.id = Q.pid AND P.guid = Q.guid
        JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid""",
    f"""CREATE VIEW memory_copies AS SELECT M.id, M.guid, {_CAT} AS category, M.nid, P.pid,
        T.tid, M.start, M."end", M."end" - M.start AS duration, S.string AS name,
        M.stream_id, M.queue_id, M.size, DA.name AS dst_device,
        DA.absolute_index AS dst_agent_abs_index, DA.type AS dst_agent_type,
        SA.name AS src_device, SA.absolute_index AS src_agent_abs_index,
        SA.type AS src_agent_type, E.stack_id, E.correlation_id AS corr_id
        FROM rocpd_memory_copy M JOIN rocpd_string S ON S.id = M.name_id AND S.guid = M.guid
        JOIN rocpd_info_agent DA ON DA.id = M.dst_agent_id AND DA.guid = M.guid
        JOIN rocpd_info_agent SA ON SA.id = M.src_agent_id AND SA.guid = M.guid
        JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid
        JOIN rocpd_info_process P ON P.id = M.pid AND P.guid = M.guid
        JOIN rocpd_info_thread T ON T.id = M.tid AND T.guid = M.guid""",
    """CREATE VIEW counters_collection AS SELECT MIN(PE.id) AS id, PE.guid, K.dispatch_id,
        K.kernel_id, P.pid, K.agent_id, I.name AS counter_name, SUM(PE.value) AS value
        FROM rocpd_pmc_event PE JOIN rocpd_info_pmc I ON I.id = PE.pmc_id AND I.guid = PE.guid
        JOIN rocpd_kernel_dispatch K ON K.event_id = PE.event_id AND K.guid = PE.guid
        JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid
        GROUP BY PE.guid, K.dispatch_id, I.name, K.agent_id""",
]


def make_rocpd(path: Path, pid: int, guid: str, t0: int, host: str = "minihost") -> dict:
    """Write a small rocpd database; returns what it holds (for the expectations)."""
    con = sqlite3.connect(path)
    for name, cols in _TABLES.items():
        con.execute(f'CREATE TABLE "{name}{_SFX}" ({cols})')
        con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM "{name}{_SFX}"')
    for v in _VIEWS:
        con.execute(v)
    strings = ["", "HIP_RUNTIME_API_EXT", "MARKER_CORE_API", "KERNEL_DISPATCH", "MEMORY_COPY",
               "hipLaunchKernel", "hipMemcpyAsync", "roctxRangePushA", "roctxMarkA",
               "MEMORY_COPY_HOST_TO_DEVICE", "MEMORY_COPY_DEVICE_TO_HOST"]
    sid = {s: i + 1 for i, s in enumerate(strings)}

    def ins(table, **kw):
        kw.setdefault("guid", guid)
        cols = ", ".join(f'"{k}"' for k in kw)
        con.execute(f'INSERT INTO "{table}{_SFX}" ({cols}) VALUES '
                    f'({", ".join("?" * len(kw))})', list(kw.values()))

    for s, i in sid.items():
        ins("rocpd_string", id=i, string=s)
    con.execute(f'INSERT INTO "rocpd_metadata{_SFX}" (tag, value) VALUES '
                "('schema_version', '3'), ('uuid', ?), ('guid', ?)", (_SFX, guid))
    ins("rocpd_info_node", id=7, hash=7, machine_id="m", system_name="Linux", hostname=host)
    ins("rocpd_info_process", id=pid, nid=7, ppid=1, pid=pid, init=t0, fini=t0 + 10**7,
        start=t0, end=t0 + 10**7, command="./mini --x", environment="{}", extdata="{}")
    for tid in (pid, pid + 1):
        ins("rocpd_info_thread", id=tid, nid=7, ppid=1, pid=pid, tid=tid)
    ins("rocpd_info_agent", id=0, nid=7, pid=pid, type="CPU", absolute_index=0,
        logical_index=0, type_index=0, name="EPYC", product_name="EPYC", extdata="{}")
    for node, ti in ((2, 0), (3, 1)):
        ins("rocpd_info_agent", id=node, nid=7, pid=pid, type="GPU", absolute_index=node,
            logical_index=node, type_index=ti, name="gfx942", product_name="AMD Instinct MI300X",
            extdata=json.dumps({"cu_count": 304, "mem_banks": [{"size_in_bytes": 1 << 34}]}))
    ins("rocpd_info_queue", id=0, nid=7, pid=pid, name="Default Queue")
    ins("rocpd_info_queue", id=41, nid=7, pid=pid, name="Queue 0")
    ins("rocpd_info_queue", id=42, nid=7, pid=pid, name="Queue 1")
    ins("rocpd_info_stream", id=0, nid=7, pid=pid, name="Default Stream")
    ins("rocpd_info_stream", id=5, nid=7, pid=pid, name="Stream 0")
    ins("rocpd_info_kernel_symbol", id=1, nid=7, pid=pid, code_object_id=1,
        kernel_name="_Z4gemmv.kd", display_name="gemm()", group_segment_size=0,
        private_segment_size=0, sgpr_count=24, arch_vgpr_count=64, accum_vgpr_count=8)
    ins("rocpd_info_kernel_symbol", id=2, nid=7, pid=pid, code_object_id=1,
        kernel_name="_Z4reluv.kd", display_name="relu()", group_segment_size=0,
        private_segment_size=0, sgpr_count=16, arch_vgpr_count=8, accum_vgpr_count=0)
    ins("rocpd_info_pmc", id=1, nid=7, pid=pid, agent_id=2, name="SQ_WAVES", symbol="SQ_WAVES")
    ev = iter(range(1, 1000))

    def event(cat, stack, ext=None, corr=0):
        e = next(ev)
        ins("rocpd_event", id=e, category_id=sid[cat], stack_id=stack, parent_stack_id=0,
            correlation_id=corr, extdata=json.dumps(ext or {}))
        return e

    # API regions (stack_id = internal correlation id = region id)
    calls = [(1, "hipLaunchKernel", 100, 300), (2, "hipLaunchKernel", 400, 450),
             (3, "hipMemcpyAsync", 500, 700), (4, "hipLaunchKernel", 800, 850)]
    for corr, name, s, e in calls:
        ins("rocpd_region", id=corr, nid=7, pid=pid, tid=pid, start=t0 + s, end=t0 + e,
            name_id=sid[name], event_id=event("HIP_RUNTIME_API_EXT", corr, corr=77))
    # roctx: a range and a nested range on thread pid+1, an instant mark (sample)
    for corr, msg, s, e in ((10, "step", 50, 5000), (11, "fwd", 60, 900)):
        ins("rocpd_region", id=corr, nid=7, pid=pid, tid=pid + 1, start=t0 + s, end=t0 + e,
            name_id=sid["roctxRangePushA"],
            event_id=event("MARKER_CORE_API", corr, {"message": msg}))
    ins("rocpd_track", id=1, nid=7, pid=pid, tid=pid + 1, name_id=sid["MARKER_CORE_API"])
    ins("rocpd_sample", id=12, track_id=1, timestamp=t0 + 70,
        event_id=event("MARKER_CORE_API", 12, {"message": "tick"}))
    # kernels: dispatch 1, 2 on GPU node 2 queue 41; dispatch 3 on node 3 queue 42;
    # dispatch 4 has no launching region (stack 9)
    kern = [(1, 1, 2, 41, 0, 1, 350, 1350), (2, 2, 2, 41, 5, 2, 1400, 1500),
            (3, 1, 3, 42, 5, 4, 900, 2900), (4, 2, 2, 41, 0, 9, 3000, 3100)]
    for did, kid, node, q, st, stack, s, e in kern:
        ins("rocpd_kernel_dispatch", id=did, nid=7, pid=pid, tid=pid, agent_id=node,
            kernel_id=kid, dispatch_id=did, queue_id=q, stream_id=st, start=t0 + s,
            end=t0 + e, private_segment_size=0, group_segment_size=2048,
            workgroup_size_x=256, workgroup_size_y=1, workgroup_size_z=1,
            grid_size_x=4096 * did, grid_size_y=1, grid_size_z=1, region_name_id=sid[""],
            event_id=event("KERNEL_DISPATCH", stack, corr=77))
    e1 = con.execute(f'SELECT event_id FROM "rocpd_kernel_dispatch{_SFX}" WHERE id = 1'
                     ).fetchone()[0]
    for i, v in enumerate((100.0, 28.0)):
        ins("rocpd_pmc_event", id=i + 1, event_id=e1, pmc_id=1, value=v)
    for cid, name, src, dst, size, s, e, stack in (
            (1, "MEMORY_COPY_HOST_TO_DEVICE", 0, 2, 65536, 550, 650, 3),
            (2, "MEMORY_COPY_DEVICE_TO_HOST", 3, 0, 4096, 3200, 3300, 99)):
        ins("rocpd_memory_copy", id=cid, nid=7, pid=pid, tid=pid, start=t0 + s, end=t0 + e,
            name_id=sid[name], dst_agent_id=dst, src_agent_id=src, size=size, stream_id=5,
            event_id=event("MEMORY_COPY", stack))
    con.commit()
    con.close()
    return {"kernels": kern, "calls": calls}


@pytest.fixture
def mini(tmp_path) -> Path:
    p = tmp_path / "1001_results.db"
    make_rocpd(p, 1001, "0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", 3_000_000_000_000)
    return p


def test_mini_db(mini):
    assert READER.sniff(mini) == 1.0
    tr = _read(mini)
    k = tr.kernels.to_pandas()
    assert list(k["name"]) == ["gemm()", "relu()", "gemm()", "relu()"]
    assert list(k["dispatch_id"]) == [1, 2, 3, 4]
    assert list(k["end"] - k["start"]) == [1000, 100, 2000, 100]
    assert list(k["grid_x"]) == [4096, 8192, 12288, 16384]
    assert list(k["vgpr"]) == [64, 8, 64, 8] and list(k["accum_vgpr"]) == [8, 0, 8, 0]
    assert list(k["lds_bytes"]) == [2048] * 4 and list(k["stream"]) == [0, 5, 5, 0]
    assert len(tr.devices) == 2
    assert tr.devices.strings("raw_id") == ["2", "3"]
    assert tr.devices.strings("compute_units") == [304, 304]
    assert tr.devices.strings("host") == ["minihost"] * 2
    assert list(k["device"]) == [0, 0, 1, 0]
    assert list(k["queue"]) == [0, 0, 0, 0]  # one queue per device, numbered per device
    assert sorted(tr.queues.strings("name")) == ["Queue 0", "Queue 1"]
    # kernel -> launching region by stack_id (corr_id holds the external id 77)
    api = tr.api.to_pandas()
    assert list(api["name"]) == ["hipLaunchKernel", "hipLaunchKernel", "hipMemcpyAsync",
                                 "hipLaunchKernel"]
    assert set(api["domain"]) == {"HIP_RUNTIME_API_EXT"}
    linked = [None if pd.isna(x) else api["correlation_id"][int(x)] for x in k["api_index"]]
    assert linked == [1, 2, 4, None]
    c = tr.copies.to_pandas()
    assert list(c["direction"]) == ["HtoD", "DtoH"] and list(c["bytes"]) == [65536, 4096]
    assert api["name"][int(c["api_index"][0])] == "hipMemcpyAsync"
    assert c["api_index"].isna()[1]
    assert c["dst_device"][0] == 0 and c["src_device"].isna()[0]
    assert c["src_device"][1] == 1 and c["device"][1] == 1
    m = tr.markers.to_pandas().sort_values("start")
    assert list(m["name"]) == ["step", "fwd", "tick"]
    assert list(m["depth"]) == [0, 1, 2]
    ctr = tr.counters.to_pandas()
    assert list(ctr["counter"]) == ["SQ_WAVES"] and list(ctr["value"]) == [128.0]
    assert k["dispatch_id"][int(ctr["kernel_index"][0])] == 1
    assert tr.meta["pids"] == [1001] and tr.meta["command"] == "./mini --x"
    assert tr.meta["rocpd_metadata"]["schema_version"] == "3"
    assert tr.meta["clock"] == "CLOCK_BOOTTIME" and tr.meta["format"] == "rocpd"
    json.dumps(tr.meta)
    validate(tr)


def test_mini_two_dbs_folder_and_list(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    make_rocpd(d / "1001_results.db", 1001, "0195a1b2-0000-7000-8000-000000000001", 3 * 10**12)
    make_rocpd(d / "1002_results.db", 1002, "0195a1b2-0000-7000-8000-000000000002", 3 * 10**12)
    (d / "notes.db").write_bytes(b"not sqlite")
    assert READER.sniff(d) > 0
    tr = _read(d)
    assert len(tr.kernels) == 8 and len(tr.api) == 8
    assert len(tr.devices) == 2  # same host, same node ids
    assert tr.meta["pids"] == [1001, 1002]
    k = tr.kernels.to_pandas()
    api = tr.api.to_pandas()
    for i in range(8):
        if not pd.isna(k["api_index"][i]):
            assert api["pid"][int(k["api_index"][i])] == k["pid"][i]
    validate(tr)
    tr2 = open_trace([d / "1001_results.db", d / "1002_results.db"])
    assert len(tr2.kernels) == 8
    assert sorted(tr2.meta["sources"]) == sorted(str(d / f"100{i}_results.db") for i in (1, 2))
    validate(tr2)


# --------------------------------------------------------------------------- fixtures


def _expected() -> dict:
    return json.loads(EXPECTED.read_text())


@needs_fixtures
def test_fixture_kernel_counts_and_links():
    for db in DBS:
        con = sqlite3.connect(db)
        n_k = con.execute("SELECT COUNT(*) FROM kernels").fetchone()[0]
        links = dict(con.execute(
            "SELECT k.dispatch_id, r.stack_id FROM kernels k JOIN regions r "
            "ON r.stack_id = k.stack_id AND r.guid = k.guid").fetchall())
        names = dict(con.execute("SELECT dispatch_id, name FROM kernels").fetchall())
        con.close()
        tr = _read(db)
        assert len(tr.kernels) == n_k
        k = tr.kernels.to_pandas()
        api = tr.api.to_pandas()
        for i in range(len(k)):
            d = int(k["dispatch_id"][i])
            assert k["name"][i] == names[d]
            ai = k["api_index"][i]
            if d in links:
                assert api["correlation_id"][int(ai)] == links[d]
            else:
                assert pd.isna(ai)
        validate(tr)


@needs_fixtures
def test_fixture_ground_truth():
    if not EXPECTED.exists():
        pytest.skip("expected.json not generated yet")
    exp = _expected()
    for db in DBS:
        tr = _read(db)
        pe = exp["processes"][db.name.split("_")[0]]
        k, api = tr.kernels.to_pandas(), tr.api.to_pandas()
        assert len(k) == pe["kernel_count"]
        assert sorted(k["dispatch_id"]) == pe["dispatch_ids"]
        assert len(api) == pe["api_call_count"]
        assert dict(api["domain"].value_counts()) == pe["api_calls_by_domain"]
        # kernel -> launching API call (by stack_id), incl. the graph launch's kernels
        got = sorted((int(k["dispatch_id"][i]), int(api["correlation_id"][int(ai)]),
                      api["name"][int(ai)]) for i, ai in enumerate(k["api_index"])
                     if not pd.isna(ai))
        assert got == sorted(tuple(x) for x in pe["kernel_api_pairs"])
        g = pe["graph_launch"]
        for d in g["dispatch_ids"]:
            ai = int(k["api_index"][k["dispatch_id"] == d].iloc[0])
            assert api["name"][ai] == "hipGraphLaunch" and api["start"][ai] == g["start"]
        raw = {int(r): int(tr.devices.row(int(i))["raw_id"]) for i, r in
               zip(range(len(tr.devices)), range(len(tr.devices)))}
        by_node = k["device"].map(raw).value_counts()
        assert {str(n): int(c) for n, c in by_node.items()} == pe["kernels_by_agent_node_id"]
        mc = pe["memory_copies"]
        c = tr.copies.to_pandas()
        assert len(c) == mc["count"] and int(c["bytes"].sum()) == mc["total_bytes"]
        for row in mc["rows"]:
            hit = c[c["start"] == row["start"]].iloc[0]
            assert int(hit["bytes"]) == row["bytes"]
            assert api["name"][int(hit["api_index"])] == row["api_function"]
            assert int(api["correlation_id"][int(hit["api_index"])]) == row["corr_id"]
        m = tr.markers.to_pandas()
        assert len(m) == pe["markers"]["count"]
        for row in pe["markers"]["rows"]:
            hit = m[(m["start"] == row["start"]) & (m["tid"] == row["tid"])].iloc[0]
            assert hit["name"] == row["message"]
            if row["end"] > row["start"]:  # ranges; the model leaves marks at depth 0,
                assert int(hit["depth"]) == row["depth"]  # hipscope nests them geometrically
            assert int(hit["end"]) == row["end"]
        ctr = tr.counters.to_pandas()
        assert len(ctr) == pe["counters"]["row_count"]
        for row in pe["counters"]["values"]:
            for name in pe["counters"]["collected"]:
                hit = ctr[(ctr["dispatch_id"] == row["dispatch_id"]) & (ctr["counter"] == name)]
                assert float(hit["value"].iloc[0]) == row[name]
                assert int(k["dispatch_id"][int(hit["kernel_index"].iloc[0])]) == \
                    row["dispatch_id"]
        assert tr.meta["pids"] == [pe["pid"]] and tr.meta["host"] == pe["hostname"]
        validate(tr)


@needs_fixtures
def test_fixture_merge_as_one_trace(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    for db in DBS:
        shutil.copy(db, d / db.name)
    tr = _read(d)
    parts = [_read(db) for db in DBS]
    assert len(tr.kernels) == sum(len(p.kernels) for p in parts)
    assert len(tr.api) == sum(len(p.api) for p in parts)
    # same host, same GPUs: devices are shared, not doubled
    assert len(tr.devices) == len(parts[0].devices)
    k = tr.kernels.to_pandas()
    api = tr.api.to_pandas()
    ok = ~k["api_index"].isna()
    assert (api["pid"].to_numpy()[k["api_index"][ok].astype(int)] == k["pid"][ok]).all()
    validate(tr)


@needs_fixtures
def test_fixture_matches_twin_csv():
    try:
        csv_reader = get_reader("rocprofv3-csv")
    except KeyError:
        pytest.skip("hipscope/parsers/rocprofv3_csv.py (rocprofv3-csv reader) not there yet")
    if not TWIN.exists():
        pytest.skip("twin CSV set tests/data/rocprofv3-csv-twin not generated yet")
    db_tr = open_trace(DBS, reader="rocpd")
    targets = [TWIN] if csv_reader.sniff(TWIN) > 0 else sorted(
        p for p in TWIN.iterdir() if csv_reader.sniff(p) > 0)
    csv_tr = open_trace(targets, reader="rocprofv3-csv")

    def kernel_set(tr):
        k = tr.kernels.to_pandas()
        return sorted(zip(k["pid"].astype(int), k["name"].astype(str), k["start"], k["end"]))

    assert kernel_set(db_tr) == kernel_set(csv_tr)

    def links(tr):
        k, a = tr.kernels.to_pandas(), tr.api.to_pandas()
        out = []
        for i in range(len(k)):
            ai = k["api_index"][i]
            out.append((int(k["pid"][i]), int(k["start"][i]),
                        None if pd.isna(ai) else (a["name"][int(ai)],
                                                          int(a["start"][int(ai)]))))
        return sorted(out, key=str)

    assert links(db_tr) == links(csv_tr)
    validate(db_tr)
    validate(csv_tr)


# --------------------------------------------------------------------------- bad input


def test_non_sqlite_file(tmp_path):
    f = tmp_path / "1_results.db"
    f.write_text("hello, not a database")
    assert READER.sniff(f) == 0.0
    with pytest.raises(TraceFormatError, match="SQLite"):
        _read(f)


def test_sqlite_without_rocpd_tables(tmp_path):
    f = tmp_path / "other.db"
    con = sqlite3.connect(f)
    con.execute("CREATE TABLE t (a INT)")
    con.commit()
    con.close()
    assert READER.sniff(f) == 0.0
    with pytest.raises(TraceFormatError, match="rocpd") as ei:
        _read(f)
    assert str(f) in str(ei.value)


def test_legacy_results_db_refused():
    legacy = sorted((SAMPLES / "legacy-rocprof").glob("*/results.db"))
    assert legacy
    for f in legacy:
        assert READER.sniff(f) == 0.0
        with pytest.raises(TraceFormatError, match="legacy rocprof"):
            _read(f)


def test_truncated_and_corrupt_db(tmp_path, mini):
    data = mini.read_bytes()
    cut = tmp_path / "cut_results.db"
    cut.write_bytes(data[: len(data) // 3])
    with pytest.raises(TraceFormatError) as ei:
        _read(cut)
    assert str(cut) in str(ei.value)
    bad = tmp_path / "bad_results.db"
    bad.write_bytes(data[:100] + b"\xff" * (len(data) - 100))
    with pytest.raises(TraceFormatError):
        _read(bad)


def test_missing_view_named(tmp_path, mini):
    con = sqlite3.connect(mini)
    con.execute("DROP VIEW kernels")
    con.commit()
    con.close()
    with pytest.raises(TraceFormatError, match="table kernels"):
        _read(mini)


def test_empty_folder(tmp_path):
    assert READER.sniff(tmp_path) == 0.0
    with pytest.raises(TraceFormatError, match="rocpd"):
        _read(tmp_path)


# --------------------------------------------------------------------------- ADBC vs sqlite3
@needs_fixtures
@pytest.mark.parametrize("db_path", DBS, ids=lambda p: p.name)
def test_adbc_and_sqlite3_paths_give_the_same_trace(db_path):
    pytest.importorskip("adbc_driver_sqlite")
    from hipscope.parsers.rocpd.db import _Db
    from hipscope.parsers.rocpd.tables import read_db

    def read(use_adbc):
        db = _Db(db_path, use_adbc=use_adbc)
        try:
            return read_db("rocpd", db, lambda f: None, lambda: False), db
        finally:
            db.close()

    fast, fast_db = read(True)
    slow, slow_db = read(False)
    assert fast_db.adbc_fetches > 0 and fast_db.adbc_fallbacks == 0
    assert slow_db.adbc_fetches == 0
    for name in ("kernels", "api", "copies", "markers", "counters", "devices", "queues",
                 "streams"):
        a, b = getattr(fast, name), getattr(slow, name)
        assert a.data.schema == b.data.schema, name
        assert a.data.equals(b.data), name
    assert fast.meta == slow.meta


# --------------------------------------------------------------------------- damage, dangling ids
# RELIABILITY.md W1, T2(b), W8, W10/F1. Expected figures come from plain sqlite3 over the file.


def _quick_check_first(path: Path) -> str:
    """The first problem PRAGMA quick_check reports, without the '*** in database' line."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        msg = con.execute("PRAGMA quick_check(1)").fetchone()[0]
    finally:
        con.close()
    assert msg != "ok"
    return [ln for ln in msg.splitlines() if ln.strip() and not ln.startswith("***")][0]


def _flip_w1(src: Path, dst: Path) -> Path:
    import random

    b = bytearray(src.read_bytes())
    r = random.Random(1000)
    for _ in range(8):
        b[r.randrange(len(b))] ^= r.randrange(1, 256)
    dst.write_bytes(bytes(b))
    return dst


@needs_fixtures
@pytest.mark.parametrize("adbc", ["1", "0"])
def test_w1_btree_damage_is_refused_with_the_quick_check_message(tmp_path, monkeypatch, adbc):
    # W1: this damage makes 10 of 41 kernels vanish with no SQL error
    monkeypatch.setenv("HIPSCOPE_ROCPD_ADBC", adbc)
    bad = _flip_w1(DBS[0], tmp_path / "4242_results.db")
    with pytest.raises(TraceFormatError) as ei:
        open_trace(bad)
    msg = str(ei.value)
    assert msg.startswith(f"{bad} at PRAGMA quick_check: expected an intact SQLite database")
    assert _quick_check_first(bad) in msg
    assert "\n" not in msg


@needs_fixtures
def test_t2b_seed2_byte_1548_is_one_sentence_not_schema_error(tmp_path):
    # T2(b): with 512-byte pages, byte 1548 is the high byte of cell 0's pointer on page 4,
    # the interior root of rocpd_string: 0x01fb becomes 0xfb, the first child pointer is
    # read from garbage and the lowest string ids vanish. Regions lose their category
    # (api.domain null -> SchemaError) and every kernel drops out of the kernels view.
    bad = tmp_path / "4242_results.db"
    b = bytearray(DBS[0].read_bytes())
    b[1548] = 0x00
    bad.write_bytes(bytes(b))
    with pytest.raises(TraceFormatError) as ei:
        open_trace(bad)
    assert _quick_check_first(bad) in str(ei.value)


def _physical(path: Path, prefix: str) -> str:
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name "
                           "LIKE ?", (prefix + "%",)).fetchone()[0]
    finally:
        con.close()


def _sql(path: Path, *stmts: str):
    con = sqlite3.connect(path)
    try:
        out = [con.execute(s).fetchall() for s in stmts]
        con.commit()
        return out
    finally:
        con.close()


@needs_fixtures
@pytest.mark.parametrize("adbc", ["1", "0"])
@pytest.mark.parametrize("column", ["kernel_id", "agent_id"])
def test_w8_kernel_with_a_dangling_id_is_kept_and_warned(tmp_path, monkeypatch, column, adbc):
    monkeypatch.setenv("HIPSCOPE_ROCPD_ADBC", adbc)
    db = tmp_path / "4242_results.db"
    shutil.copy(DBS[0], db)
    kd = _physical(db, "rocpd_kernel_dispatch_")
    _sql(db, f'UPDATE "{kd}" SET {column} = 999999 WHERE id = (SELECT min(id) FROM "{kd}")')
    [[(total,)], [(in_view,)], [(start, end)]] = _sql(
        db, f'SELECT count(*) FROM "{kd}"', "SELECT count(*) FROM kernels",
        f'SELECT start, "end" FROM "{kd}" WHERE {column} = 999999')
    assert in_view == total - 1  # the view's inner join drops it
    tr = open_trace(db)
    assert len(tr.kernels) == total
    warn = [w for w in tr.meta.get("warnings", []) if "kernels view" in w]
    assert len(warn) == 1 and f"1 of {total} kernels" in warn[0] and str(db) in warn[0]
    k = tr.kernels
    row = [i for i, (s, e) in enumerate(zip(k.numpy("start"), k.numpy("end")))
           if (s, e) == (start, end)]
    assert len(row) == 1
    if column == "kernel_id":
        assert k.strings("name")[row[0]] == "unknown kernel 999999"
    else:
        dev = int(k.numpy("device")[row[0]])
        assert tr.devices.strings("name")[dev] == "unknown agent 999999"
        gpus = _sql(db, "SELECT count(*) FROM rocpd_info_agent WHERE type = 'GPU'")[0][0][0]
        assert len(tr.devices) == gpus + 1


@needs_fixtures
def test_w8_regions_and_copies_lost_by_the_views_are_warned(tmp_path):
    db = tmp_path / "4242_results.db"
    shutil.copy(DBS[0], db)
    rg, mc = _physical(db, "rocpd_region_"), _physical(db, "rocpd_memory_copy_")
    _sql(db, f'UPDATE "{rg}" SET event_id = 999999 WHERE id = (SELECT min(id) FROM "{rg}")',
         f'UPDATE "{mc}" SET dst_agent_id = 999999 WHERE id = (SELECT min(id) FROM "{mc}")')
    [[(n_rg,)], [(n_mc,)]] = _sql(db, f'SELECT count(*) FROM "{rg}"',
                                  f'SELECT count(*) FROM "{mc}"')
    warnings = open_trace(db).meta.get("warnings", [])
    assert any(f"1 of {n_rg} regions" in w and "regions view" in w for w in warnings)
    assert any(f"1 of {n_mc} memory copies" in w for w in warnings)


@needs_fixtures
def test_region_without_category_is_an_api_call_of_unknown_domain(tmp_path):
    # an intact file whose category_id points nowhere: api.domain was null (SchemaError)
    db = tmp_path / "4242_results.db"
    shutil.copy(DBS[0], db)
    ev = _physical(db, "rocpd_event_")
    [[(n_api,)], [(n_lost,)]] = _sql(
        db, "SELECT count(*) FROM regions WHERE category NOT LIKE 'MARKER%'",
        'SELECT count(*) FROM regions WHERE event_id = (SELECT min(event_id) FROM regions)')
    _sql(db, f'UPDATE "{ev}" SET category_id = 999999 '
             "WHERE id = (SELECT min(event_id) FROM regions)")
    tr = open_trace(db)
    assert list(tr.api.strings("domain")).count("unknown") == n_lost >= 1
    assert len(tr.api) == n_api
    assert any(f"{n_lost} regions have no category" in w for w in tr.meta["warnings"])


@needs_fixtures
@pytest.mark.parametrize("adbc", ["1", "0"])
@pytest.mark.parametrize("folder", ["a%41b", "run#1", "q?mode=rwc", "sp ace"])
def test_odd_folder_names_open_the_named_file(tmp_path, monkeypatch, folder, adbc):
    # W10/F1 for rocpd: sqlite3 and ADBC get the same quoted URI
    monkeypatch.setenv("HIPSCOPE_ROCPD_ADBC", adbc)
    (tmp_path / folder).mkdir()
    (tmp_path / "aAb").mkdir(exist_ok=True)
    db = tmp_path / folder / "4242_results.db"
    shutil.copy(DBS[0], db)
    shutil.copy(DBS[1], tmp_path / "aAb" / "4242_results.db")
    [[(n,)]] = _sql(db, "SELECT count(*) FROM kernels")
    assert READER.sniff(db) == 1.0
    tr = open_trace(db)
    assert len(tr.kernels) == n
    assert tr.meta["pids"] == [4242]


def test_cancelled_read_stops_the_integrity_check(mini):
    import threading

    from hipscope.parsers.base import Cancelled

    answers = iter([False, False])
    with pytest.raises(Cancelled):
        READER.read(mini, lambda f: None, lambda: next(answers, True))
    assert not [t for t in threading.enumerate() if t.name == "sqlite-quick-check"]


@needs_fixtures
def test_undecodable_schema_is_recognised_and_refused_in_one_sentence(tmp_path):
    # T6 for rocpd: invalid UTF-8 in a CREATE TABLE text of sqlite_master; the sniffer
    # said 0.0 (UnicodeDecodeError), so the file got "no reader recognises"
    db = tmp_path / "4242_results.db"
    b = bytearray(DBS[0].read_bytes())
    at = b.find(b'CREATE TABLE "rocpd_info_agent_')
    assert at > 0
    b[at + 2] = 0x80
    db.write_bytes(bytes(b))
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    with pytest.raises(UnicodeDecodeError) as raw:  # SQLite's own message holds the byte
        con.execute("SELECT name FROM sqlite_master").fetchall()
    con.close()
    assert READER.sniff(db) == 1.0
    with pytest.raises(TraceFormatError) as ei:
        open_trace(db)
    assert str(ei.value).startswith(str(db))
    assert raw.value.object.decode("utf-8", "replace") in str(ei.value)


def test_folder_with_a_second_name_of_a_db_reads_it_once(tmp_path):
    """W9 for rocpd folders: a link to a db already in the folder doubled every count."""
    shutil.copy(DBS[0], tmp_path / "4242_results.db")
    (tmp_path / "9999_results.db").symlink_to("4242_results.db")
    con = sqlite3.connect(DBS[0])
    (kt,) = con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE "
                        "'rocpd_kernel_dispatch_%'").fetchone()
    (n,) = con.execute(f'SELECT count(*) FROM "{kt}"').fetchone()
    con.close()
    tr = open_trace(tmp_path)
    assert len(tr.kernels) == n
    assert len(tr.meta["sources"]) == 1


@pytest.mark.parametrize("db_path", DBS, ids=lambda p: p.name)
def test_streams_table_against_plain_sqlite(db_path):
    """One row per stream the kernels use: its name, and its device, queue and pid
    where all its kernels share one (figures from sqlite3 over the file)."""
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        raw = con.execute(
            "SELECT K.stream_id, count(DISTINCT K.agent_id), count(DISTINCT K.queue_id), "
            "count(DISTINCT P.pid), min(P.pid), S.name FROM rocpd_kernel_dispatch K "
            "JOIN rocpd_info_process P ON P.id = K.pid "
            "LEFT JOIN rocpd_info_stream S ON S.id = K.stream_id "
            "GROUP BY K.stream_id ORDER BY K.stream_id").fetchall()
    finally:
        con.close()
    tr = get_reader("rocpd").read(db_path, lambda f: None, lambda: False)
    st = tr.streams.to_pandas().sort_values("stream")
    assert list(st["stream"]) == [r[0] for r in raw]
    assert list(st["name"]) == [r[5] for r in raw]
    assert [not pd.isna(d) for d in st["device"]] == [r[1] == 1 for r in raw]
    assert [not pd.isna(q) for q in st["queue"]] == [r[1] == 1 and r[2] == 1 for r in raw]
    assert [None if pd.isna(p) else int(p) for p in st["pid"]] == [
        r[4] if r[3] == 1 else None for r in raw]
