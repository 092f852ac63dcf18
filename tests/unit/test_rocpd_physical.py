"""rocpd read from its physical tables (parsers/rocpd/physical.py) against the view path:
equal traces (every table, column and type, the metadata and warnings) on every rocpd
fixture, the damaged variants of the dangling-id tests included; the fallback to the
views when the tables are not as expected, and ``HIPSCOPE_ROCPD_PHYSICAL=0``."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from hipscope.parsers.rocpd.db import Db
from hipscope.parsers.rocpd.tables import read_db
from tests.data.fixtures import rocpd_versions as rv
from tests.unit.test_rocpd import DBS, make_rocpd, needs_fixtures

TABLES = ("kernels", "api", "copies", "markers", "counters", "devices", "queues", "streams")


def _read(path: Path, monkeypatch, physical: bool):
    monkeypatch.setenv("HIPSCOPE_ROCPD_PHYSICAL", "1" if physical else "0")
    db = Db(path)
    try:
        return read_db("rocpd", db, lambda f: None, lambda: False), db.read_path
    finally:
        db.close()


def _assert_same(path: Path, monkeypatch, expect_physical: bool = True) -> None:
    fast, how = _read(path, monkeypatch, True)
    slow, how_slow = _read(path, monkeypatch, False)
    assert how_slow == "views"
    assert how == ("physical" if expect_physical else "views")
    for name in TABLES:
        a, b = getattr(fast, name).data, getattr(slow, name).data
        assert a.schema == b.schema, name
        assert a.equals(b), name
    assert fast.meta == slow.meta


def _physical_table(path: Path, prefix: str) -> str:
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name "
                           "LIKE ?", (prefix + "%",)).fetchone()[0]
    finally:
        con.close()


def _exec(path: Path, *stmts: str) -> None:
    con = sqlite3.connect(path)
    try:
        for s in stmts:
            con.execute(s)
        con.commit()
    finally:
        con.close()


@needs_fixtures
@pytest.mark.parametrize("adbc", ["1", "0"])
@pytest.mark.parametrize("db_path", DBS, ids=lambda p: p.name)
def test_fixture_databases_read_the_same_both_ways(db_path, monkeypatch, adbc):
    monkeypatch.setenv("HIPSCOPE_ROCPD_ADBC", adbc)  # ADBC or sqlite3 fetches
    _assert_same(db_path, monkeypatch)


@pytest.mark.parametrize("version", rv.VERSIONS)
def test_each_schema_version_reads_the_same_both_ways(tmp_path, monkeypatch, version):
    p = rv.build(tmp_path / "77_results.db", version)
    _assert_same(p, monkeypatch)


def test_mini_database_reads_the_same_both_ways(tmp_path, monkeypatch):
    p = tmp_path / "1001_results.db"
    make_rocpd(p, 1001, "0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", 3_000_000_000_000)
    _assert_same(p, monkeypatch)


# ids that point nowhere: the views' inner joins drop the row (kernels are kept with a
# warning, regions and copies warned about); a category that points nowhere gives NULL
_DANGLING = {
    "kernel_symbol": ("rocpd_kernel_dispatch_", "kernel_id = 999999"),
    "kernel_agent": ("rocpd_kernel_dispatch_", "agent_id = 999999"),
    "kernel_thread": ("rocpd_kernel_dispatch_", "tid = 999999"),
    "kernel_event": ("rocpd_kernel_dispatch_", "event_id = 999999"),
    "kernel_region_name": ("rocpd_kernel_dispatch_", "region_name_id = 999999"),
    "region_event": ("rocpd_region_", "event_id = 999999"),
    "region_name": ("rocpd_region_", "name_id = 999999"),
    "region_process": ("rocpd_region_", "pid = 999999"),
    "event_category": ("rocpd_event_", "category_id = 999999"),
    "symbol_without_name": ("rocpd_info_kernel_symbol_", "display_name = NULL"),
    "string_text": ("rocpd_string_", "string = string || ' (renamed)'"),
}


@needs_fixtures
@pytest.mark.parametrize("case", sorted(_DANGLING))
def test_dangling_ids_read_the_same_both_ways(tmp_path, monkeypatch, case):
    db = tmp_path / "4242_results.db"
    shutil.copy(DBS[0], db)
    prefix, change = _DANGLING[case]
    t = _physical_table(db, prefix)
    _exec(db, f'UPDATE "{t}" SET {change} WHERE id IN (SELECT min(id) FROM "{t}" '
              f'UNION SELECT max(id) FROM "{t}")')
    _assert_same(db, monkeypatch)


@needs_fixtures
def test_roctx_messages_read_the_same_both_ways(tmp_path, monkeypatch):
    db = tmp_path / "4242_results.db"
    shutil.copy(DBS[0], db)
    ev = _physical_table(db, "rocpd_event_")
    _exec(db, f"""UPDATE "{ev}" SET extdata = json_object('message', 'step ' || id)
                  WHERE id IN (SELECT event_id FROM regions WHERE category LIKE 'MARKER%')""")
    fast, how = _read(db, monkeypatch, True)
    assert how == "physical"
    assert any(n.startswith("step ") for n in fast.markers.strings("name"))
    _assert_same(db, monkeypatch)


@needs_fixtures
def test_a_second_guid_in_a_big_table_falls_back_to_the_views(tmp_path, monkeypatch):
    db = tmp_path / "4242_results.db"
    shutil.copy(DBS[0], db)
    kd = _physical_table(db, "rocpd_kernel_dispatch_")
    _exec(db, f"""UPDATE "{kd}" SET guid = 'another-run'
                  WHERE id = (SELECT min(id) FROM "{kd}")""")
    _assert_same(db, monkeypatch, expect_physical=False)


@needs_fixtures
def test_a_view_that_is_not_a_plain_select_falls_back_to_the_views(tmp_path, monkeypatch):
    db = tmp_path / "4242_results.db"
    shutil.copy(DBS[0], db)
    rg = _physical_table(db, "rocpd_region_")
    _exec(db, "DROP VIEW rocpd_region",
          f'CREATE VIEW rocpd_region AS SELECT * FROM "{rg}" WHERE start > 0')
    _assert_same(db, monkeypatch, expect_physical=False)


def _dispatches(path: Path) -> int:
    con = sqlite3.connect(path)
    try:
        t = _physical_table(path, "rocpd_kernel_dispatch_")
        return con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]
    finally:
        con.close()


@needs_fixtures
@pytest.mark.parametrize("rows", [1, 4, 40])
def test_kernels_read_in_row_chunks_equal_the_views(monkeypatch, rows):
    """The dispatches are read and joined ``rows`` at a time (the 5M memory budget)."""
    monkeypatch.setenv("HIPSCOPE_ROCPD_CHUNK_ROWS", str(rows))
    monkeypatch.setenv("HIPSCOPE_ROCPD_PHYSICAL", "1")
    db = Db(DBS[0])
    try:
        read_db("rocpd", db, lambda f: None, lambda: False)
        assert db.read_path == "physical"
        assert db.kernel_chunks == -(-_dispatches(DBS[0]) // rows) > 1
    finally:
        db.close()
    _assert_same(DBS[0], monkeypatch)


@needs_fixtures
@pytest.mark.parametrize("case", ["kernel_symbol", "kernel_agent", "kernel_event"])
def test_dangling_ids_in_a_later_chunk_read_the_same_both_ways(tmp_path, monkeypatch, case):
    """Chunks already read are dropped and the kernels read in one piece."""
    monkeypatch.setenv("HIPSCOPE_ROCPD_CHUNK_ROWS", "4")
    db = tmp_path / "4242_results.db"
    shutil.copy(DBS[0], db)
    prefix, change = _DANGLING[case]
    t = _physical_table(db, prefix)
    _exec(db, f'UPDATE "{t}" SET {change} WHERE id = (SELECT max(id) FROM "{t}")')
    _assert_same(db, monkeypatch)


@needs_fixtures
def test_a_second_guid_in_a_later_chunk_falls_back_to_the_views(tmp_path, monkeypatch):
    monkeypatch.setenv("HIPSCOPE_ROCPD_CHUNK_ROWS", "4")
    db = tmp_path / "4242_results.db"
    shutil.copy(DBS[0], db)
    kd = _physical_table(db, "rocpd_kernel_dispatch_")
    _exec(db, f"""UPDATE "{kd}" SET guid = 'another-run'
                  WHERE id = (SELECT max(id) FROM "{kd}")""")
    _assert_same(db, monkeypatch, expect_physical=False)


@needs_fixtures
def test_sparse_dispatch_rowids_read_the_same_both_ways(tmp_path, monkeypatch):
    monkeypatch.setenv("HIPSCOPE_ROCPD_CHUNK_ROWS", "4")
    db = tmp_path / "4242_results.db"
    shutil.copy(DBS[0], db)
    kd = _physical_table(db, "rocpd_kernel_dispatch_")
    _exec(db, f'UPDATE "{kd}" SET rowid = 1000000000 WHERE rowid = (SELECT max(rowid) '
              f'FROM "{kd}")', f'UPDATE "{kd}" SET rowid = 500 WHERE rowid = 3')
    _assert_same(db, monkeypatch)


@pytest.mark.parametrize("n_api", [0, 1, 500])
def test_api_link_sorted_once_equals_link_by_correlation(n_api):
    """Each chunk's kernels link to their API calls as one link_by_correlation would."""
    from hipscope.model import link_by_correlation
    from hipscope.parsers.rocpd.kernels import ApiLink

    rng = np.random.default_rng(n_api)
    api_stack, api_guid = rng.integers(-1, 300, n_api), rng.integers(0, 3, n_api)
    link = ApiLink(api_stack, api_guid)
    for n in (0, 1, 700):
        stack, guid = rng.integers(-1, 350, n), rng.integers(0, 3, n)
        want = link_by_correlation(stack, guid, api_stack, api_guid)
        got = link(stack, guid)
        assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("n", [0, 1, 7, 5000])
@pytest.mark.parametrize("span", [5, 1 << 40])
def test_distinct_rows_equals_group_rows(n, span):
    """The hashed grouping of the big tables gives group_rows' answer exactly (sorted
    distinct rows, each row's group, first rows), keys that fit 62 bits or not."""
    from hipscope.parsers._common import group_rows
    from hipscope.parsers.rocpd.db import distinct_rows

    rng = np.random.default_rng(n + span)
    cols = (rng.integers(0, 4, n), rng.integers(-1, 3, n), rng.integers(0, span, n))
    (u1, i1, f1), (u2, i2, f2) = group_rows(*cols), distinct_rows(*cols)
    assert all(np.array_equal(a, b) for a, b in zip(u1, u2))
    assert np.array_equal(i1, i2) and np.array_equal(f1, f2)
