"""rocpd schema drift: one database per released schema version (3.0.0 ... 3.0.5, DDL as
published by rocprofiler-sdk, built by tests/data/fixtures/rocpd_versions.py) reads with
the figures plain sqlite3 gives over it; a database declaring a newer version gets one
warning naming both versions. Expected figures come from sqlite3, never the reader."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hipscope.analysis.graphs import graph_replay_gaps
from hipscope.model.diagnostics import diagnostics
from hipscope.parsers import get_reader
from hipscope.parsers._validate import validate
from tests.data.fixtures import rocpd_versions as rv

READER = get_reader("rocpd")


def _read(path: Path):
    return READER.read(Path(path), lambda f: None, lambda: False)


def _sql(path: Path, query: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def _version_warnings(tr) -> list[str]:
    return [w for w in tr.meta.get("warnings", []) if "schema" in w]


@pytest.mark.parametrize("version", rv.VERSIONS)
def test_each_released_version_reads_right(tmp_path, version):
    db = rv.build(tmp_path / f"{version}_results.db", version)
    tr = _read(db)
    k = tr.kernels.to_pandas().sort_values("dispatch_id")
    raw = _sql(db, 'SELECT K.dispatch_id, S.display_name, K."end" - K.start '
                   "FROM rocpd_kernel_dispatch K JOIN rocpd_info_kernel_symbol S "
                   "ON S.id = K.kernel_id ORDER BY K.dispatch_id")
    assert list(k["dispatch_id"]) == [r[0] for r in raw]
    assert list(k["name"]) == [r[1] for r in raw]
    assert list(k["end"] - k["start"]) == [r[2] for r in raw]
    # a NIC agent (3.0.1 on) is no GPU device
    assert len(tr.devices) == _sql(db, "SELECT count(*) FROM rocpd_info_agent "
                                       "WHERE type = 'GPU'")[0][0] == 1
    (n_copies, copy_bytes), = _sql(db, "SELECT count(*), sum(size) FROM rocpd_memory_copy")
    assert len(tr.copies) == n_copies and int(tr.copies.to_pandas()["bytes"].sum()) == copy_bytes
    assert len(tr.api) == _sql(db, "SELECT count(*) FROM rocpd_region")[0][0]
    # kernels replayed by hipGraphLaunch link to that one call
    api = tr.api.to_pandas()
    linked = [api["name"][int(i)] for i in k["api_index"]]
    assert linked == ["hipLaunchKernel", "hipGraphLaunch", "hipGraphLaunch"]
    # per-dispatch counters only: SPM samples (3.0.3, sample_id set) are not dispatch counters
    has_sample = "sample_id" in [r[1] for r in _sql(db, "PRAGMA table_info(rocpd_pmc_event)")]
    where = " WHERE sample_id IS NULL" if has_sample else ""
    (n_ctr, ctr_sum), = _sql(db, f"SELECT count(*), sum(value) FROM rocpd_pmc_event{where}")
    ctr = tr.counters.to_pandas()
    assert len(ctr) == n_ctr and float(ctr["value"].sum()) == ctr_sum
    assert tr.meta["rocpd_schema_version"] == version
    assert _version_warnings(tr) == []
    validate(tr)


def test_spm_rows_exist_in_303_fixture(tmp_path):
    """The 3.0.3 fixture does hold SPM rows, so the counter check above can fail."""
    db = rv.build(tmp_path / "spm_results.db", "3.0.3")
    assert _sql(db, "SELECT count(*) FROM rocpd_pmc_event WHERE sample_id IS NOT NULL")[0][0] > 0
    assert _sql(db, "SELECT count(*) FROM rocpd_graph_launch")[0][0] == 1


def test_rocm70_single_digit_tag_is_known(tmp_path):
    db = rv.build(tmp_path / "r70_results.db", "3.0.0", legacy_tag=True)
    assert _sql(db, "SELECT value FROM rocpd_metadata WHERE tag = 'schema_version'") == [("3",)]
    tr = _read(db)
    assert tr.meta["rocpd_schema_version"] == "3.0.0" and _version_warnings(tr) == []


@pytest.mark.parametrize("newer", ["3.0.6", "3.1.0", "4.1.0"])
def test_newer_version_warns_once_naming_both(tmp_path, newer):
    db = rv.build(tmp_path / f"{newer}_results.db", newer, ddl="3.0.5")
    tr = _read(db)
    warns = _version_warnings(tr)
    assert len(warns) == 1
    assert newer in warns[0] and "3.0.5" in warns[0] and str(db) in warns[0]
    assert [d["code"] for d in diagnostics(tr) if d["message"] == warns[0]] == [
        "rocpd.schema_newer"]
    # still read: the same kernels as sqlite3 counts
    assert len(tr.kernels) == _sql(db, "SELECT count(*) FROM rocpd_kernel_dispatch")[0][0]


def test_newer_version_from_split_tags(tmp_path):
    """A database that writes "3" plus major/minor/patch tags of a newer version."""
    db = rv.build(tmp_path / "split_results.db", "3.0.9", ddl="3.0.5")
    conn = sqlite3.connect(db)
    conn.execute(f"UPDATE rocpd_metadata{rv.UUID} SET value = '3' WHERE tag = 'schema_version'")
    conn.commit()
    conn.close()
    warns = _version_warnings(_read(db))
    assert len(warns) == 1 and "3.0.9" in warns[0]


def test_unreadable_version_warns(tmp_path):
    db = rv.build(tmp_path / "odd_results.db", "3.0.3")
    conn = sqlite3.connect(db)
    conn.execute(f"UPDATE rocpd_metadata{rv.UUID} SET value = 'next' "
                 "WHERE tag = 'schema_version'")
    conn.commit()
    conn.close()
    warns = _version_warnings(_read(db))
    assert len(warns) == 1 and "'next'" in warns[0]


@pytest.mark.parametrize("version", ["3.0.2", "3.0.3"])
def test_graph_launches_from_302(tmp_path, version):
    """rocpd_graph_launch and the dispatches' graph_exec_id: per graph exec, the kernels
    its launches dispatched and those recorded (one dropped here, as a lossy replay)."""
    db = rv.build(tmp_path / f"g{version}_results.db", version)
    conn = sqlite3.connect(db)
    conn.execute(f"DELETE FROM rocpd_kernel_dispatch{rv.UUID} WHERE dispatch_id = 3")
    conn.commit()
    conn.close()
    (gexec, launches, launched), = _sql(db, "SELECT graph_exec_id, count(*), "
                                            "sum(kernel_dispatch_count) FROM rocpd_graph_launch "
                                            "GROUP BY graph_exec_id")
    (recorded,), = _sql(db, "SELECT count(*) FROM rocpd_kernel_dispatch "
                            f"WHERE graph_exec_id = {gexec}")
    assert (launched, recorded) == (2, 1)
    tr = _read(db)
    assert tr.meta["rocpd_graph_launches"] == [
        {"graph_exec_id": gexec, "launches": launches, "kernels_launched": launched,
         "kernels_recorded": recorded}]


@pytest.mark.parametrize("version", ["3.0.0", "3.0.1"])
def test_no_graph_summary_before_302(tmp_path, version):
    tr = _read(rv.build(tmp_path / f"n{version}_results.db", version))
    assert "rocpd_graph_launches" not in tr.meta


def test_unreadable_graph_launch_table_warns_and_reads_rest(tmp_path):
    db = rv.build(tmp_path / "badgraph_results.db", "3.0.2")
    conn = sqlite3.connect(db)
    conn.executescript("DROP VIEW rocpd_graph_launch; CREATE VIEW rocpd_graph_launch AS "
                       "SELECT 1 AS guid;")  # no graph_exec_id: the query fails
    conn.close()
    tr = _read(db)
    assert "rocpd_graph_launches" not in tr.meta
    warns = [w for w in tr.meta.get("warnings", []) if "graph launches" in w]
    assert len(warns) == 1 and "rocpd_graph_launch" in warns[0]
    assert len(tr.kernels) == _sql(db, "SELECT count(*) FROM rocpd_kernel_dispatch")[0][0]


@pytest.mark.parametrize("version", ["3.0.4", "3.0.5"])
def test_hip_event_records_are_gpu_side_waits_on_their_streams(tmp_path, version):
    """rocpd_hip_event (3.0.4 on): each barrier is a GPU-side ``hip_event`` marker on its
    stream, linked to its runtime call; a wait names the record it waits on (same
    hipEvent_t handle, issued before it), as Kineto's cross-stream waits do."""
    db = rv.build(tmp_path / f"ev{version}_results.db", version)
    raw = _sql(db, "SELECT S.string, H.stream_id, H.start, H.\"end\", E.stack_id, "
                   "H.hip_event_handle, H.queue_id, H.source_queue_id FROM rocpd_hip_event H "
                   "JOIN rocpd_string S ON S.id = H.name_id "
                   "JOIN rocpd_event E ON E.id = H.event_id ORDER BY H.id")
    assert len(raw) == 2
    tr = _read(db)
    m = tr.markers.to_pandas()
    ev = m[m["domain"] == "hip_event"].reset_index(drop=True)
    assert list(ev["name"]) == [r[0] for r in raw]
    assert list(ev["stream"]) == [r[1] for r in raw]
    assert list(ev["start"]) == [r[2] for r in raw] and list(ev["end"]) == [r[3] for r in raw]
    assert list(ev["correlation_id"]) == [r[4] for r in raw]
    assert ev["device"].notna().all()
    # the wait: on another queue than its source, waiting on the record of its handle
    (rec,) = [r for r in raw if "RECORD" in r[0]]
    (wait,) = [r for r in raw if "WAIT" in r[0]]
    assert wait[5] == rec[5] and wait[6] != wait[7] == rec[6]
    w = ev[ev["name"] == wait[0]].iloc[0]
    assert int(w["wait_on_correlation_id"]) == rec[4] and w["stream"] != rec[1]
    assert ev[ev["name"] == rec[0]]["wait_on_correlation_id"].isna().all()
    # each links to its runtime call (hipEventRecord / hipStreamWaitEvent)
    api = tr.api.to_pandas().set_index("correlation_id")
    assert [api.loc[c, "name"] for c in ev["correlation_id"]] == [
        "hipEventRecord", "hipStreamWaitEvent"]
    validate(tr)


@pytest.mark.parametrize("version", ["3.0.3", "3.0.5"])
def test_spm_counters_are_samples_over_time(tmp_path, version):
    """SPM records (3.0.3 on; shader_array/wgp from 3.0.5) are per-instance values over
    time: one series per counter, each point the sum over the instances sampled then."""
    db = rv.build(tmp_path / f"spm{version}_results.db", version)
    raw = _sql(db, "SELECT I.name, S.timestamp, sum(PE.value) FROM rocpd_pmc_event PE "
                   "JOIN rocpd_sample S ON S.id = PE.sample_id "
                   "JOIN rocpd_info_pmc I ON I.id = PE.pmc_id "
                   "WHERE PE.sample_id IS NOT NULL GROUP BY I.name, S.timestamp "
                   "ORDER BY S.timestamp")
    assert raw
    tr = _read(db)
    s = tr.samples.to_pandas().sort_values("time")
    assert list(zip(s["series"], s["time"], s["value"])) == [
        (f"SPM {n}", t, v) for n, t, v in raw]
    cols = [r[1] for r in _sql(db, "PRAGMA table_info(rocpd_pmc_event)")]
    dims = [d for d in ("shader_array", "wgp") if d in cols]
    assert dims == (["shader_array", "wgp"] if version == "3.0.5" else [])
    got = tr.meta["rocpd_spm"][raw[0][0]]["dimensions"]
    for d in ("shader_engine", *dims):
        (n,), = _sql(db, f"SELECT count(DISTINCT {d}) FROM rocpd_pmc_event "
                         "WHERE sample_id IS NOT NULL")
        assert got[d] == n
    validate(tr)


@pytest.mark.parametrize("version", ["3.0.2", "3.0.5"])
def test_graph_replay_short_of_its_nodes_is_warned_and_marked_unknown(tmp_path, version):
    """A launch whose graph has 20 kernel nodes (rocpd_graph_launch.kernel_dispatch_count)
    but carries 2: warned with the counts, and its window is incomplete (unknown, not
    idle), which the launch history alone (2 of 2 every time) cannot see."""
    db = rv.build(tmp_path / f"short{version}_results.db", version)
    conn = sqlite3.connect(db)
    conn.execute(f"UPDATE rocpd_graph_launch{rv.UUID} SET kernel_dispatch_count = 20")
    conn.commit()
    conn.close()
    (launches, nodes), = _sql(db, "SELECT count(*), sum(kernel_dispatch_count) "
                                  "FROM rocpd_graph_launch")
    (carried,), = _sql(db, "SELECT count(*) FROM rocpd_kernel_dispatch K JOIN rocpd_event E "
                           "ON E.id = K.event_id WHERE E.stack_id IN (SELECT E2.stack_id "
                           "FROM rocpd_graph_launch G JOIN rocpd_event E2 ON E2.id = G.event_id)")
    assert (launches, nodes, carried) == (1, 20, 2)
    tr = _read(db)
    d = [x for x in diagnostics(tr) if x["code"] == "rocpd.graph_replay_short"]
    assert len(d) == 1
    assert f"{launches:,} of {launches:,} graph launches carry {carried:,} kernels" in \
        d[0]["message"] and f"have {nodes:,} kernel nodes" in d[0]["message"]
    gaps = graph_replay_gaps(tr)
    assert gaps.count == launches and list(gaps.expected) == [nodes]
    assert list(gaps.found) == [carried]


def test_complete_graph_replay_is_not_warned(tmp_path):
    tr = _read(rv.build(tmp_path / "full_results.db", "3.0.5"))
    assert tr.meta["graph_launch_kernels"][0][2] == 2
    assert not [x for x in diagnostics(tr) if x["code"] == "rocpd.graph_replay_short"]
    assert graph_replay_gaps(tr).count == 0


@pytest.mark.parametrize(("table", "sql", "code"), [
    ("rocpd_hip_event", "UPDATE {t} SET hip_event_handle = 'abc'", "rocpd.hip_events_unread"),
    ("rocpd_hip_event", "UPDATE {t} SET start = 'x'", "rocpd.hip_events_unread"),
    ("rocpd_pmc_event", "UPDATE {t} SET wgp = 'q' WHERE sample_id IS NOT NULL",
     "rocpd.spm_unread"),
])
def test_unreadable_hip_events_or_spm_warn_and_the_rest_reads(tmp_path, table, sql, code):
    """Text where the schema has integers, in what 3.0.4/3.0.5 add: that part is left out
    with one coded warning naming the table; kernels and the rest read as before."""
    db = rv.build(tmp_path / "bad_results.db", "3.0.5")
    conn = sqlite3.connect(db)
    conn.execute(sql.format(t=f"{table}{rv.UUID}"))
    conn.commit()
    conn.close()
    tr = _read(db)
    (d,) = [x for x in diagnostics(tr) if x["code"] == code]
    assert table in d["message"] and str(db) in d["message"]
    assert len(tr.kernels) == _sql(db, "SELECT count(*) FROM rocpd_kernel_dispatch")[0][0]
    validate(tr)


@pytest.mark.parametrize("version", ["3.0.2", "3.0.5"])
@pytest.mark.parametrize("physical", ["1", "0"])
def test_kernels_carry_their_graph_exec_and_node_ids(tmp_path, monkeypatch, version,
                                                     physical):
    """graph_exec_id / graph_node_id of each dispatch (3.0.2 on), null for kernels not
    replayed from a graph (the columns' 0), read alike from the physical tables and the
    views."""
    monkeypatch.setenv("HIPSCOPE_ROCPD_PHYSICAL", physical)
    db = rv.build(tmp_path / f"gid{version}_results.db", version)
    raw = _sql(db, "SELECT dispatch_id, graph_exec_id, graph_node_id "
                   "FROM rocpd_kernel_dispatch ORDER BY dispatch_id")
    assert any(r[2] for r in raw) and not all(r[2] for r in raw)
    k = _read(db).kernels.to_pandas().sort_values("dispatch_id")
    got = [(d, None if pd.isna(e) else int(e), None if pd.isna(n) else int(n))
           for d, e, n in zip(k["dispatch_id"], k["graph_exec_id"], k["graph_node_id"])]
    assert got == [(d, e or None, n or None) for d, e, n in raw]


def test_no_graph_ids_before_302(tmp_path):
    k = _read(rv.build(tmp_path / "ng_results.db", "3.0.1")).kernels
    assert not k.has("graph_exec_id") and not k.has("graph_node_id")


def test_waits_link_to_the_latest_earlier_record_of_their_handle():
    """Many records and waits over a few handles: each wait names the record of its own
    handle issued last before it (checked against a plain loop), none for a wait issued
    before any record of its handle."""
    from hipscope.parsers.rocpd.hip_events import _waits_on

    rng = np.random.default_rng(7)
    n = 4000
    guid, handle = rng.integers(0, 2, n), rng.integers(0, 9, n)
    corr = rng.permutation(n).astype(np.int64) + 1
    wait = rng.random(n) < 0.5
    got = _waits_on(guid, handle, corr, np.zeros(n, np.int64), wait)
    for i in np.flatnonzero(wait)[:400].tolist():
        mine = [j for j in range(n) if not wait[j] and guid[j] == guid[i]
                and handle[j] == handle[i] and corr[j] <= corr[i]]
        assert got[i] == (corr[max(mine, key=lambda j: corr[j])] if mine else -1)
    assert (got[~wait] == -1).all() and (got[wait] == -1).any()


def test_report_marks_the_short_replay_window_unknown(tmp_path, capsys):
    """``report --json``: the graph replay short of its nodes is reported as incomplete
    (its window unknown, not idle), beside the reader's own coded warning."""
    from hipscope.cli.main import main

    db = rv.build(tmp_path / "rep_results.db", "3.0.5")
    conn = sqlite3.connect(db)
    conn.execute(f"UPDATE rocpd_graph_launch{rv.UUID} SET kernel_dispatch_count = 20")
    conn.commit()
    conn.close()
    assert main(["report", "--json", "--no-cache", str(db)]) == 0
    rep = json.loads(capsys.readouterr().out)
    codes = [d["code"] for d in rep["diagnostics"]]
    assert "rocpd.graph_replay_short" in codes and "analysis.incomplete_graph_replay" in codes
