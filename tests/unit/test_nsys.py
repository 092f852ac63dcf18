"""Nsight Systems SQLite reader: the two synthetic exports of tests/data/nsys/ (older and
newer schema generation, tests/data/fixtures/make_nsys.py), schema drift, bad input, the
sniffers against the other SQLite formats, and `hipscope report --json`. Expected figures
come from plain sqlite3 queries over the files, never from the reader."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from hipscope.analysis.queue_delay import queue_delays
from hipscope.model import SPECS
from hipscope.parsers import TraceFormatError, find_reader, get_reader, open_trace
from hipscope.parsers._validate import validate
from tests.conftest import DATA, ROOT, SAMPLES

READER = get_reader("nsys")
OLD = DATA / "nsys" / "nsys_2021_schema.sqlite"
NEW = DATA / "nsys" / "nsys_2025_schema.sqlite"
BOTH = pytest.mark.parametrize("path", [OLD, NEW], ids=["2021-schema", "2025-schema"])
K = "CUPTI_ACTIVITY_KIND_KERNEL"
PID = "((globalPid >> 24) & 16777215)"
# CUpti_ActivityMemcpyKind values the fixtures use
DIRECTION = {1: "HtoD", 2: "DtoH", 8: "DtoD", 9: "HtoH", 10: "PtoP"}


def q(path: Path, sql: str, *args) -> list[tuple]:
    with sqlite3.connect(path) as c:
        return c.execute(sql, args).fetchall()


def tables(path: Path) -> set[str]:
    return {r[0] for r in q(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}


def read(path: Path):
    return validate(open_trace(path))


def expected_device(path: Path) -> str:
    """SQL giving each kernel's GPU id: via TARGET_INFO_CUDA_DEVICE when present."""
    if "TARGET_INFO_CUDA_DEVICE" in tables(path):
        return ("(SELECT c.gpuId FROM TARGET_INFO_CUDA_DEVICE c WHERE c.cudaId = k.deviceId "
                "AND c.pid = ((k.globalPid >> 24) & 16777215))")
    return "k.deviceId"


# --------------------------------------------------------------------------- fixtures


@BOTH
def test_kernels_read_with_names_devices_and_launch_geometry(path):
    tr = read(path)
    want = q(path, f"SELECT k.start, k.[end], s.value, {expected_device(path)}, "
                   f"k.correlationId, k.gridX * k.blockX, k.gridY * k.blockY, k.blockX, "
                   f"k.registersPerThread, k.staticSharedMemory, k.dynamicSharedMemory, "
                   f"{PID.replace('globalPid', 'k.globalPid')} "
                   f"FROM {K} k JOIN StringIds s ON s.id = k.demangledName "
                   "ORDER BY k.start, k.[end]")
    k = tr.kernels
    got = list(zip(*(k.numpy(c).tolist() if c != "name" else k.strings("name")
                     for c in ("start", "end", "name", "device", "correlation_id", "grid_x",
                               "grid_y", "block_x", "registers", "lds_bytes",
                               "dyn_lds_bytes", "pid"))))
    assert got == [tuple(r) for r in want]
    assert tr.format == "nsys" and tr.meta["clock"]


@BOTH
def test_kernels_link_to_their_runtime_or_driver_call(path):
    tr = read(path)
    api_tables = [t for t in ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER")
                  if t in tables(path)]
    launch = {}
    for t in api_tables:
        for corr, name in q(path, f"SELECT a.correlationId, s.value FROM {t} a "
                                  "JOIN StringIds s ON s.id = a.nameId"):
            launch.setdefault(corr, name)
    api_names = tr.api.strings("name")
    idx = tr.kernels.numpy("api_index").tolist()
    for corr, i in zip(tr.kernels.numpy("correlation_id").tolist(), idx):
        assert api_names[i] == launch[corr]
        assert int(tr.api.numpy("correlation_id")[i]) == corr
    assert len(tr.api) == sum(q(path, f"SELECT count(*) FROM {t}")[0][0] for t in api_tables)
    domains = {"CUPTI_ACTIVITY_KIND_RUNTIME": "cuda_runtime",
               "CUPTI_ACTIVITY_KIND_DRIVER": "cuda_driver"}
    assert set(tr.api.strings("domain")) == {domains[t] for t in api_tables}


@BOTH
def test_graph_launch_kernels_feed_the_graph_launch_handling(path):
    tr = read(path)
    graph_kernels = q(path, f"SELECT count(*) FROM {K} k JOIN CUPTI_ACTIVITY_KIND_RUNTIME a "
                            "ON a.correlationId = k.correlationId JOIN StringIds s "
                            "ON s.id = a.nameId WHERE s.value LIKE '%GraphLaunch%'")[0][0]
    assert graph_kernels > 0
    assert len(queue_delays(tr).graph_rows) == graph_kernels
    nodes = q(path, f"SELECT count(*), count(DISTINCT graphNodeId) FROM {K} "
                    "WHERE graphNodeId IS NOT NULL AND graphNodeId != 0")[0]
    g = tr.meta["cuda_graphs"]
    assert (g["kernels_from_graph_nodes"], g["graph_nodes"]) == nodes
    if "graphId" in [r[1] for r in q(path, f"PRAGMA table_info({K})")]:
        assert g["graphs"] == q(path, f"SELECT count(DISTINCT graphId) FROM {K} "
                                      "WHERE graphId IS NOT NULL")[0][0]
    else:
        assert g["graphs"] is None


@BOTH
def test_copies_have_direction_bytes_and_launch(path):
    tr = read(path)
    want = defaultdict(lambda: [0, 0])
    for kind, nbytes in q(path, "SELECT copyKind, bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY"):
        want[DIRECTION[kind]][0] += 1
        want[DIRECTION[kind]][1] += nbytes
    for (nbytes,) in q(path, "SELECT bytes FROM CUPTI_ACTIVITY_KIND_MEMSET"):
        want["memset"][0] += 1
        want["memset"][1] += nbytes
    got = defaultdict(lambda: [0, 0])
    for d, b in zip(tr.copies.strings("direction"), tr.copies.numpy("bytes").tolist()):
        got[d][0] += 1
        got[d][1] += b
    assert dict(got) == dict(want)
    assert (tr.copies.numpy("api_index") >= 0).all()
    peer = [i for i, d in enumerate(tr.copies.strings("direction")) if d == "PtoP"]
    assert len(peer) == 1
    src, dst = q(path, "SELECT srcDeviceId, dstDeviceId FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                       "WHERE copyKind = 10")[0]
    if "TARGET_INFO_CUDA_DEVICE" in tables(path):
        m = dict(q(path, "SELECT cudaId, gpuId FROM TARGET_INFO_CUDA_DEVICE"))
        src, dst = m[src], m[dst]
    assert (tr.copies.numpy("src_device")[peer[0]], tr.copies.numpy("dst_device")[peer[0]]) \
        == (src, dst)


@BOTH
def test_nvtx_marks_and_ranges_become_markers(path):
    tr = read(path)
    rows = q(path, "SELECT n.start, coalesce(n.[end], n.start), "
                   "coalesce(n.text, s.value), (n.globalTid & 16777215) FROM NVTX_EVENTS n "
                   "LEFT JOIN StringIds s ON s.id = n.textId "
                   "WHERE n.eventType = 34 OR (n.eventType IN (59, 60) AND n.[end] IS NOT NULL) "
                   "ORDER BY n.start, 2")
    m = tr.markers
    nv = [i for i, d in enumerate(m.strings("domain")) if d == "nvtx"]
    got = [(m.numpy("start")[i], m.numpy("end")[i], m.strings("name")[i], m.numpy("tid")[i])
           for i in nv]
    assert got == [tuple(r) for r in rows]
    depth = {m.strings("name")[i]: m.numpy("depth")[i] for i in nv}
    assert depth["train_step"] == 0 and depth["forward"] == depth["backward"] == 1
    unended = q(path, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60) "
                      "AND [end] IS NULL")[0][0]
    said = [w for w in tr.warnings if "NVTX ranges that never ended" in w]
    assert said == ([f"dropped {unended} NVTX ranges that never ended (still open when the "
                     "capture stopped)"] if unended else [])


SYNC_NAMES = {1: "Event Sync", 2: "Stream Wait Event", 3: "Stream Sync", 4: "Context Sync"}


@BOTH
def test_sync_records_are_gpu_side_markers_on_their_device_and_stream(path):
    tr = read(path)
    rows = q(path, f"SELECT k.start, k.[end], k.syncType, {expected_device(path)}, k.streamId, "
                   "k.correlationId FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION k "
                   "ORDER BY k.start")
    m = tr.markers
    sy = [i for i, d in enumerate(m.strings("domain")) if d == "cuda_sync"]
    raw_stream = dict(zip(tr.streams.numpy("stream").tolist(), tr.streams.strings("raw_id")))
    got = [(m.numpy("start")[i], m.numpy("end")[i], m.strings("name")[i],
            m.numpy("device")[i], int(raw_stream[int(m.numpy("stream")[i])])) for i in sy]
    assert got == [(s, e, SYNC_NAMES[t], d, st) for s, e, t, d, st, _c in rows]
    assert not tr.api.has("device")          # no API row is a sync record
    if "correlation_id" in SPECS["markers"].by_name:     # the integration branch's schema
        assert [m.numpy("correlation_id")[i] for i in sy] == [r[5] for r in rows]


@BOTH
def test_devices_streams_and_meta(path):
    tr = read(path)
    gpus = q(path, "SELECT id, name, smCount, totalMemory, uuid FROM TARGET_INFO_GPU ORDER BY id")
    d = tr.devices
    assert list(zip(d.numpy("index").tolist(), d.strings("name"),
                    d.numpy("compute_units").tolist(), d.numpy("memory_bytes").tolist(),
                    d.strings("raw_id"))) == gpus
    assert set(d.strings("vendor")) == {"NVIDIA"}
    streams = q(path, "SELECT count(*) FROM (SELECT DISTINCT globalPid, streamId FROM ("
                      f"SELECT globalPid, streamId FROM {K} UNION ALL SELECT globalPid, "
                      "streamId FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT globalPid, "
                      "streamId FROM CUPTI_ACTIVITY_KIND_MEMSET UNION ALL SELECT globalPid, "
                      "streamId FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION))")[0][0]
    assert len(tr.streams) == streams
    version = dict(q(path, "SELECT name, value FROM META_DATA_EXPORT"))
    assert tr.meta["tool_version"] == version["EXPORT_PRODUCT_VERSION"]
    assert tr.meta["pids"] == [r[0] for r in q(path, "SELECT pid FROM PROCESSES")]


def test_newer_export_maps_cuda_devices_through_target_info_cuda_device():
    """CUDA_VISIBLE_DEVICES=1,0 in the fixture: the process's CUDA device 0 is GPU 1."""
    tr = read(NEW)
    assert dict(q(NEW, "SELECT cudaId, gpuId FROM TARGET_INFO_CUDA_DEVICE")) == {0: 1, 1: 0}
    per_gpu = Counter(tr.kernels.numpy("device").tolist())
    want = Counter(dict(q(NEW, f"SELECT c.gpuId, count(*) FROM {K} k JOIN "
                               "TARGET_INFO_CUDA_DEVICE c ON c.cudaId = k.deviceId "
                               "GROUP BY c.gpuId")))
    assert per_gpu == want
    assert set(tr.devices.strings("arch")) == {"sm_90"}


def test_unsorted_rows_are_read_in_time_order():
    raw = [r[0] for r in q(NEW, f"SELECT start FROM {K}")]
    assert raw != sorted(raw)                           # the fixture is shuffled
    tr = read(NEW)
    for t in (tr.kernels, tr.api, tr.copies, tr.markers):
        s = t.numpy("start").tolist()
        assert s == sorted(s)


# --------------------------------------------------------------------------- drift, bad input


def _copy(tmp_path: Path, src: Path = NEW) -> Path:
    dst = tmp_path / "export.sqlite"
    shutil.copyfile(src, dst)
    return dst


def test_columns_are_chosen_by_presence(tmp_path):
    """A kernel table without demangledName, graph columns or geometry still reads:
    names fall back to shortName, the rest is null."""
    p = _copy(tmp_path)
    with sqlite3.connect(p) as c:
        for col in ("demangledName", "graphId", "graphNodeId", "gridX", "registersPerThread"):
            c.execute(f"ALTER TABLE {K} DROP COLUMN {col}")
    tr = read(p)
    want = Counter(r[0] for r in q(p, f"SELECT s.value FROM {K} k JOIN StringIds s "
                                      "ON s.id = k.shortName"))
    assert Counter(tr.kernels.strings("name")) == want
    assert not tr.kernels.has("grid_x") and not tr.kernels.has("registers")
    assert "cuda_graphs" not in tr.meta


def test_missing_string_ids_are_named_and_counted(tmp_path):
    p = _copy(tmp_path, OLD)
    sid = q(p, "SELECT id FROM StringIds WHERE value = 'elementwise_add(float*, float const*, "
               "int)'")[0][0]
    with sqlite3.connect(p) as c:
        c.execute("DELETE FROM StringIds WHERE id = ?", (sid,))
    n = q(p, f"SELECT count(*) FROM {K} WHERE demangledName = ?", sid)[0][0]
    tr = read(p)
    assert Counter(tr.kernels.strings("name"))[f"<string id {sid}>"] == n
    assert any(w.startswith(f"{n} kernels name a string id") for w in tr.warnings)


def test_a_value_of_the_wrong_type_is_one_sentence_naming_the_place(tmp_path):
    p = _copy(tmp_path)
    with sqlite3.connect(p) as c:
        c.execute(f"UPDATE {K} SET correlationId = 'abc' WHERE rowid = 3")
    with pytest.raises(TraceFormatError) as exc:
        open_trace(p)
    msg = str(exc.value)
    assert str(p) in msg and f"table {K}, column correlationId" in msg and "'abc'" in msg


def test_btree_damage_is_refused_with_the_quick_check_message(tmp_path):
    """The kernel table's root page claims more cells than it holds: rows would vanish
    silently, so the file is refused with quick_check's first message."""
    p = _copy(tmp_path)
    root = q(p, "SELECT rootpage FROM sqlite_master WHERE name = ?", K)[0][0]
    size = q(p, "PRAGMA page_size")[0][0]
    raw = bytearray(p.read_bytes())
    at = (root - 1) * size + (100 if root == 1 else 0)
    raw[at + 3: at + 5] = b"\x0f\xff"               # number of cells on the page
    p.write_bytes(bytes(raw))
    con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
    first = [ln for ln in con.execute("PRAGMA quick_check(1)").fetchone()[0].splitlines()
             if ln.strip() and not ln.startswith("***")][0]
    con.close()
    with pytest.raises(TraceFormatError) as exc:
        open_trace(p)
    msg = str(exc.value)
    assert msg.startswith(f"{p} at PRAGMA quick_check: expected an intact SQLite database")
    assert first in msg and "\n" not in msg


def test_a_sqlite_file_without_nsys_tables_is_refused(tmp_path):
    p = tmp_path / "other.sqlite"
    with sqlite3.connect(p) as c:
        c.execute("CREATE TABLE t (a INT)")
    assert READER.sniff(p) == 0
    with pytest.raises(TraceFormatError) as exc:
        READER.read(p, lambda f: None, lambda: False)
    assert "Nsight Systems export" in str(exc.value) and str(p) in str(exc.value)


# --------------------------------------------------------------------------- sniffing


OTHER_SQLITE = [DATA / "rocpd" / "4242_results.db",
                *sorted((SAMPLES / "legacy-rocprof").glob("*/results.db"))]


@pytest.mark.parametrize("other", OTHER_SQLITE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_nsys_and_the_other_sqlite_readers_do_not_take_each_others_files(other):
    if not other.exists():
        pytest.skip(f"{other} missing")
    assert READER.sniff(other) == 0
    assert find_reader(other).name != "nsys"
    for path in (OLD, NEW):
        for name in ("rocpd", "legacy-rocprof"):
            assert get_reader(name).sniff(path) == 0
        assert find_reader(path).name == "nsys"


def test_listed_with_its_file_pattern():
    proc = subprocess.run([sys.executable, "-m", "hipscope", "--list-readers"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("nsys "))
    assert "Nsight Systems" in line and "*.sqlite" in line


# --------------------------------------------------------------------------- CLI


@BOTH
def test_report_json_gives_the_figures_plain_sql_gives(path):
    proc = subprocess.run([sys.executable, "-m", "hipscope", "report", "--json", str(path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert rep["format"] == "nsys"
    assert rep["kernel_count"] == q(path, f"SELECT count(*) FROM {K}")[0][0]
    totals = dict(q(path, f"SELECT s.value, sum(k.[end] - k.start) FROM {K} k JOIN StringIds "
                          "s ON s.id = k.demangledName GROUP BY s.value"))
    assert {t["name"]: t["total_ns"] for t in rep["top_kernels"]} == totals
    copies = {c["direction"]: (c["count"], c["bytes"]) for c in rep["copies"]}
    want = {DIRECTION[k]: (n, b) for k, n, b in q(
        path, "SELECT copyKind, count(*), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY "
              "GROUP BY copyKind")}
    want["memset"] = q(path, "SELECT count(*), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMSET")[0]
    assert copies == want
    graph = q(path, f"SELECT count(*) FROM {K} k JOIN CUPTI_ACTIVITY_KIND_RUNTIME a "
                    "ON a.correlationId = k.correlationId JOIN StringIds s ON s.id = a.nameId "
                    "WHERE s.value = 'cudaGraphLaunch'")[0][0]
    assert rep["queue_delay_ns"]["graph_launch_kernels"] == graph
    names = dict(q(path, "SELECT id, name FROM TARGET_INFO_GPU"))
    assert {d["index"]: d["name"] for d in rep["devices"]} == names
    start, end = q(path, f"SELECT min(start), max([end]) FROM (SELECT start, [end] FROM {K} "
                         "UNION ALL SELECT start, [end] FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                         "UNION ALL SELECT start, [end] FROM NVTX_EVENTS WHERE [end] > start)")[0]
    assert rep["span_ns"] == end - start


def test_rows_that_end_before_they_start_are_dropped_and_counted(tmp_path):
    """read() alone gives a valid trace (the fuzz tests call it without open_trace)."""
    p = _copy(tmp_path)
    with sqlite3.connect(p) as c:
        c.execute(f"UPDATE {K} SET [end] = start - 5 WHERE rowid IN (2, 7)")
    n = q(p, f"SELECT count(*) FROM {K}")[0][0]
    for tr in (validate(READER.read(p, lambda f: None, lambda: False)), read(p)):
        assert len(tr.kernels) == n - 2
        assert "dropped 2 kernels that end before they start" in tr.warnings


GRAPH_LEVEL = DATA / "nsys" / "nsys_2025_graph_level.sqlite"
GT = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"


def test_graphs_traced_as_a_whole_read_as_one_row_per_execution():
    """--cuda-graph-trace=graph (nsys' default) records no kernels of a graph replay:
    each execution becomes one kernel row, linked to its graph launch, and is said so."""
    tr = read(GRAPH_LEVEL)
    n_k = q(GRAPH_LEVEL, f"SELECT count(*) FROM {K}")[0][0]
    rows = q(GRAPH_LEVEL, f"SELECT g.start, g.[end], 'CUDA graph ' || g.graphId, s.value "
                          f"FROM {GT} g JOIN CUPTI_ACTIVITY_KIND_RUNTIME a "
                          "ON a.correlationId = g.correlationId JOIN StringIds s "
                          "ON s.id = a.nameId ORDER BY g.start")
    assert rows and len(tr.kernels) == n_k + len(rows)
    k, api_names = tr.kernels, tr.api.strings("name")
    got = [(s, e, n, api_names[i]) for s, e, n, i in zip(
        k.numpy("start").tolist(), k.numpy("end").tolist(), k.strings("name"),
        k.numpy("api_index").tolist()) if n.startswith("CUDA graph")]
    assert got == [tuple(r) for r in rows]
    assert len(queue_delays(tr).graph_rows) == len(rows)
    assert tr.meta["cuda_graphs"]["graph_level_executions"] == len(rows)
    assert (f"{len(rows)} CUDA graph executions were traced as a whole "
            "(--cuda-graph-trace=graph): each is one kernel row spanning its graph, without "
            "the graph's kernels; trace with --cuda-graph-trace=node to see them"
            ) in tr.warnings


def test_report_json_counts_graph_executions_as_gpu_work():
    proc = subprocess.run([sys.executable, "-m", "hipscope", "report", "--json",
                           str(GRAPH_LEVEL)], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    n = q(GRAPH_LEVEL, f"SELECT (SELECT count(*) FROM {K}) + (SELECT count(*) FROM {GT})")[0][0]
    assert rep["kernel_count"] == n
    totals = dict(q(GRAPH_LEVEL, f"SELECT 'CUDA graph ' || graphId, sum([end] - start) FROM {GT} "
                                 "GROUP BY graphId"))
    assert {t["name"]: t["total_ns"] for t in rep["top_kernels"]
            if t["name"].startswith("CUDA graph")} == totals
    assert rep["queue_delay_ns"]["graph_launch_kernels"] == q(
        GRAPH_LEVEL, f"SELECT count(*) FROM {GT}")[0][0]


def test_correlation_ids_link_within_their_process(tmp_path):
    """Correlation ids are per process: a second process reusing every id (called
    earlier) must not take the first one's kernels."""
    p = _copy(tmp_path)
    other = (1 << 56) | (3 << 48) | (6000 << 24) | 6000
    with sqlite3.connect(p) as c:
        c.execute("INSERT INTO StringIds VALUES (99999, 'otherProcessCall')")
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT start - 500, [end] - 500, "
                  "eventClass, ?, correlationId, 99999, returnValue, callchainId "
                  "FROM CUPTI_ACTIVITY_KIND_RUNTIME", (other,))
    tr = read(p)
    want = dict(q(p, "SELECT correlationId, (globalTid >> 24) & 16777215 FROM "
                     "CUPTI_ACTIVITY_KIND_RUNTIME WHERE nameId != 99999"))
    names, pids = tr.api.strings("name"), tr.api.numpy("pid", fill=-1).tolist()
    for corr, i in zip(tr.kernels.numpy("correlation_id").tolist(),
                       tr.kernels.numpy("api_index").tolist()):
        if corr in want:
            assert names[i] != "otherProcessCall" and pids[i] == want[corr]
    assert sorted(tr.meta["pids"]) == [5150, 6000]


def test_an_export_without_gpu_activity_reads_its_nvtx_ranges(tmp_path):
    p = _copy(tmp_path, OLD)
    with sqlite3.connect(p) as c:
        for t in [t for t in tables(p) if t.startswith("CUPTI_ACTIVITY_KIND_")]:
            c.execute(f"DROP TABLE {t}")
    assert READER.sniff(p) > 0 and find_reader(p).name == "nsys"
    tr = read(p)
    assert len(tr.kernels) == len(tr.api) == len(tr.copies) == 0
    assert len(tr.markers) == q(p, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 34 "
                                   "OR (eventType IN (59, 60) AND [end] IS NOT NULL)")[0][0]
