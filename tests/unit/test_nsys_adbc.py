"""The Nsight Systems reader's Arrow (ADBC) fetches give the Trace its sqlite3 row path
gives (the oracle, ``HIPSCOPE_NSYS_ADBC=0``) on every fixture and on a scaled export, and
fall back to sqlite3 where a column holds what Arrow cannot give the same way (mixed
storage classes, text that is not UTF-8), so refusals and U+FFFD texts are unchanged."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from benchmarks.nsys import scaled_export
from hipscope.parsers import TraceFormatError
from hipscope.parsers._sqlite import read_sqlite_input
from hipscope.parsers.nsys import read_export
from hipscope.parsers.nsys.db import NsysDb
from tests.conftest import DATA

from .test_pftrace_c import assert_same

pytest.importorskip("adbc_driver_sqlite")

FIXTURES = sorted((DATA / "nsys").glob("*.sqlite"))
NEW = DATA / "nsys" / "nsys_2025_schema.sqlite"


def read(path: Path, adbc: bool):
    """(Trace or TraceFormatError, the NsysDb that read it)."""
    dbs: list[NsysDb] = []

    def open_db(p: Path) -> NsysDb:
        dbs.append(NsysDb(p, use_adbc=adbc))
        return dbs[-1]

    try:
        got = read_sqlite_input(path, "Nsight Systems", "export", open_db,
                                lambda db: read_export("nsys", db, lambda f: None,
                                                       lambda: False))
    except TraceFormatError as exc:
        got = exc
    return got, dbs[0]


def both(path: Path):
    fast, db = read(path, True)
    slow, db_slow = read(path, False)
    assert db_slow.adbc_fetches == 0
    assert_same(fast, slow)
    return fast, db


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_fixtures_read_the_same_through_arrow(path):
    tr, db = both(path)
    assert db.adbc_fetches >= 5 and db.adbc_fallbacks == 0
    assert len(tr.kernels) and len(tr.api)


def test_a_scaled_unsorted_export_reads_the_same(tmp_path):
    big = tmp_path / "big.sqlite"
    scaled_export(NEW, big, 40)
    with sqlite3.connect(big) as c:
        n = c.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
        c.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET graphId = NULL")  # all-null column
    tr, db = both(big)
    assert len(tr.kernels) == n == 40 * 19 and db.adbc_fallbacks == 0


def _damaged(tmp_path: Path, sql: str) -> Path:
    out = tmp_path / "damaged.sqlite"
    shutil.copyfile(NEW, out)
    with sqlite3.connect(out) as c:
        c.execute(sql)
    return out


@pytest.mark.parametrize("sql", [
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = 'wide' WHERE rowid = 3",
    "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET \"end\" = 1.5 WHERE rowid = 7",
], ids=["text-in-int", "real-in-int"])
def test_a_bad_cell_is_refused_as_before(tmp_path, sql):
    got, db = both(_damaged(tmp_path, sql))
    assert isinstance(got, TraceFormatError) and "row" in str(got)
    assert db.adbc_fallbacks >= 1


def test_text_that_is_not_utf8_reads_with_replacement_as_before(tmp_path):
    path = _damaged(tmp_path, "UPDATE NVTX_EVENTS SET text = CAST(x'ff41' AS TEXT) "
                              "WHERE text = 'forward'")
    tr, db = both(path)
    assert "\ufffdA" in tr.markers.strings("name") and db.adbc_fallbacks == 1


@pytest.mark.parametrize("path", FIXTURES)
def test_the_report_does_not_import_pandas(path):
    from .test_pftrace_cols import assert_report_without_pandas

    assert_report_without_pandas(path)

