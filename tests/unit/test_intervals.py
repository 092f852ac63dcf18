"""The one rule for impossible times (``parsers/_intervals.py``) on every reader family.

Each test plants impossible times in a copy of a real sample (or test fixture):
durations negated, end before start, a negative start, an end past 2^62 ns. The
trace must keep exactly the other rows, with one counted warning per table; the
expected rows come from plain json/csv/sqlite3/gzip/protobuf code over the planted
file, never from hipscope's reader.
"""

from __future__ import annotations

import csv
import gzip
import json
import shutil
import sqlite3
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb2

from hipscope.parsers import open_trace
from tests.conftest import DATA, SAMPLES

LIMIT = 1 << 62
KINETO = SAMPLES / "kineto" / "nvidia-h200-generated" / "h200_torch_kineto_trace.json.gz"
TWIN = DATA / "rocprofv3-csv-twin" / "node01"
V3JSON = SAMPLES / "rocprofv3-json" / "tracelens-908-mi350" / "908_results.json.gz"
ROCPD = DATA / "rocpd" / "4242_results.db"
PFTRACE = SAMPLES / "rocprofv3-pftrace" / "mi300a-jacc-systrace" / "3648722_results.pftrace"
SPATTER = SAMPLES / "legacy-rocprof" / "spatter-kernel-stats"
HIP_TRACE = SAMPLES / "legacy-rocprof" / "rocm-blogs-hip-trace"
NCU = SAMPLES / "ncu-csv" / "h200-generated" / "ncu_details.csv"


def kept(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The rule, stated plainly: a row stays when 0 <= start <= end <= 2^62."""
    return sorted((s, e) for s, e in pairs if 0 <= s <= e <= LIMIT)


def times(table) -> list[tuple[int, int]]:
    return sorted(zip(table.numpy("start").tolist(), table.numpy("end").tolist()))


def one_warning(tr, text: str) -> str:
    hits = [w for w in tr.warnings if text in w]
    assert len(hits) == 1, (text, tr.warnings)
    return hits[0]


# --------------------------------------------------------------------------- Kineto

def _kineto(tmp_path: Path, plant) -> tuple[Path, dict]:
    """A planted copy of the H200 sample, and its raw JSON read back (exact decimals)."""
    raw = json.loads(gzip.decompress(KINETO.read_bytes()))
    plant(raw)
    out = tmp_path / "k.json.gz"
    out.write_bytes(gzip.compress(json.dumps(raw).encode()))
    return out, json.loads(gzip.decompress(out.read_bytes()), parse_float=Decimal)


def _kineto_pairs(raw: dict, *cats: str) -> list[tuple[int, int]]:
    base = raw.get("baseTimeNanoseconds", 0)
    out = []
    for e in raw["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in cats:
            s = base + int(Decimal(e["ts"]) * 1000)
            out.append((s, s + int(Decimal(e.get("dur", 0)) * 1000)))
    return out


def test_kineto_negative_durations_are_dropped_and_counted(tmp_path):
    def plant(raw):
        ks = [e for e in raw["traceEvents"] if e.get("cat") == "kernel"]
        for e in ks[::3]:
            e["dur"] = -e["dur"]
    path, raw = _kineto(tmp_path, plant)
    tr = open_trace(path)
    want = kept(_kineto_pairs(raw, "kernel"))
    n_bad = len(_kineto_pairs(raw, "kernel")) - len(want)
    assert n_bad == 5
    assert times(tr.kernels) == want
    one_warning(tr, f"{path}: dropped {n_bad} kernels that end before they start")


def test_kineto_every_kernel_negated_is_not_a_busy_trace(tmp_path):
    """W4: with every kernel dur negated the old reader reported busy 0.0, no warning."""
    def plant(raw):
        for e in raw["traceEvents"]:
            if e.get("cat") == "kernel":
                e["dur"] = -e["dur"]
    path, raw = _kineto(tmp_path, plant)
    tr = open_trace(path)
    n = len(_kineto_pairs(raw, "kernel"))
    assert len(tr.kernels) == 0
    one_warning(tr, f"dropped {n} kernels that end before they start")


def test_kineto_dropped_api_calls_keep_links_consistent(tmp_path):
    """A dropped runtime call unlinks its kernels; every other link still points at
    the call with the kernel's correlation id (rows after it are renumbered)."""
    def plant(raw):
        calls = [e for e in raw["traceEvents"] if e.get("cat") == "cuda_runtime"
                 and e.get("name") == "cudaLaunchKernel"]
        calls[0]["dur"] = -calls[0]["dur"] - 1
    path, raw = _kineto(tmp_path, plant)
    tr = open_trace(path)
    pairs = _kineto_pairs(raw, "cuda_runtime", "cuda_driver", "cuda_sync")
    assert times(tr.api) == kept(pairs) and len(tr.api) == len(pairs) - 1
    one_warning(tr, "dropped 1 API call that ends before it starts")
    bad_corr = next(e["args"]["correlation"] for e in raw["traceEvents"]
                    if e.get("cat") == "cuda_runtime" and e["dur"] < 0)
    corr = tr.kernels.numpy("correlation_id", fill=-1)
    ai = tr.kernels.numpy("api_index", fill=-1)
    api_corr = tr.api.numpy("correlation_id", fill=-1)
    assert (ai[corr == bad_corr] == -1).all() and (corr == bad_corr).any()
    linked = ai >= 0
    assert linked.sum() == len(tr.kernels) - (corr == bad_corr).sum()
    assert (api_corr[ai[linked]] == corr[linked]).all()


# --------------------------------------------------------------------------- rocprofv3 CSV

def _rewrite_csv(path: Path, change) -> list[dict]:
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
        header = list(rows[0])
    change(rows)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header)
        w.writeheader()
        w.writerows(rows)
    return rows


def _csv_pairs(folder: Path, pattern: str) -> list[tuple[int, int]]:
    out = []
    for f in sorted(folder.glob(pattern)):
        with open(f, newline="") as fh:
            out += [(int(r["Start_Timestamp"]), int(r["End_Timestamp"]))
                    for r in csv.DictReader(fh)]
    return out


def test_rocprofv3_csv_end_before_start_and_past_2_62(tmp_path):
    """Was: end<start dropped by the CSV reader alone; End = 2^63-1 gave a 292-year span."""
    d = tmp_path / "v"
    shutil.copytree(TWIN, d)
    with open(d / "4242_counter_collection.csv", newline="") as fh:
        c_rows = list(csv.DictReader(fh))
    counted = {r["Dispatch_Id"] for r in c_rows}
    dropped_dispatch = []

    def change(rows):
        hit = [r for r in rows if r["Dispatch_Id"] in counted][:3] + rows[:1]
        for r in hit[:3]:
            r["Start_Timestamp"], r["End_Timestamp"] = r["End_Timestamp"], r["Start_Timestamp"]
        hit[3]["End_Timestamp"] = str(2**63 - 1)
        dropped_dispatch.extend(r["Dispatch_Id"] for r in hit)
    _rewrite_csv(d / "4242_kernel_trace.csv", change)
    tr = open_trace(d)
    want = kept(_csv_pairs(d, "*_kernel_trace.csv"))
    assert times(tr.kernels) == want
    assert len(want) == len(_csv_pairs(d, "*_kernel_trace.csv")) - 4
    one_warning(tr, f"{d}: dropped 3 kernels that end before they start and 1 with a "
                "timestamp past 2^62 ns")
    assert tr.meta["dropped"]["kernels with impossible times"] == 4
    assert tr.time_range()[1] < LIMIT
    # the counters of the dropped kernels go with them; every other link holds
    with open(d / "4243_counter_collection.csv", newline="") as fh:
        n_other = sum(1 for _ in csv.DictReader(fh))
    lost = sum(1 for r in c_rows if r["Dispatch_Id"] in dropped_dispatch)
    assert lost and len(tr.counters) == len(c_rows) + n_other - lost
    ki = tr.counters.numpy("kernel_index", fill=-1)
    assert ki.max() < len(tr.kernels)
    k_disp = tr.kernels.numpy("dispatch_id", fill=-1)
    c_disp = tr.counters.numpy("dispatch_id", fill=-1)
    assert (k_disp[ki[ki >= 0]] == c_disp[ki >= 0]).all()


@pytest.mark.parametrize("domain,noun,table", [
    ("memory_copy_trace", "memory copy", "copies"),
    ("marker_api_trace", "marker", "markers")])
def test_rocprofv3_csv_copies_and_markers(tmp_path, domain, noun, table):
    d = tmp_path / "v"
    shutil.copytree(TWIN, d)

    def change(rows):
        r = next(r for r in rows if r["Start_Timestamp"] != r["End_Timestamp"])
        r["Start_Timestamp"], r["End_Timestamp"] = r["End_Timestamp"], r["Start_Timestamp"]
    _rewrite_csv(d / f"4242_{domain}.csv", change)
    tr = open_trace(d)
    pairs = _csv_pairs(d, f"*_{domain}.csv")
    assert times(getattr(tr, table)) == kept(pairs) and len(kept(pairs)) == len(pairs) - 1
    one_warning(tr, f"{d}: dropped 1 {noun} that ends before it starts")
    if table == "copies":          # links of the copies left still name their call
        ai = tr.copies.numpy("api_index", fill=-1)
        assert (ai >= 0).any()
        assert (tr.api.numpy("correlation_id")[ai[ai >= 0]]
                == tr.copies.numpy("correlation_id")[ai >= 0]).all()


def test_rocprofv3_csv_rows_days_away_are_warned_not_dropped(tmp_path):
    """W5: a few rows days away from all the others: kept, but the span is called out."""
    d = tmp_path / "v"
    shutil.copytree(TWIN, d)
    ten_days = 10 * 86_400 * 10**9

    def change(rows):
        for r in rows[:2]:
            r["Start_Timestamp"] = str(int(r["Start_Timestamp"]) + ten_days)
            r["End_Timestamp"] = str(int(r["End_Timestamp"]) + ten_days)
    _rewrite_csv(d / "4242_kernel_trace.csv", change)
    tr = open_trace(d)
    assert times(tr.kernels) == kept(_csv_pairs(d, "*_kernel_trace.csv"))
    w = one_warning(tr, f"{d}: 2 kernels lie up to 10.0 days away from the other")
    assert "timestamps look wrong" in w
    pristine = open_trace(TWIN)
    assert not any("away from the other" in x for x in pristine.warnings)


# --------------------------------------------------------------------------- rocprofv3 JSON

def test_rocprofv3_json_negative_start_and_end_before_start(tmp_path):
    """W5: a negative start gave a 17.7 h span (busy 0.28 -> 0.9998), no warning."""
    with gzip.open(V3JSON, "rt") as fh:
        raw = json.load(fh)
    proc = raw["rocprofiler-sdk-tool"][0]
    disp = proc["buffer_records"]["kernel_dispatch"] = \
        proc["buffer_records"]["kernel_dispatch"][:2000]
    disp[0]["start_timestamp"] = -disp[0]["start_timestamp"]
    for r in disp[1:4]:
        r["start_timestamp"], r["end_timestamp"] = r["end_timestamp"], r["start_timestamp"]
    path = tmp_path / "908_results.json.gz"
    path.write_bytes(gzip.compress(json.dumps(raw).encode()))
    tr = open_trace(path)
    pairs = [(r["start_timestamp"], r["end_timestamp"]) for r in disp]
    assert times(tr.kernels) == kept(pairs) and len(tr.kernels) == len(pairs) - 4
    one_warning(tr, "dropped 3 kernels that end before they start and 1 with a "
                "negative timestamp")


# --------------------------------------------------------------------------- rocpd

def test_rocpd_kernels_and_regions(tmp_path):
    db = tmp_path / "4242_results.db"
    shutil.copy(ROCPD, db)
    con = sqlite3.connect(db)
    (kt,) = con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE "
                        "'rocpd_kernel_dispatch_%'").fetchone()
    (rt,) = con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE "
                        "'rocpd_region_%'").fetchone()
    con.execute(f'UPDATE "{kt}" SET "end" = start - 1000 WHERE id IN '
                f'(SELECT id FROM "{kt}" ORDER BY id LIMIT 2)')
    con.execute(f'UPDATE "{kt}" SET "end" = {2**63 - 1} WHERE id = '
                f'(SELECT max(id) FROM "{kt}")')
    con.commit()
    pairs = con.execute(f'SELECT start, "end" FROM "{kt}"').fetchall()
    con.close()
    tr = open_trace(db)
    assert times(tr.kernels) == kept(pairs) and len(tr.kernels) == len(pairs) - 3
    one_warning(tr, "dropped 2 kernels that end before they start and 1 with a timestamp "
                "past 2^62 ns")
    assert tr.time_range()[1] < LIMIT
    assert rt  # regions: end before start in the API table
    con = sqlite3.connect(db)
    con.execute(f'UPDATE "{rt}" SET "end" = start - 1 WHERE id = (SELECT min(id) FROM "{rt}")')
    con.commit()
    con.close()
    tr2 = open_trace(db)
    assert len(tr2.api) + len(tr2.markers) == len(tr.api) + len(tr.markers) - 1
    assert sum("dropped 1 API call that ends before it starts" in w
               or "dropped 1 marker that ends before it starts" in w for w in tr2.warnings) == 1


# --------------------------------------------------------------------------- pftrace

def test_pftrace_kernel_slices_ending_before_they_begin(tmp_path):
    t = pb2.Trace()
    t.ParseFromString(PFTRACE.read_bytes())
    cats: dict = {}
    planted = 0
    for pk in t.packet:
        for x in pk.interned_data.event_categories:
            cats[(pk.trusted_packet_sequence_id, x.iid)] = x.name
        e = pk.track_event
        if not pk.HasField("track_event") or e.type != 1 or planted == 2:
            continue
        if cats.get((pk.trusted_packet_sequence_id, e.category_iids[0])) != "kernel_dispatch":
            continue
        # begin after its own end: the slice and its begin_ns/end_ns both run backwards
        pk.timestamp += 10**9
        for a in e.debug_annotations:
            if a.name_iid == 1:
                a.uint_value += 10**9
        planted += 1
    path = tmp_path / "x_results.pftrace"
    path.write_bytes(t.SerializeToString())
    tr = open_trace(path)
    pristine = open_trace(PFTRACE)
    assert len(tr.kernels) == len(pristine.kernels) - 2
    assert set(times(tr.kernels)) < set(times(pristine.kernels))
    one_warning(tr, "dropped 2 kernels that end before they start")


# --------------------------------------------------------------------------- legacy rocprof

def test_legacy_results_db_end_before_begin_is_dropped_not_refused(tmp_path):
    """Was: 'results.db at table OPS row 1: expected EndNs >= BeginNs' for the whole db."""
    db = tmp_path / "results.db"
    shutil.copy(SPATTER / "results.db", db)
    con = sqlite3.connect(db)
    con.execute('UPDATE KERN SET EndNs = BeginNs - 5 WHERE "Index" IN (0, 7)')
    con.execute('UPDATE KERN SET BeginNs = -BeginNs WHERE "Index" = 9')
    con.commit()
    pairs = con.execute("SELECT BeginNs, EndNs FROM KERN").fetchall()
    con.close()
    tr = open_trace(db)
    assert times(tr.kernels) == kept(pairs) and len(tr.kernels) == len(pairs) - 3
    one_warning(tr, "dropped 2 kernels that end before they start and 1 with a "
                "negative timestamp")


def test_legacy_results_db_hip_calls(tmp_path):
    db = tmp_path / "results.db"
    shutil.copy(HIP_TRACE / "results.db", db)
    con = sqlite3.connect(db)
    con.execute("UPDATE HIP SET EndNs = BeginNs - 1 WHERE rowid = 1")
    con.commit()
    pairs = con.execute("SELECT BeginNs, EndNs FROM HIP").fetchall()
    con.close()
    tr = open_trace(db)
    assert times(tr.api) == kept(pairs) and len(tr.api) == len(pairs) - 1
    one_warning(tr, "dropped 1 API call that ends before it starts")


def test_legacy_results_json(tmp_path):
    raw = json.loads((SPATTER / "results.json").read_text())
    ks = [e for e in raw["traceEvents"] if e.get("ph") == "X"]
    for e in ks[:4]:
        a = e["args"]
        a["BeginNs"], a["EndNs"] = a["EndNs"], a["BeginNs"]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(raw))
    tr = open_trace(path)
    pairs = [(int(e["args"]["BeginNs"]), int(e["args"]["EndNs"])) for e in ks]
    assert times(tr.kernels) == kept(pairs) and len(tr.kernels) == len(pairs) - 4
    one_warning(tr, "dropped 4 kernels that end before they start")


def test_legacy_results_csv(tmp_path):
    path = tmp_path / "results.csv"
    shutil.copy(SPATTER / "results.csv", path)

    def change(rows):
        r = rows[5]
        r["BeginNs"], r["EndNs"] = r["EndNs"], r["BeginNs"]
    rows = _rewrite_csv(path, change)
    tr = open_trace(path)
    pairs = [(int(r["BeginNs"]), int(r["EndNs"])) for r in rows]
    assert times(tr.kernels) == kept(pairs) and len(tr.kernels) == len(pairs) - 1
    one_warning(tr, "dropped 1 kernel that ends before it starts")


# --------------------------------------------------------------------------- ncu

def test_ncu_negative_duration(tmp_path):
    lines = NCU.read_text().splitlines(keepends=True)
    head = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    rows = list(csv.reader(lines[head:]))
    col = {c: i for i, c in enumerate(rows[0])}
    hit = next(r for r in rows[1:] if r[col["Metric Name"]] == "Duration")
    hit[col["Metric Value"]] = "-" + hit[col["Metric Value"]]
    path = tmp_path / "ncu_details.csv"
    with open(path, "w", newline="") as fh:
        fh.write("".join(lines[:head]))
        csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    tr = open_trace(path)
    durs = {}
    for r in rows[1:]:
        if r[col["Metric Name"]] == "Duration":
            assert r[col["Metric Unit"]] == "ns"
            durs[r[col["ID"]]] = int(r[col["Metric Value"]].replace(",", ""))
    assert len(tr.kernels) == len(durs) - 1
    got = sorted((tr.kernels.numpy("end") - tr.kernels.numpy("start")).tolist())
    assert got == sorted(d for d in durs.values() if d >= 0)
    assert (np.diff(tr.kernels.numpy("start")) >= 0).all()    # the layout stays in order
    one_warning(tr, "dropped 1 kernel that ends before it starts")
    def numeric(v: str) -> bool:
        try:
            float(v.replace(",", ""))
        except ValueError:
            return False
        return True
    # its counters (the numeric metric values of that ID) go with it
    n_bad = sum(1 for r in rows[1:] if r[col["ID"]] == hit[col["ID"]]
                and numeric(r[col["Metric Value"]]))
    one_warning(tr, f"dropped {n_bad} counter values of the kernels dropped")


def test_two_bursts_hours_apart_are_not_warned(tmp_path):
    """A profile of two bursts of work hours apart (one process started two hours after
    the other) is a real trace: no 'far away' warning, nothing dropped."""
    d = tmp_path / "v"
    shutil.copytree(TWIN, d)
    two_hours = 2 * 3_600 * 10**9
    for f in sorted(d.glob("4243_*.csv")):
        def change(rows):
            for r in rows:
                for c in ("Start_Timestamp", "End_Timestamp"):
                    if r.get(c):
                        r[c] = str(int(r[c]) + two_hours)
        if "Start_Timestamp" in (f.read_text().splitlines() or [""])[0]:
            _rewrite_csv(f, change)
    tr = open_trace(d)
    assert times(tr.kernels) == kept(_csv_pairs(d, "*_kernel_trace.csv"))
    assert not any("away from the other" in w or "dropped" in w for w in tr.warnings)
