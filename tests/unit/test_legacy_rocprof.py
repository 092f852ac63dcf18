"""Legacy rocprof v1 readers (results.csv / results.json / results.db / folders) over the
real samples, plus hand-written variants and bad input. Expected figures come from the
raw files (csv, json, sqlite3), never from the readers."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from hipscope.parsers import TraceFormatError, find_reader, get_reader, open_trace
from hipscope.parsers._validate import validate
from tests.conftest import SAMPLES, ids, sample_dirs

DIRS = sample_dirs("legacy-rocprof")
TRACE_FILES = ("results.csv", "results.json", "results.db")
CASES = [d / f for d in DIRS for f in TRACE_FILES if (d / f).is_file()]
SPATTER = SAMPLES / "legacy-rocprof" / "spatter-kernel-stats"
READER_OF = {"results.csv": "legacy-rocprof", "results.json": "legacy-rocprof",
             "results.db": "legacy-rocprof"}


def _read(path: Path, reader: str | None = None):
    r = get_reader(reader or READER_OF.get(path.name, "legacy-rocprof"))
    return r.read(path, lambda f: None, lambda: False)


def _case_id(p: Path) -> str:
    return f"{p.parent.name}/{p.name}"


def _names(t) -> list[str]:
    return t.kernels.strings("name")


def _unquote(s: str) -> str:
    return s[1:-1] if len(s) >= 2 and s[0] == s[-1] == '"' else s


# --------------------------------------------------------------------------- raw expectations

def _raw_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _raw_json(path: Path) -> dict:
    return json.loads(path.read_text())


def _json_sections(doc: dict) -> dict[int, str]:
    out = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            out[int(e["pid"])] = e["args"]["name"]
    return out


def _json_gpu_events(doc: dict) -> list[dict]:
    sec = _json_sections(doc)
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"
            and sec.get(int(e["pid"]), "").startswith("GPU")
            and not sec.get(int(e["pid"]), "").startswith("GPU Barriers")]


def _raw_db_kernels(path: Path) -> list[tuple[str, int, int]]:
    con = sqlite3.connect(path)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        rows = []
        if "OPS" in tables:
            rows = con.execute('SELECT Name, BeginNs, EndNs FROM OPS ORDER BY rowid').fetchall()
        if not rows and "KERN" in tables:
            rows = con.execute('SELECT KernelName, BeginNs, EndNs FROM KERN ORDER BY rowid'
                               ).fetchall()
        return [(_unquote(n), b, e) for n, b, e in rows]
    finally:
        con.close()


def _expected_kernels(path: Path) -> list[tuple[str, int]]:
    """(name, duration ns) per kernel in file order, from the raw file."""
    if path.suffix == ".csv":
        return [(r["KernelName"], int(r["EndNs"]) - int(r["BeginNs"])) for r in _raw_csv(path)]
    if path.suffix == ".json":
        return [(e["args"].get("KernelName") or e["args"].get("Name") or e["name"],
                 int(e["args"]["EndNs"]) - int(e["args"]["BeginNs"]))
                for e in _json_gpu_events(_raw_json(path))]
    return [(n, e - b) for n, b, e in _raw_db_kernels(path)]


# --------------------------------------------------------------------------- samples

@pytest.mark.parametrize("path", CASES, ids=[_case_id(p) for p in CASES])
def test_sample_kernels(path: Path):
    tr = _read(path)
    exp = _expected_kernels(path)
    assert len(tr.kernels) == len(exp) > 0
    dur = (tr.kernels.numpy("end") - tr.kernels.numpy("start")).tolist()
    got = list(zip(_names(tr), dur))
    assert got == exp
    # a few named kernels: total time per name
    for name in sorted({n for n, _ in exp})[:3]:
        assert sum(d for n, d in got if n == name) == sum(d for n, d in exp if n == name)
    assert tr.meta["format"] == "legacy-rocprof"
    assert tr.meta["file_kind"] == path.name
    assert tr.meta["clock"] == "HSA system clock"
    assert tr.meta["tool"] == "rocprof (v1)"
    assert str(path) in tr.meta["sources"]
    validate(tr)


@pytest.mark.parametrize("path", CASES, ids=[_case_id(p) for p in CASES])
def test_sample_devices_from_sysinfo(path: Path):
    tr = _read(path)
    sysinfo = path.parent / "results.sysinfo.txt"
    raw_ids = set(tr.devices.strings("raw_id"))
    if path.suffix == ".csv":
        assert raw_ids == {r["gpu-id"] for r in _raw_csv(path)}
    if sysinfo.is_file():
        text = sysinfo.read_text()
        assert "AMD Instinct MI210" in text
        assert set(tr.devices.strings("name")) == {"AMD Instinct MI210"}
        assert set(tr.devices.strings("arch")) == {"gfx90a"}
        assert tr.devices.numpy("compute_units").tolist() == [104] * len(tr.devices)
        runtime = [ln.split(":", 1)[1].strip() for ln in text.splitlines()
                   if ln.startswith("Runtime Version:")][0]
        assert tr.meta["hsa_runtime_version"] == runtime
        assert str(sysinfo) in tr.meta["sources"]
    else:
        assert tr.devices.strings("name") == [f"GPU {r}" for r in sorted(raw_ids, key=int)]
    validate(tr)


@pytest.mark.parametrize("path", [p for p in CASES if p.suffix == ".csv"],
                         ids=[_case_id(p) for p in CASES if p.suffix == ".csv"])
def test_csv_dispatch_queue_delay(path: Path):
    rows = _raw_csv(path)
    tr = _read(path)
    exp = [int(r["BeginNs"]) - int(r["DispatchNs"]) for r in rows]
    got = (tr.kernels.numpy("start") - tr.kernels.numpy("dispatch_ns")).tolist()
    assert got == exp
    assert tr.kernels.numpy("dispatch_id").tolist() == [int(r["Index"]) for r in rows]
    assert tr.kernels.numpy("block_x").tolist() == [int(r["wgr"]) for r in rows]
    assert tr.kernels.numpy("sgpr").tolist() == [int(r["sgpr"]) for r in rows]
    # grid sizes in work-items, also above 2**31 (spatter: 2**32 - 256)
    grd = np.array([int(r["grd"]) for r in rows])
    assert tr.kernels.numpy("grid_x").tolist() == grd.tolist()
    # no counter columns in these samples
    assert len(tr.counters) == 0
    from hipscope.analysis.queue_delay import queue_delays

    qd = queue_delays(tr)
    assert qd.from_dispatch is not None and sorted(qd.from_dispatch.tolist()) == sorted(exp)
    validate(tr)


@pytest.mark.parametrize("path", [p for p in CASES if p.suffix == ".db"],
                         ids=[_case_id(p) for p in CASES if p.suffix == ".db"])
def test_db_correlation(path: Path):
    con = sqlite3.connect(path)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    tr = _read(path)
    if "HIP" in tables:
        n_hip = con.execute("SELECT COUNT(*) FROM HIP").fetchone()[0]
        assert len(tr.api) == n_hip
        joined = con.execute('SELECT OPS.rowid, HIP.Name, HIP.BeginNs FROM OPS JOIN HIP '
                             'ON OPS."Index" = HIP."Index" ORDER BY OPS.rowid').fetchall()
        api_idx = tr.kernels.numpy("api_index", fill=-1)
        assert int((api_idx >= 0).sum()) == len(joined) > 0
        api_names = tr.api.strings("name")
        api_start = tr.api.numpy("start")
        for (_rowid, name, begin), a in zip(joined, api_idx[api_idx >= 0]):
            assert api_names[a] == name and api_start[a] == begin
        copies = con.execute('SELECT COPY.Name, HIP.args FROM COPY LEFT JOIN HIP '
                             'ON COPY."Index" = HIP."Index" ORDER BY COPY.rowid').fetchall()
        assert len(tr.copies) == len(copies)
        assert tr.copies.strings("name") == [c for c, _ in copies]
        exp_bytes = [int(a.split("sizeBytes(")[1].split(")")[0]) for _, a in copies]
        assert tr.copies.numpy("bytes").tolist() == exp_bytes
        dirs = tr.copies.strings("direction")
        assert dirs == ["HtoD" if "HostToDevice" in c else "DtoH" for c, _ in copies]
        corr = [r[0] for r in con.execute('SELECT "Index" FROM OPS ORDER BY rowid')]
        assert tr.kernels.numpy("correlation_id").tolist() == corr
    else:
        assert len(tr.api) == 0
    con.close()
    validate(tr)


@pytest.mark.parametrize("path", [p for p in CASES if p.suffix == ".json"],
                         ids=[_case_id(p) for p in CASES if p.suffix == ".json"])
def test_json_flows_and_sections(path: Path):
    doc = _raw_json(path)
    assert doc["traceEvents"][0] == {}
    tr = _read(path)
    sec = _json_sections(doc)
    xs = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    n_api = sum(1 for e in xs if "API" in sec.get(int(e["pid"]), ""))
    n_copy = sum(1 for e in xs if sec.get(int(e["pid"])) == "COPY")
    assert len(tr.api) == n_api
    assert len(tr.copies) == n_copy
    s_ids = {e["id"] for e in doc["traceEvents"] if e.get("ph") == "s"}
    t_ids = {e["id"] for e in doc["traceEvents"] if e.get("ph") == "t"}
    linked = int((tr.kernels.numpy("api_index", fill=-1) >= 0).sum()
                 + (tr.copies.numpy("api_index", fill=-1) >= 0).sum())
    assert linked == len(s_ids & t_ids)
    if linked:
        # each linked GPU op starts after its launching call starts
        k_api = tr.kernels.numpy("api_index", fill=-1)
        ok = k_api >= 0
        assert (tr.kernels.numpy("start")[ok] >= tr.api.numpy("start")[k_api[ok]]).all()
        names = tr.api.strings("name")
        assert {names[i] for i in k_api[ok]} <= {"hipLaunchKernel", "hipModuleLaunchKernel",
                                               "hipExtModuleLaunchKernel"}
    assert tr.kernels.column("correlation_id").null_count == len(tr.kernels)
    validate(tr)


def test_hip_trace_db_and_json_agree():
    d = SAMPLES / "legacy-rocprof" / "rocm-blogs-hip-trace"
    a, b = _read(d / "results.db"), _read(d / "results.json")
    for t in ("kernels", "copies", "api"):
        ta, tb = getattr(a, t), getattr(b, t)
        assert len(ta) == len(tb)
        assert ta.numpy("start").tolist() == tb.numpy("start").tolist()
        assert ta.numpy("end").tolist() == tb.numpy("end").tolist()
    assert a.kernels.numpy("api_index").tolist() == b.kernels.numpy("api_index").tolist()
    assert a.copies.numpy("api_index").tolist() == b.copies.numpy("api_index").tolist()
    validate(a)
    validate(b)


def test_spatter_three_files_agree():
    traces = {f: _read(SPATTER / f) for f in TRACE_FILES}
    counts = {f: len(t.kernels) for f, t in traces.items()}
    assert len(set(counts.values())) == 1, counts
    base = traces["results.csv"]
    key = list(zip(_names(base), base.kernels.numpy("start")))
    for f, t in traces.items():
        assert list(zip(_names(t), t.kernels.numpy("start"))) == key, f
        assert (t.kernels.numpy("end") - t.kernels.numpy("start")).tolist() == \
            (base.kernels.numpy("end") - base.kernels.numpy("start")).tolist(), f
        assert t.kernels.numpy("dispatch_ns").tolist() == base.kernels.numpy("dispatch_ns").tolist()
        assert t.devices.strings("raw_id") == ["8"]
        validate(t)


@pytest.mark.parametrize("d", DIRS, ids=ids(DIRS))
def test_folder(d: Path):
    files = [d / f for f in ("results.db", "results.json", "results.csv") if (d / f).is_file()]
    if not files:
        assert any(p.name.endswith("stats.csv") for p in d.iterdir())
        with pytest.raises(TraceFormatError) as ei:
            open_trace(d)
        msg = str(ei.value)
        assert str(d) in msg and "summary statistics" in msg and "no per-event trace" in msg
        return
    assert find_reader(d).name == "legacy-rocprof"
    tr = open_trace(d)
    assert tr.meta["sources"][0] == str(files[0])   # the richest file: db > json > csv
    assert len(tr.kernels) == len(_expected_kernels(files[0]))
    validate(tr)


@pytest.mark.parametrize("path", CASES, ids=[_case_id(p) for p in CASES])
def test_sniff_picks_reader(path: Path):
    assert find_reader(path).name == READER_OF[path.name]


def test_sniff_rejects_other_formats():
    others = [SAMPLES / "kineto/nvidia-h200-generated/h200_torch_kineto_trace.json.gz",
              SAMPLES / "rocprofv3-csv/sdk-docs-2025-08-rocm7.0/kernel_trace.csv",
              SAMPLES / "rocprof-compute/vcopy-MI200-rocprofv1/pmc_perf.csv",
              SAMPLES / "rocprof-compute/vcopy-MI200-rocprofv1/timestamps.csv",
              SAMPLES / "ncu-csv/h200-generated/ncu_raw.csv"]
    for p in others:
        if not p.exists():
            continue
        assert get_reader("legacy-rocprof").sniff(p) == 0.0, p


def test_stats_file_is_not_a_trace():
    p = SAMPLES / "legacy-rocprof/rocm-blogs-sys-trace/results.stats.csv"
    with pytest.raises(TraceFormatError, match="summary statistics"):
        open_trace(p)


# --------------------------------------------------------------------------- hand-written CSVs

HEAD = ("Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,arch_vgpr,"
        "accum_vgpr,sgpr,wave_size,sig,obj,SQ_WAVES,GRBM_COUNT,FETCH_SIZE,"
        "DispatchNs,BeginNs,EndNs,CompleteNs\n")


def _row(i: int, name: str = "k", begin: int = 1000, waves: str = "64") -> str:
    return (f'{i},"{name}",2,0,{i},7,7,1024,256,0,0,8,0,16,64,0x0,0x7f00,{waves},'
            f"{100 + i},{2.5 * i},{begin - 50},{begin},{begin + 100 + i},{begin + 200}\n")


def test_csv_with_counters(tmp_path: Path):
    p = tmp_path / "results.csv"
    p.write_text(HEAD + _row(0, begin=1000) + _row(1, "k2", 2000) + _row(2, begin=3000, waves=""))
    tr = _read(p)
    assert len(tr.kernels) == 3
    rows = _raw_csv(p)
    counters = ["SQ_WAVES", "GRBM_COUNT", "FETCH_SIZE"]
    exp = [(c, float(r[c]), i) for c in counters for i, r in enumerate(rows) if r[c]]
    got = list(zip(tr.counters.strings("counter"), tr.counters.numpy("value").tolist(),
                   tr.counters.numpy("kernel_index").tolist()))
    assert sorted(got) == sorted(exp)
    assert len(tr.counters) == 8
    assert tr.counters.numpy("dispatch_id").tolist() == [
        int(rows[k]["Index"]) for k in tr.counters.numpy("kernel_index")]
    validate(tr)


def test_csv_rocm60_upper_case_header_and_quoting(tmp_path: Path):
    p = tmp_path / "results.csv"
    p.write_text('"Index","KernelName","gpu-id","queue-id","queue-index","pid","tid","GRD","WGR",'
                 '"LDS","SCR","arch_vgpr","ACCUM_VGPR","sgpr","wave_size","sig","obj",'
                 '"DispatchNs","BeginNs","EndNs","CompleteNs"\n'
                 '0,"a, b(int) [clone .kd]",4,1,0,9,9,"512","128",64,16,12,4,24,64,"0x0","0x1",'
                 "10,20,70,80\n")
    tr = _read(p)
    k = tr.kernels.row(0)
    assert (k["name"], k["grid_x"], k["block_x"], k["lds_bytes"], k["scratch_bytes"],
            k["accum_vgpr"], k["vgpr"], k["start"], k["end"], k["dispatch_ns"]) == (
        "a, b(int) [clone .kd]", 512, 128, 64, 16, 4, 12, 20, 70, 10)
    assert tr.devices.strings("raw_id") == ["4"]
    validate(tr)


def test_csv_old_vgpr_fbar_header(tmp_path: Path):
    p = tmp_path / "results.csv"
    p.write_text("Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,vgpr,sgpr,"
                 "fbar,sig,obj,TCC_HIT[0],BeginNs,EndNs\n"
                 '0,"k",0,0,0,1,1,64,64,0,0,32,16,0,0x0,0x1,5,100,200\n')
    tr = _read(p)
    assert tr.kernels.numpy("vgpr").tolist() == [32]
    assert tr.counters.strings("counter") == ["TCC_HIT[0]"]
    validate(tr)


def test_csv_counters_without_timestamps(tmp_path: Path):
    p = tmp_path / "results.csv"
    p.write_text("Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,arch_vgpr,"
                 "accum_vgpr,sgpr,wave_size,sig,obj,SQ_WAVES,GRBM_COUNT\n"
                 '0,"k",2,0,0,1,1,64,64,0,0,8,0,16,64,0x0,0x1,4,100\n'
                 '1,"k",2,0,1,1,1,64,64,0,0,8,0,16,64,0x0,0x1,4,120\n')
    tr = _read(p)
    assert len(tr.kernels) == 2
    assert tr.kernels.numpy("start").tolist() == [0, 0] == tr.kernels.numpy("end").tolist()
    assert tr.meta["untimed_kernels"] == 2
    assert "no timestamps" in tr.meta["clock"]
    assert any("no BeginNs/EndNs" in w for w in tr.warnings)
    assert len(tr.counters) == 4
    validate(tr)


def test_csv_torn_last_line(tmp_path: Path):
    src = (SPATTER / "results.csv").read_bytes()
    lines = src.splitlines(keepends=True)
    p = tmp_path / "results.csv"
    p.write_bytes(b"".join(lines[:-1]) + lines[-1][:40])
    tr = _read(p)
    assert len(tr.kernels) == len(lines) - 2
    assert tr.meta["dropped"] == {"kernels": 1}
    assert any("cut short" in w and f"line {len(lines)}" in w for w in tr.warnings)
    validate(tr)


@pytest.mark.parametrize("content, where", [
    (b"", "line 1"),
    (b"\x00\x01garbage\xff\n\x02", "line 1"),
    (b"Name,Calls,Whatever\n1,2,3\n", "line 1"),
])
def test_csv_bad_input(tmp_path: Path, content: bytes, where: str):
    p = tmp_path / "results.csv"
    p.write_bytes(content)
    with pytest.raises(TraceFormatError) as ei:
        _read(p)
    assert str(p) in str(ei.value) and where in str(ei.value)


def test_csv_bad_row_and_bad_number(tmp_path: Path):
    p = tmp_path / "results.csv"
    p.write_text(HEAD + _row(0) + "1,2,3\n" + _row(2))
    with pytest.raises(TraceFormatError, match="line 3"):
        _read(p)
    p.write_text(HEAD + _row(0) + _row(1, begin=2000).replace(",2000,", ",20x0,"))
    with pytest.raises(TraceFormatError) as ei:
        _read(p)
    assert "line 3" in str(ei.value) and str(p) in str(ei.value)


# --------------------------------------------------------------------------- JSON / DB bad input

def test_json_torn(tmp_path: Path):
    src = (SPATTER / "results.json").read_bytes()
    p = tmp_path / "results.json"
    p.write_bytes(src[: len(src) // 2])
    tr = _read(p)
    assert 0 < len(tr.kernels) < 520
    assert tr.meta["dropped"]["events"] >= 1
    assert any("ends early" in w for w in tr.warnings)
    validate(tr)


@pytest.mark.parametrize("content", [b"", b"{", b'{"traceEvents": 5}', b"[1,2,3]", b"\xff\xfe"])
def test_json_bad_input(tmp_path: Path, content: bytes):
    p = tmp_path / "results.json"
    p.write_bytes(content)
    with pytest.raises(TraceFormatError) as ei:
        _read(p)
    assert str(p) in str(ei.value)


def test_db_bad_input(tmp_path: Path):
    p = tmp_path / "results.db"
    p.write_bytes(b"not a database at all")
    with pytest.raises(TraceFormatError, match="SQLite"):
        _read(p)
    q = tmp_path / "other.db"
    con = sqlite3.connect(q)
    con.execute("CREATE TABLE foo (a INTEGER)")
    con.commit()
    con.close()
    with pytest.raises(TraceFormatError, match="legacy rocprof tables"):
        _read(q)
    r = tmp_path / "torn.db"
    r.write_bytes((SPATTER / "results.db").read_bytes()[:5000])
    try:
        tr = _read(r)
    except TraceFormatError as exc:
        assert str(r) in str(exc)
    else:
        validate(tr)


def test_db_kern_ops_merge_and_roctx(tmp_path: Path):
    p = tmp_path / "results.db"
    shutil.copy(SAMPLES / "legacy-rocprof/rocm-blogs-hip-trace/results.db", p)
    con = sqlite3.connect(p)
    con.execute("DROP TABLE KERN")
    con.execute('CREATE TABLE KERN ("Index" INTEGER, "KernelName" TEXT, "gpu-id" INTEGER, '
                '"grd" INTEGER, "wgr" INTEGER, "obj" TEXT, "SQ_WAVES" INTEGER, '
                '"DispatchNs" INTEGER, "BeginNs" INTEGER, "EndNs" INTEGER)')
    con.execute("INSERT INTO KERN VALUES (0, '\"elementwise_kernel\"', 2, 256, 256, '0x1', 4, "
                "1, 10, 20)")
    con.execute('CREATE TABLE rocTX ("BeginNs" INTEGER, "EndNs" INTEGER, "pid" INTEGER, '
                '"tid" INTEGER, "Name" TEXT, "Index" INTEGER, "__section" INTEGER, '
                '"__lane" INTEGER)')
    con.executemany("INSERT INTO rocTX VALUES (?, ?, 517, 517, ?, 0, 0, 517)",
                    [(100, 900, "outer"), (200, 300, "inner"), (400, 401, "mark")])
    con.commit()
    con.close()
    tr = _read(p)
    assert len(tr.kernels) == 1
    assert tr.kernels.row(0)["grid_x"] == 256 and tr.kernels.row(0)["api_index"] is not None
    assert tr.counters.strings("counter") == ["SQ_WAVES"]
    m = tr.markers
    assert m.strings("name") == ["outer", "inner", "mark"]
    assert m.numpy("depth").tolist() == [0, 1, 1]
    assert m.numpy("end").tolist() == [900, 300, 400]
    validate(tr)


# --------------------------------------------------------------------------- results.db: SQLite
# RELIABILITY.md W1, W7, W10/F1, T6. Expected figures from plain sqlite3 over the raw file.
HIP_TRACE_DB = SAMPLES / "legacy-rocprof" / "rocm-blogs-hip-trace" / "results.db"


def _sql(path: Path, *stmts: str) -> list:
    con = sqlite3.connect(path)
    try:
        out = [con.execute(s).fetchall() for s in stmts]
        con.commit()
        return out
    finally:
        con.close()


@pytest.mark.parametrize("folder", ["a%41b", "run#1", "q?mode=rwc", "x%3fy"])
def test_db_odd_folder_names_open_the_named_file(tmp_path: Path, folder: str):
    # W10: file:a%41b/results.db opened aAb/results.db (another trace); F1: '#'/'?' refused
    (tmp_path / folder).mkdir()
    (tmp_path / "aAb").mkdir()
    (tmp_path / "x?y").mkdir()
    p = tmp_path / folder / "results.db"
    shutil.copy(HIP_TRACE_DB, p)
    for other in ("aAb", "x?y"):
        shutil.copy(SPATTER / "results.db", tmp_path / other / "results.db")
    [[(n_ops,)], [(n_hip,)]] = _sql(p, "SELECT count(*) FROM OPS", "SELECT count(*) FROM HIP")
    assert find_reader(p).name == "legacy-rocprof"
    tr = open_trace(p)
    assert (len(tr.kernels), len(tr.api)) == (n_ops, n_hip)
    assert tr.meta["sources"] == [str(p)]


def test_db_w7_every_ops_index_equal_is_not_linked_wrongly(tmp_path: Path):
    # the reproducer: the one kernel's Index becomes hipGetDeviceCount's (1.6 s earlier)
    p = tmp_path / "results.db"
    shutil.copy(HIP_TRACE_DB, p)
    [_, [(n_ops,)], [(name,)]] = _sql(p, 'UPDATE OPS SET "Index" = 1',
                                      "SELECT count(*) FROM OPS",
                                      'SELECT Name FROM HIP WHERE "Index" = 1')
    tr = open_trace(p)
    assert len(tr.kernels) == n_ops
    assert tr.kernels.column("api_index").null_count == n_ops
    w = [x for x in tr.meta["warnings"] if "table OPS" in x]
    assert len(w) == 1 and f"{n_ops} of {n_ops} rows" in w[0] and name in w[0]
    from hipscope.analysis.queue_delay import queue_delays
    assert len(queue_delays(tr).kernel_rows) == 0  # was one delay of 1.607 s


def test_db_w7_shared_index_rows_are_left_unlinked(tmp_path: Path):
    p = tmp_path / "results.db"
    shutil.copy(HIP_TRACE_DB, p)
    # OPS: three kernels with one Index; HIP: the first copy's Index given to 2 calls
    [[(copy_idx,)]] = _sql(p, 'SELECT "Index" FROM COPY ORDER BY rowid LIMIT 1')
    _sql(p, "INSERT INTO OPS SELECT * FROM OPS", "INSERT INTO OPS SELECT * FROM OPS "
         "LIMIT 1", f'UPDATE HIP SET "Index" = {copy_idx} WHERE rowid = (SELECT min(rowid) '
         f'FROM HIP WHERE "Index" <> {copy_idx})')
    [[(n_ops, n_ops_keys)], [(n_copy,)], linked_copies] = _sql(
        p, 'SELECT count(*), count(DISTINCT "Index") FROM OPS', "SELECT count(*) FROM COPY",
        'SELECT COPY.rowid FROM COPY JOIN HIP ON COPY."Index" = HIP."Index" '
        'GROUP BY COPY.rowid HAVING count(*) = 1')
    assert (n_ops, n_ops_keys) == (3, 1)
    tr = open_trace(p)
    assert tr.kernels.column("api_index").null_count == 3
    assert len(tr.copies) - tr.copies.column("api_index").null_count == len(linked_copies)
    w = " ".join(tr.meta["warnings"])
    assert "3 of 3 rows of table OPS" in w and "3 share it with another OPS row" in w
    assert f"1 of {n_copy} rows of table COPY" in w and "1 more match several HIP rows" in w


def test_db_t6_undecodable_schema_is_recognised_and_refused_in_one_sentence(tmp_path: Path):
    p = tmp_path / "results.db"
    b = bytearray(HIP_TRACE_DB.read_bytes())
    b[3832] = 0x80  # inside the CREATE TABLE text of OPS in sqlite_master
    p.write_bytes(bytes(b))
    con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
    with pytest.raises(UnicodeDecodeError) as raw:  # SQLite's own message holds the byte
        con.execute("SELECT name FROM sqlite_master").fetchall()
    con.close()
    sqlite_msg = raw.value.object.decode("utf-8", "replace")
    assert find_reader(p).name == "legacy-rocprof"
    for reader in (None, "legacy-rocprof"):
        with pytest.raises(TraceFormatError) as ei:
            open_trace(p, reader=reader)
        assert str(ei.value).startswith(str(p)) and sqlite_msg in str(ei.value)


def test_db_w1_btree_damage_is_refused(tmp_path: Path):
    # the first child pointer of KERN's root page made a 2nd reference to the next leaf:
    # one page of kernels vanishes and another is read twice, with no SQL error
    import struct

    p = tmp_path / "results.db"
    b = bytearray((SPATTER / "results.db").read_bytes())
    [[(root,)]] = _sql(SPATTER / "results.db",
                       "SELECT rootpage FROM sqlite_master WHERE name = 'KERN'")
    page = struct.unpack(">H", b[16:18])[0]
    off = (root - 1) * page
    assert b[off] == 0x05  # an interior table b-tree page
    cell0, cell1 = struct.unpack(">HH", b[off + 12:off + 16])
    b[off + cell0:off + cell0 + 4] = b[off + cell1:off + cell1 + 4]
    p.write_bytes(bytes(b))
    con = sqlite3.connect(p)
    total, distinct = con.execute('SELECT count(*), count(DISTINCT "Index") FROM KERN').fetchone()
    check = con.execute("PRAGMA quick_check(1)").fetchone()[0]
    con.close()
    assert distinct < total  # what the reader would have shown
    first = [ln for ln in check.splitlines() if ln.strip() and not ln.startswith("***")][0]
    with pytest.raises(TraceFormatError) as ei:
        open_trace(p)
    assert str(ei.value).startswith(f"{p} at PRAGMA quick_check") and first in str(ei.value)


def test_db_column_name_not_utf8_is_one_sentence(tmp_path: Path):
    # sqlite3 decodes column names strictly: SELECT * FROM KERN raised UnicodeDecodeError
    p = tmp_path / "results.db"
    b = bytearray(HIP_TRACE_DB.read_bytes())
    at = b.find(b'"KernelName"')
    assert at > 0
    b[at + 2] = 0xE9
    p.write_bytes(bytes(b))
    con = sqlite3.connect(p)
    con.text_factory = bytes
    assert b"K\xe9rnelName" in [r[1] for r in con.execute("PRAGMA table_info(KERN)")]
    assert con.execute("PRAGMA quick_check").fetchone()[0] == b"ok"
    con.close()
    with pytest.raises(TraceFormatError) as ei:
        open_trace(p)
    assert str(ei.value).startswith(str(p)) and "not UTF-8" in str(ei.value)
