"""Opening a trace imports the reading stack of its own reader only (issue 14).

Every open registers every built-in reader and sniffs the file with each; the other
readers' reading stacks (msgspec, the Kineto/Perfetto scanners, the rocpd/nsys table
builders...) are imported by their ``read()``, so a rocprofv3 CSV opens without them.
Each check runs in a fresh interpreter: the test session has imported everything.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

from tests.conftest import ROOT, SAMPLES

CSV = SAMPLES / "rocprofv3-csv" / "sdk-docs-2025-08-rocm7.0" / "kernel_trace.csv"

# modules of the reading stacks of the readers other than rocprofv3_csv
OTHER_STACKS = (
    "msgspec", "sqlite3", "hipscope.parsers._sqlite",
    "hipscope.parsers.rocprofv3_json.process", "hipscope.parsers.rocprofv3_json.records",
    "hipscope.parsers.rocpd.db", "hipscope.parsers.rocpd.tables",
    "hipscope.parsers.pftrace.colread", "hipscope.parsers.pftrace.fast",
    "hipscope.parsers.pftrace.walk", "hipscope.parsers.pftrace.tables",
    "hipscope.parsers.legacy_rocprof.results_csv", "hipscope.parsers.legacy_rocprof.results_db",
    "hipscope.parsers.legacy_rocprof.results_json", "hipscope.parsers.legacy_rocprof.folder",
    "hipscope.parsers.kineto.native", "hipscope.parsers.kineto.decode",
    "hipscope.parsers.kineto.tables",
    "hipscope.parsers.nsys.db", "hipscope.parsers.nsys.export", "hipscope.parsers.nsys.tables",
    "hipscope.parsers.jax.decode", "hipscope.parsers.jax.tables", "hipscope.parsers.jax.xplane",
    "hipscope.parsers._ncu_read", "hipscope.parsers._ncu_summary", "hipscope.parsers._ncu_tables",
    "hipscope.parsers._compute_read",
)

_OPEN = """
import json, sys
from hipscope.parsers import open_trace, readers
tr = open_trace(sys.argv[1])
print(json.dumps({"format": tr.meta["format"], "kernels": len(tr.kernels),
                  "readers": sorted(r.name for r in readers()),
                  "loaded": [m for m in sys.argv[2:] if m in sys.modules]}))
"""


def _fresh(code: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_rocprofv3_csv_opens_without_the_other_readers_stacks():
    with open(CSV, newline="") as fh:
        rows = list(csv.DictReader(fh))
    got = _fresh(_OPEN, str(CSV), *OTHER_STACKS)
    assert got["format"] == "rocprofv3-csv"
    assert got["kernels"] == len(rows) > 0
    # every built-in reader was registered (and sniffed the file) all the same
    assert {"rocprofv3-json", "rocpd", "pftrace", "legacy-rocprof", "kineto",
            "rocprof-compute", "ncu-csv", "nsys", "jax", "xplane"} <= set(got["readers"])
    assert got["loaded"] == []


def test_names_the_packages_held_still_resolve():
    """Names once imported at a reader package's top stay importable from it (PEP 562)."""
    code = """
import json
from hipscope.parsers.kineto import rank_files, read_native
from hipscope.parsers.legacy_rocprof import (LegacyRocprofCsvReader, LegacyRocprofDbReader,
                                             LegacyRocprofJsonReader, read_folder)
from hipscope.parsers.legacy_rocprof.folder import sniff_folder
from hipscope.parsers.nsys import CLOCK, read_export
from hipscope.parsers.nsys.db import KERNEL, nsys_confidence
from hipscope.parsers.pftrace import _protobuf_good, _wire_good, colread, fast, scan_packets
from hipscope.parsers.rocpd import Db, is_rocpd, read_db
from hipscope.parsers.rocpd.db import db_files, table_names
from hipscope.parsers.ncu_csv import DURATION_METRICS, UNIT_NS, NcuCsvReader
from hipscope.parsers.rocprof_compute import RocprofComputeReader, RocprofComputeReading
import hipscope.parsers.nsys as nsys
try:
    nsys.no_such_name
    missing = "no error"
except AttributeError as exc:
    missing = str(exc)
print(json.dumps({"nsys_read_export": read_export.__module__, "db": Db.__module__,
                  "csv_reader": LegacyRocprofCsvReader.__module__, "missing": missing,
                  "compute": issubclass(RocprofComputeReading, RocprofComputeReader),
                  "ncu_ns": UNIT_NS["us"]}))
"""
    got = _fresh(code)
    assert got == {"nsys_read_export": "hipscope.parsers.nsys.export",
                   "db": "hipscope.parsers.rocpd.db",
                   "csv_reader": "hipscope.parsers.legacy_rocprof.results_csv",
                   "missing": "module 'hipscope.parsers.nsys' has no attribute 'no_such_name'",
                   "compute": True, "ncu_ns": 1000.0}
