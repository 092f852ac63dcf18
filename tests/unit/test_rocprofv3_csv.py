"""rocprofv3 CSV reader over every real sample folder, plus hand-written sets (header
drift, several processes and hosts, torn and bad files). Expected figures come from the
raw CSV files read with the stdlib csv module, never from the reader.

Every test runs twice: with the general pyarrow reader only, and with the C fast path
(hipscope/parsers/_fastcsv.py) tried on every file whatever its size, in 64-byte pieces
so that a file is parsed as many pieces and their dictionaries are merged."""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from hipscope.cli.main import main
from hipscope.parsers import TraceFormatError, _fastcsv, find_reader, get_reader, open_trace
from hipscope.parsers._validate import validate
from tests.conftest import DATA, SAMPLES, ids, sample_dirs

DIRS = sample_dirs("rocprofv3-csv")
READER = "rocprofv3-csv"

# file-name domains, as rocprofv3 (and its docs) name them
KERNEL_DOMAINS = ("kernel_trace",)
API_DOMAINS = ("hip_api_trace", "hip_runtime_trace", "hip_compile_trace", "hip_trace",
               "hsa_api_trace", "hsa_trace", "rccl_api_trace", "rccl_trace",
               "rocdecode_api_trace", "rocjpeg_api_trace")
ALL_DOMAINS = (*KERNEL_DOMAINS, *API_DOMAINS, "marker_api_trace", "memory_copy_trace",
               "memory_allocation_trace", "scratch_memory_trace", "counter_collection",
               "agent_info")


@pytest.fixture(autouse=True, params=["pyarrow", "fast-path"])
def csv_path(request, monkeypatch):
    if request.param == "pyarrow":
        monkeypatch.setenv("HIPSCOPE_FASTCSV", "0")
    else:
        assert _fastcsv.available(), "the C scanner is not built (pip install -e . builds it)"
        monkeypatch.setattr(_fastcsv, "_MIN_BYTES", 0)
        monkeypatch.setattr(_fastcsv, "_PIECE", 64)
    return request.param


def _read(path: Path):
    return get_reader(READER).read(path, lambda f: None, lambda: False)


# --------------------------------------------------------------------------- raw expectations

def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh) if any((v or "").strip() for v in r.values())]


def _header(path: Path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as fh:
        return next(csv.reader(fh), [])


def _domain_of(path: Path) -> str | None:
    stem = path.stem
    if stem.endswith("stats") or "pc_sampling" in stem or stem.endswith("kernel_names"):
        return None
    for d in sorted(ALL_DOMAINS, key=len, reverse=True):
        if stem == d or stem.endswith("_" + d):
            return d
    return None


def _kind_by_header(path: Path) -> str | None:
    h = set(_header(path))
    if {"Counter_Name", "Counter_Value"} <= h:
        return "counters"
    if {"Kernel_Name", "Agent_Id", "Start_Timestamp"} <= h:
        return "kernels"
    if {"Domain", "Function", "Start_Timestamp"} <= h:
        rows = _rows(path)
        if rows and all(r["Domain"].startswith("MARKER") for r in rows):
            return "markers"
        return "api"
    if {"Direction", "Source_Agent_Id"} <= h:
        return "copies"
    return None


def raw_set(folder: Path) -> dict:
    """What the folder holds, from the raw files: named files form the one (unprefixed)
    process of the doc samples; other CSVs with a trace header are processes of their own."""
    named: dict[str, list[Path]] = {}
    alone: list[tuple[str, Path]] = []
    for p in sorted(folder.glob("*.csv")):
        d = _domain_of(p)
        if d is not None:
            kind = ("kernels" if d in KERNEL_DOMAINS else "api" if d in API_DOMAINS else
                    {"marker_api_trace": "markers", "memory_copy_trace": "copies",
                     "counter_collection": "counters"}.get(d, d))
            named.setdefault(kind, []).append(p)
            continue
        if p.stem.endswith("stats") or "pc_sampling" in p.stem or p.stem.endswith("kernel_names"):
            continue
        k = _kind_by_header(p)
        if k is not None:
            alone.append((k, p))
    return {"named": named, "alone": alone}


def _api_key(r: dict) -> tuple:
    return (r["Process_Id"], r["Correlation_Id"], r["Start_Timestamp"], r["End_Timestamp"],
            r["Function"], r["Domain"], r["Thread_Id"])


def expected(folder: Path) -> dict:
    rs = raw_set(folder)
    named, alone = rs["named"], rs["alone"]
    kernel_files = named.get("kernels", []) + [p for k, p in alone if k == "kernels"]
    kernels = [(p, r) for p in kernel_files for r in _rows(p)]
    # API rows of the named set; identical rows in two files (hip_trace.csv repeats
    # hip_compile_trace.csv in the 7.0 docs) count once
    api_named: dict[tuple, dict] = {}
    for p in named.get("api", []):
        for r in _rows(p):
            api_named.setdefault(_api_key(r), r)
    api_alone = [r for k, p in alone if k == "api" for r in _rows(p)]
    markers = [r for p in named.get("markers", []) for r in _rows(p)] + [
        r for k, p in alone if k == "markers" for r in _rows(p)]
    copies = [r for p in named.get("copies", []) for r in _rows(p)]
    counters = [r for p in named.get("counters", []) for r in _rows(p)]
    # kernel -> launching API call: same process (file set), unique correlation id
    by_corr: dict[str, list[dict]] = {}
    for r in api_named.values():
        by_corr.setdefault(r["Correlation_Id"], []).append(r)
    links = Counter()
    for p, r in kernels:
        hit = None
        if p in named.get("kernels", []) and r["Correlation_Id"] not in ("", "0"):
            cands = by_corr.get(r["Correlation_Id"], [])
            if len(cands) == 1:
                hit = cands[0]["Function"]
        links[(r["Correlation_Id"], r["Start_Timestamp"], hit)] += 1
    return {
        "kernels": kernels, "n_api": len(api_named) + len(api_alone), "markers": markers,
        "copies": copies, "counters": counters, "links": links,
        "names": {r["Kernel_Name"] for _p, r in kernels},
    }


# --------------------------------------------------------------------------- real samples

@pytest.mark.parametrize("folder", DIRS, ids=ids(DIRS))
def test_sample_folder(folder):
    exp = expected(folder)
    t = _read(folder)
    assert t.meta["format"] == READER
    assert t.meta["clock"] == "CLOCK_BOOTTIME"
    assert t.meta["tool"] == "rocprofv3"
    assert t.meta["layout"] in ("<=6.2", "6.3", "6.4", ">=7.0")
    assert len(t.kernels) == len(exp["kernels"])
    assert len(t.api) == exp["n_api"]
    assert len(t.markers) == len(exp["markers"])
    assert len(t.copies) == len(exp["copies"])
    assert len(t.counters) == len(exp["counters"])
    assert set(t.kernels.strings("name")) == exp["names"]
    # every file read is listed, stats/pc-sampling files are not
    srcs = {Path(s).name for s in t.meta["sources"]}
    assert not any("stats" in s or "pc_sampling" in s or s == "kernel_names.csv" for s in srcs)
    assert "kernel_trace.csv" in srcs
    validate(t)


@pytest.mark.parametrize("folder", DIRS, ids=ids(DIRS))
def test_sample_kernel_durations(folder):
    exp = expected(folder)
    t = _read(folder)
    names = t.kernels.strings("name")
    dur = t.kernels.numpy("end") - t.kernels.numpy("start")
    want: dict[str, list[int]] = {}
    for _p, r in exp["kernels"]:
        want.setdefault(r["Kernel_Name"], []).append(
            int(r["End_Timestamp"]) - int(r["Start_Timestamp"]))
    for name in sorted(want)[:3]:
        got = sorted(int(d) for n, d in zip(names, dur) if n == name)
        assert got == sorted(want[name]), name
    validate(t)


@pytest.mark.parametrize("folder", DIRS, ids=ids(DIRS))
def test_sample_correlation_links(folder):
    exp = expected(folder)
    t = _read(folder)
    corr = t.kernels.numpy("correlation_id", fill=0).astype(np.int64)
    start = t.kernels.numpy("start")
    api_idx = t.kernels.numpy("api_index", fill=-1).astype(np.int64)
    api_names = t.api.strings("name")
    got = Counter()
    for c, s, a in zip(corr.tolist(), start.tolist(), api_idx.tolist()):
        got[(str(c), str(s), api_names[a] if a >= 0 else None)] += 1
    want = Counter({(k[0] if k[0] not in ("", "0") else "0", k[1], k[2]): v
                    for k, v in exp["links"].items()})
    assert got == want
    unlinked = sum(v for k, v in want.items() if k[2] is None)
    if unlinked:
        assert any("kernels" in w and ("no matching" in w or "several API rows" in w
                                       or "no correlation id" in w) for w in t.warnings)
    validate(t)


@pytest.mark.parametrize("folder", DIRS, ids=ids(DIRS))
def test_sample_single_file_opens_the_set(folder, tmp_path):
    """One file opens its own set: the bare-named domain files beside it, not the files
    whose name gives no set (``rocpd-to-csv.csv`` of another run, issue 13 item 12)."""
    named = [p for p in sorted(folder.glob("*.csv")) if _domain_of(p) is not None]
    for p in named:
        shutil.copy(p, tmp_path / p.name)
    whole = _read(tmp_path)
    one = _read(folder / "kernel_trace.csv")
    for name, table in whole.tables().items():
        assert table.data.equals(one.tables()[name].data), name
    assert sorted(Path(s).name for s in one.meta["sources"]) == sorted(
        Path(s).name for s in whole.meta["sources"])
    assert len(one.kernels) == len(_rows(folder / "kernel_trace.csv"))
    # any other file of the set opens the same set
    other = next(p for p in named if _domain_of(p) in API_DOMAINS)
    assert len(_read(other).kernels) == len(whole.kernels)
    validate(one)


@pytest.mark.parametrize("folder", DIRS, ids=ids(DIRS))
def test_sample_markers_copies_devices(folder):
    exp = expected(folder)
    t = _read(folder)
    # markers: roctx, marks have start == end, depth computed
    assert set(t.markers.strings("domain")) <= {"roctx"}
    assert sorted(t.markers.strings("name")) == sorted(r["Function"] for r in exp["markers"])
    marks = sum(r["Start_Timestamp"] == r["End_Timestamp"] for r in exp["markers"])
    assert int((t.markers.numpy("start") == t.markers.numpy("end")).sum()) == marks
    assert t.markers.valid("depth").all()
    # copies: directions normalised, no bytes, the host side is no device
    want_dirs = Counter({"HOST_TO_DEVICE": "HtoD", "DEVICE_TO_HOST": "DtoH"}[
        r["Direction"].replace("MEMORY_COPY_", "")] for r in exp["copies"])
    assert Counter(t.copies.strings("direction")) == want_dirs
    if len(t.copies):
        assert not t.copies.has("bytes")
        dirs = t.copies.strings("direction")
        src, dst = t.copies.valid("src_device"), t.copies.valid("dst_device")
        for d, s, ds in zip(dirs, src, dst):
            assert (s, ds) == ((False, True) if d == "HtoD" else (True, False))
        assert t.copies.valid("device").all()
    # devices: one per distinct GPU agent text (no agent_info in the doc samples)
    gpu_agents = {r["Agent_Id"] for _p, r in exp["kernels"]}
    gpu_agents |= {r["Agent_Id"] for r in exp["counters"]}
    assert len(t.devices) == len(gpu_agents)
    assert set(t.devices.strings("raw_id")) == gpu_agents
    assert set(t.devices.strings("vendor")) == {"AMD"}
    validate(t)


def test_sample_70_memory_allocation_and_scratch_are_meta_only():
    folder = SAMPLES / "rocprofv3-csv" / "sdk-docs-2025-08-rocm7.0"
    t = _read(folder)
    alloc = _rows(folder / "memory_allocation_trace.csv")
    scratch = _rows(folder / "scratch_memory_trace.csv")
    assert t.meta["memory_allocation"]["rows"] == len(alloc)
    assert t.meta["memory_allocation"]["allocated_bytes"] == sum(
        int(r["Allocation_Size"]) for r in alloc)
    assert t.meta["scratch_memory"]["rows"] == len(scratch)
    assert t.meta["layout"] == t.meta["tool_version"] == ">=7.0"
    json.dumps(t.meta)
    validate(t)


def test_sample_layouts():
    base = SAMPLES / "rocprofv3-csv"
    assert _read(base / "sdk-docs-2024-07-rocm6.2").meta["layout"] == "<=6.2"
    assert _read(base / "sdk-docs-2024-10-rocm6.3").meta["layout"] == "6.3"
    t62 = _read(base / "sdk-docs-2024-07-rocm6.2")
    # 6.2 raw queue pointer -> small queue id, raw text kept
    assert t62.queues.strings("raw_id") == ["139690710949888"]
    assert t62.kernels.numpy("queue").tolist() == [0]
    validate(t62)


def test_sample_counters_link_to_kernels_by_dispatch():
    folder = SAMPLES / "rocprofv3-csv" / "sdk-docs-2024-10-rocm6.3"
    t = _read(folder)
    ki = t.counters.numpy("kernel_index", fill=-1).astype(int)
    kd = t.kernels.numpy("dispatch_id", fill=-1).astype(int)
    knames = t.kernels.strings("name")
    raw = _rows(folder / "counter_collection.csv")
    assert (ki >= 0).all()
    for r, k in zip(raw, ki.tolist()):
        assert kd[k] == int(r["Dispatch_Id"])
        assert knames[k] == r["Kernel_Name"]
    validate(t)


def test_sniff_samples_and_others():
    r = get_reader(READER)
    for d in DIRS:
        assert r.sniff(d) >= 0.9
        assert r.sniff(d / "kernel_trace.csv") >= 0.9
        assert find_reader(d).name == READER
        assert r.sniff(d / "hip_api_stats.csv" if (d / "hip_api_stats.csv").exists()
                       else d / "hip_stats.csv") == 0
    not_mine = [
        SAMPLES / "legacy-rocprof/spatter-kernel-stats/results.csv",
        SAMPLES / "rocprof-compute/vcopy-MI200-rocprofv1/pmc_perf.csv",
        SAMPLES / "rocprof-compute/vcopy-MI300X-rocpd/pmc_perf.csv",
        SAMPLES / "rocprof-compute/vcopy-MI350-rocprofv3/pmc_perf_0.csv",
        SAMPLES / "rocprof-compute/vcopy-MI300X-rocprofv2/timestamps.csv",
        SAMPLES / "ncu-csv/h200-generated/ncu_raw.csv",
        SAMPLES / "rocprof-compute/vcopy-MI300X-rocpd",
        SAMPLES / "legacy-rocprof/spatter-kernel-stats",
    ]
    for p in not_mine:
        assert r.sniff(p) == 0, p


# --------------------------------------------------------------------------- hand-written sets

H62 = ["Kind", "Agent_Id", "Queue_Id", "Kernel_Id", "Kernel_Name", "Correlation_Id",
       "Start_Timestamp", "End_Timestamp", "Private_Segment_Size", "Group_Segment_Size",
       "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X",
       "Grid_Size_Y", "Grid_Size_Z"]
H70 = ["Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id",
       "Kernel_Name", "Correlation_Id", "Start_Timestamp", "End_Timestamp", "LDS_Block_Size",
       "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count", "Workgroup_Size_X",
       "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"]
HAPI = ["Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id", "Start_Timestamp",
        "End_Timestamp"]
HAGENT = ["Node_Id", "Logical_Node_Id", "Agent_Type", "Cpu_Cores_Count", "Simd_Count",
          "Cu_Count", "Gpu_Id", "Name", "Vendor_Name", "Product_Name", "Model_Name"]


def write_csv(path: Path, header: list[str], rows: list[dict], end: str = "\n") -> Path:
    """rocprofv3 style: header and strings quoted, numbers bare."""
    path.parent.mkdir(parents=True, exist_ok=True)

    def cell(v):
        if v is None:
            return ""
        if isinstance(v, str):
            return '"' + v.replace('"', '""') + '"'
        return str(v)

    lines = [",".join(f'"{h}"' for h in header)]
    lines += [",".join(cell(r.get(h)) for h in header) for r in rows]
    path.write_text("\n".join(lines) + end)
    return path


def k70(i, name="k", agent="Agent 4", queue=1, stream=1, tid=500, corr=None, start=None,
        dur=1000, **kw):
    start = 1_000_000_000_000 + i * 10_000 if start is None else start
    r = {"Kind": "KERNEL_DISPATCH", "Agent_Id": agent, "Queue_Id": queue, "Stream_Id": stream,
         "Thread_Id": tid, "Dispatch_Id": i + 1, "Kernel_Id": 7, "Kernel_Name": name,
         "Correlation_Id": i + 1 if corr is None else corr, "Start_Timestamp": start,
         "End_Timestamp": start + dur, "LDS_Block_Size": 512, "Scratch_Size": 16,
         "VGPR_Count": 32, "Accum_VGPR_Count": 4, "SGPR_Count": 24, "Workgroup_Size_X": 256,
         "Workgroup_Size_Y": 1, "Workgroup_Size_Z": 1, "Grid_Size_X": 4096,
         "Grid_Size_Y": 2, "Grid_Size_Z": 1}
    r.update(kw)
    return r


def api(i, pid, name="hipLaunchKernel", domain="HIP_RUNTIME_API_EXT", start=None, corr=None):
    start = 1_000_000_000_000 + i * 10_000 - 5_000 if start is None else start
    return {"Domain": domain, "Function": name, "Process_Id": pid, "Thread_Id": pid,
            "Correlation_Id": i + 1 if corr is None else corr, "Start_Timestamp": start,
            "End_Timestamp": start + 2_000}


def test_header_drift_70_reordered(tmp_path):
    header = list(reversed(H70))
    names = ['void f<int, 2>(int*, "q", float)', "_Z3gemmPfS_i", "k,with,commas"]
    rows = [k70(i, name=names[i % 3], queue=1 + i % 2, stream=i % 2) for i in range(6)]
    write_csv(tmp_path / "4242_kernel_trace.csv", header, rows)
    t = _read(tmp_path / "4242_kernel_trace.csv")
    assert t.kernels.strings("name") == [r["Kernel_Name"] for r in rows]
    assert t.kernels.numpy("start").tolist() == [r["Start_Timestamp"] for r in rows]
    assert t.kernels.numpy("grid_x").tolist() == [4096] * 6      # work-items, as printed
    assert t.kernels.numpy("grid_y").tolist() == [2] * 6
    assert t.kernels.numpy("block_x").tolist() == [256] * 6
    assert t.kernels.numpy("lds_bytes").tolist() == [512] * 6
    assert t.kernels.numpy("scratch_bytes").tolist() == [16] * 6
    assert t.kernels.numpy("vgpr").tolist() == [32] * 6
    assert t.kernels.numpy("accum_vgpr").tolist() == [4] * 6
    assert t.kernels.numpy("sgpr").tolist() == [24] * 6
    assert t.kernels.numpy("dispatch_id").tolist() == list(range(1, 7))
    assert t.kernels.numpy("pid").tolist() == [4242] * 6        # from the file prefix
    assert t.kernels.numpy("stream").tolist() == [i % 2 for i in range(6)]
    assert t.kernels.numpy("queue").tolist() == [1 + i % 2 for i in range(6)]
    assert t.meta["layout"] == ">=7.0"
    assert t.meta["pids"] == [4242]
    assert t.devices.strings("name") == ["GPU (Agent 4)"]
    assert t.devices.strings("raw_id") == ["Agent 4"]
    assert len(t.streams) == 2 and set(t.streams.numpy("queue").tolist()) == {1, 2}
    validate(t)


def test_header_drift_62_reordered_and_missing_columns(tmp_path):
    header = [h for h in H62 if h not in ("Grid_Size_Z", "Kernel_Id")]
    header = header[::2] + header[1::2]
    ptrs = [139690710949888, 139690710950000]
    rows = [{"Kind": "KERNEL_DISPATCH", "Agent_Id": 1, "Queue_Id": ptrs[i % 2],
             "Kernel_Name": f"kern{i}(float*, int)", "Correlation_Id": 0,
             "Start_Timestamp": 100 + i * 50, "End_Timestamp": 120 + i * 50,
             "Private_Segment_Size": 64, "Group_Segment_Size": 1024, "Workgroup_Size_X": 4,
             "Workgroup_Size_Y": 4, "Workgroup_Size_Z": 1, "Grid_Size_X": 1024,
             "Grid_Size_Y": 1024} for i in range(4)]
    write_csv(tmp_path / "kernel_trace.csv", header, rows)
    t = _read(tmp_path)
    assert len(t.kernels) == 4
    assert t.kernels.numpy("scratch_bytes").tolist() == [64] * 4     # Private_Segment_Size
    assert t.kernels.numpy("lds_bytes").tolist() == [1024] * 4       # Group_Segment_Size
    assert not t.kernels.has("grid_z")                               # missing -> null
    assert not t.kernels.has("correlation_id")                       # 0 = none
    assert not t.kernels.has("pid") and not t.kernels.has("stream")
    assert t.kernels.numpy("queue").tolist() == [0, 1, 0, 1]         # pointers -> 0, 1
    assert t.queues.strings("raw_id") == [str(p) for p in ptrs]
    assert t.meta["layout"] == "<=6.2"
    validate(t)


def test_agent_info_normalises_devices(tmp_path):
    agents = [
        {"Node_Id": 0, "Logical_Node_Id": 0, "Agent_Type": "CPU", "Cu_Count": 96,
         "Name": "AMD EPYC", "Vendor_Name": "CPU", "Product_Name": "AMD EPYC 9654"},
        {"Node_Id": 2, "Logical_Node_Id": 1, "Agent_Type": "GPU", "Cu_Count": 304,
         "Name": "gfx942", "Vendor_Name": "AMD", "Product_Name": "AMD Instinct MI300X"},
        {"Node_Id": 3, "Logical_Node_Id": 2, "Agent_Type": "GPU", "Cu_Count": 304,
         "Name": "gfx942", "Vendor_Name": "AMD", "Product_Name": "AMD Instinct MI300X"},
    ]
    write_csv(tmp_path / "77_agent_info.csv", HAGENT, agents)
    write_csv(tmp_path / "77_kernel_trace.csv", H70,
              [k70(0, agent="Agent 2"), k70(1, agent="Agent 2"), k70(2, agent="Agent 1")])
    write_csv(tmp_path / "77_memory_copy_trace.csv",
              ["Kind", "Direction", "Stream_Id", "Source_Agent_Id", "Destination_Agent_Id",
               "Correlation_Id", "Start_Timestamp", "End_Timestamp"],
              [{"Kind": "MEMORY_COPY", "Direction": "MEMORY_COPY_HOST_TO_DEVICE",
                "Stream_Id": 0, "Source_Agent_Id": "Agent 0", "Destination_Agent_Id": "Agent 2",
                "Correlation_Id": 9, "Start_Timestamp": 5, "End_Timestamp": 9},
               {"Kind": "MEMORY_COPY", "Direction": "MEMORY_COPY_DEVICE_TO_DEVICE",
                "Stream_Id": 0, "Source_Agent_Id": "Agent 1", "Destination_Agent_Id": "Agent 2",
                "Correlation_Id": 10, "Start_Timestamp": 15, "End_Timestamp": 19}])
    t = _read(tmp_path)
    assert t.devices.numpy("index").tolist() == [0, 1]              # GPUs in logical order
    assert t.devices.strings("name") == ["AMD Instinct MI300X"] * 2
    assert t.devices.strings("arch") == ["gfx942"] * 2
    assert t.devices.numpy("compute_units").tolist() == [304, 304]
    assert t.devices.strings("raw_id") == ["Agent 1", "Agent 2"]
    assert t.kernels.numpy("device").tolist() == [1, 1, 0]
    assert t.copies.strings("direction") == ["HtoD", "PtoP"]
    assert t.copies.numpy("src_device", fill=-1).tolist() == [-1, 0]   # CPU agent: null
    assert t.copies.numpy("dst_device").tolist() == [1, 1]
    assert t.copies.numpy("device").tolist() == [1, 0]
    assert not t.copies.has("bytes")
    validate(t)


def test_type_relative_and_integer_agent_ids(tmp_path):
    agents = [
        {"Node_Id": 0, "Logical_Node_Id": 0, "Agent_Type": "CPU", "Name": "cpu"},
        {"Node_Id": 1, "Logical_Node_Id": 1, "Agent_Type": "GPU", "Cu_Count": 110,
         "Name": "gfx90a", "Product_Name": "AMD Instinct MI210"},
    ]
    write_csv(tmp_path / "a" / "5_agent_info.csv", HAGENT, agents)
    write_csv(tmp_path / "a" / "5_kernel_trace.csv", H70, [k70(0, agent="GPU-0")])
    t = _read(tmp_path / "a")
    assert t.devices.strings("name") == ["AMD Instinct MI210"]
    assert t.devices.strings("raw_id") == ["GPU-0"]
    write_csv(tmp_path / "b" / "5_agent_info.csv", HAGENT, agents)
    write_csv(tmp_path / "b" / "5_kernel_trace.csv", H62,
              [{"Kind": "KERNEL_DISPATCH", "Agent_Id": 1, "Queue_Id": 1, "Kernel_Name": "x",
                "Start_Timestamp": 1, "End_Timestamp": 2}])
    t = _read(tmp_path / "b")
    assert t.devices.strings("name") == ["AMD Instinct MI210"]
    assert t.devices.strings("raw_id") == ["1"]
    validate(t)


def test_multi_process_folder_with_host_subfolders(tmp_path):
    """Two processes on host A (same correlation ids in both), one on host B: merged,
    each kernel linked to its own process's call."""
    root = tmp_path / "run"
    plan = {("hostA", 100): 5, ("hostA", 200): 3, ("hostB", 300): 4}
    for (host, pid), n in plan.items():
        d = root / host
        write_csv(d / f"{pid}_kernel_trace.csv", H70,
                  [k70(i, name=f"kern_{pid}", tid=pid, start=pid * 1_000_000 + i * 10_000)
                   for i in range(n)])
        calls = []
        for i in range(n):
            calls.append(api(i, pid, start=pid * 1_000_000 + i * 10_000 - 3_000))
            calls.append(api(i, pid, name="hipGetLastError", corr=1000 + i,
                             start=pid * 1_000_000 + i * 10_000 - 100))
        write_csv(d / f"{pid}_hip_api_trace.csv", HAPI, calls)
        write_csv(d / f"{pid}_marker_api_trace.csv", HAPI, [
            {"Domain": "MARKER_CORE_API", "Function": "outer", "Process_Id": pid,
             "Thread_Id": pid, "Correlation_Id": 1, "Start_Timestamp": 10,
             "End_Timestamp": 100},
            {"Domain": "MARKER_CORE_API", "Function": "inner", "Process_Id": pid,
             "Thread_Id": pid, "Correlation_Id": 2, "Start_Timestamp": 20,
             "End_Timestamp": 50},
            {"Domain": "MARKER_CORE_API", "Function": "mark", "Process_Id": pid,
             "Thread_Id": pid, "Correlation_Id": 3, "Start_Timestamp": 30,
             "End_Timestamp": 30},
            {"Domain": "MARKER_CORE_API", "Function": "after", "Process_Id": pid,
             "Thread_Id": pid, "Correlation_Id": 4, "Start_Timestamp": 100,
             "End_Timestamp": 120}])
    write_csv(root / "hostA" / "100_kernel_stats.csv", ["Name", "Calls"], [{"Name": "x",
                                                                            "Calls": 1}])
    t = _read(root)
    assert len(t.kernels) == sum(plan.values())
    assert len(t.api) == 2 * sum(plan.values())
    assert t.meta["pids"] == [100, 200, 300]
    assert t.meta["hosts"] == ["hostA", "hostB"]
    k_pid = t.kernels.numpy("pid").tolist()
    a_idx = t.kernels.numpy("api_index").astype(int).tolist()
    a_pid = t.api.numpy("pid").tolist()
    a_name = t.api.strings("name")
    a_corr = t.api.numpy("correlation_id").tolist()
    k_corr = t.kernels.numpy("correlation_id").tolist()
    for kp, ai, kc in zip(k_pid, a_idx, k_corr):
        assert a_pid[ai] == kp and a_corr[ai] == kc and a_name[ai] == "hipLaunchKernel"
    assert [n.split("_")[1] for n in t.kernels.strings("name")] == [str(p) for p in k_pid]
    # Agent 4 on host A and Agent 4 on host B are different GPUs
    assert len(t.devices) == 2
    assert set(t.devices.strings("host")) == {"hostA", "hostB"}
    dev_host = dict(zip(t.devices.numpy("index").tolist(), t.devices.strings("host")))
    for d, kp in zip(t.kernels.numpy("device").tolist(), k_pid):
        assert dev_host[d] == ("hostB" if kp == 300 else "hostA")
    # queues of different processes are different queues
    assert len(t.queues) == 3
    assert len(t.streams) == 3
    # markers: depth per (pid, tid)
    depth = dict(zip(zip(t.markers.numpy("pid").tolist(), t.markers.strings("name")),
                     t.markers.numpy("depth").tolist()))
    for pid in (100, 200, 300):
        assert depth[(pid, "outer")] == 0 and depth[(pid, "inner")] == 1
        assert depth[(pid, "mark")] == 2 and depth[(pid, "after")] == 0
    assert not any("stats" in s for s in t.meta["sources"])
    assert not any("no matching" in w for w in t.warnings)
    # one file of a process opens that process's set only (issue 13 item 12)
    one = _read(root / "hostA" / "200_kernel_trace.csv")
    assert sorted(set(one.kernels.numpy("pid").tolist())) == [200]
    validate(t)
    validate(one)


def test_unmatched_correlation_ids_are_reported(tmp_path):
    write_csv(tmp_path / "9_kernel_trace.csv", H70, [k70(i) for i in range(5)])
    write_csv(tmp_path / "9_hip_api_trace.csv", HAPI, [api(i, 9) for i in range(3)])
    t = _read(tmp_path)
    assert t.kernels.valid("api_index").tolist() == [True, True, True, False, False]
    assert any("2 kernels have no matching API call" in w for w in t.warnings)
    validate(t)


def test_counters_without_kernel_trace_build_kernels(tmp_path):
    h = ["Correlation_Id", "Dispatch_Id", "Agent_Id", "Queue_Id", "Process_Id", "Thread_Id",
         "Grid_Size", "Kernel_Id", "Kernel_Name", "Workgroup_Size", "LDS_Block_Size",
         "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count", "Counter_Name",
         "Counter_Value", "Start_Timestamp", "End_Timestamp"]
    rows = []
    for d in (1, 2, 3):
        for c in ("SQ_WAVES", "GRBM_COUNT"):
            rows.append({"Correlation_Id": d, "Dispatch_Id": d, "Agent_Id": "Agent 1",
                         "Queue_Id": 1, "Process_Id": 11, "Thread_Id": 11, "Grid_Size": 1024,
                         "Kernel_Id": 3, "Kernel_Name": f"k{d}", "Workgroup_Size": 64,
                         "LDS_Block_Size": 0, "Scratch_Size": 0, "VGPR_Count": 8,
                         "Accum_VGPR_Count": 0, "SGPR_Count": 16, "Counter_Name": c,
                         "Counter_Value": 16384.0 + d, "Start_Timestamp": 1000 * d,
                         "End_Timestamp": 1000 * d + 500})
    write_csv(tmp_path / "with" / "11_counter_collection.csv", h, rows)
    t = _read(tmp_path / "with")
    assert len(t.kernels) == 3 and len(t.counters) == 6
    assert t.kernels.strings("name") == ["k1", "k2", "k3"]
    ki = t.counters.numpy("kernel_index").astype(int).tolist()
    assert [t.kernels.strings("name")[k] for k in ki] == [r["Kernel_Name"] for r in rows]
    assert t.counters.numpy("value").tolist() == [r["Counter_Value"] for r in rows]
    validate(t)
    # 6.3-style counters without timestamps: no kernels invented, counters kept
    h63 = [c for c in h if c not in ("Start_Timestamp", "End_Timestamp", "Accum_VGPR_Count")]
    write_csv(tmp_path / "without" / "11_counter_collection.csv", h63, rows)
    t = _read(tmp_path / "without")
    assert len(t.kernels) == 0 and len(t.counters) == 6
    assert not t.counters.has("kernel_index")
    assert any("no Start/End_Timestamp" in w for w in t.warnings)
    validate(t)


def test_torn_last_line_loads_whole_rows(tmp_path):
    p = write_csv(tmp_path / "3_kernel_trace.csv", H70, [k70(i, name="a,b") for i in range(4)])
    data = p.read_bytes()
    p.write_bytes(data[: len(data) - 40])          # cut inside the last row
    t = _read(p)
    assert len(t.kernels) == 3
    assert any("cut short" in w and "line 5" in w for w in t.warnings)
    assert sum(t.meta["dropped"].values()) == 1
    validate(t)
    # a last line without a newline but complete is kept (rocprofv3 doc excerpts)
    p2 = write_csv(tmp_path / "b" / "3_kernel_trace.csv", H70, [k70(i) for i in range(4)],
                   end="")
    t2 = _read(p2)
    assert len(t2.kernels) == 4 and not t2.meta.get("dropped")
    # cut inside a quoted name
    raw = p2.read_bytes()
    cut = raw.rfind(b'"k"') + 2
    p2.write_bytes(raw[:cut])
    t3 = _read(p2)
    assert len(t3.kernels) == 3 and t3.meta["dropped"]
    validate(t3)


@pytest.mark.parametrize("content,what", [
    (b"", "empty"),
    (b"\x00\x01\x02\xff\xfe garbage \x89PNG\r\n\x1a\n" * 20, "binary"),
    (b'"Index","KernelName","gpu-id","queue-id"\n0,"k",2,0\n', "legacy header"),
    (b"hello, world\n1,2\n", "not a header"),
])
def test_bad_files_raise_trace_format_error(tmp_path, content, what):
    p = tmp_path / "kernel_trace.csv"
    p.write_bytes(content)
    with pytest.raises(TraceFormatError) as exc:
        _read(p)
    assert str(p) in str(exc.value)
    assert "line 1" in str(exc.value)
    # also when the bad file is one member of a folder
    write_csv(tmp_path / "hip_api_trace.csv", HAPI, [api(0, 1)])
    with pytest.raises(TraceFormatError) as exc:
        _read(tmp_path)
    assert str(p) in str(exc.value)


def test_bad_rows_name_the_line(tmp_path):
    p = write_csv(tmp_path / "kernel_trace.csv", H70, [k70(i) for i in range(5)])
    lines = p.read_text().splitlines()
    lines[3] = lines[3].replace('"KERNEL_DISPATCH",', "", 1)      # a short row: line 4
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceFormatError) as exc:
        _read(p)
    assert str(p) in str(exc.value) and "line 4" in str(exc.value)
    p = write_csv(tmp_path / "b" / "kernel_trace.csv", H70,
                  [k70(i) for i in range(3)] + [k70(3, Start_Timestamp="soon")])
    with pytest.raises(TraceFormatError) as exc:
        _read(p)
    assert "line 5" in str(exc.value) and "Start_Timestamp" in str(exc.value)


def test_values_too_wide_for_the_schema_become_null(tmp_path):
    p = write_csv(tmp_path / "kernel_trace.csv", H70,
                  [k70(0), k70(1, Grid_Size_X=4_294_967_040, VGPR_Count=70000)])
    t = _read(p)
    assert t.kernels.valid("grid_x").tolist() == [True, False]
    assert t.kernels.valid("vgpr").tolist() == [True, False]
    assert any("do not fit" in w for w in t.warnings)
    validate(t)


def test_folder_without_traces(tmp_path):
    write_csv(tmp_path / "1_kernel_stats.csv", ["Name", "Calls"], [{"Name": "k", "Calls": 1}])
    assert get_reader(READER).sniff(tmp_path) == 0
    with pytest.raises(TraceFormatError) as exc:
        _read(tmp_path)
    assert str(tmp_path) in str(exc.value)


def test_cli_report_json(capsys):
    folder = SAMPLES / "rocprofv3-csv" / "sdk-docs-2024-10-rocm6.3"
    assert main(["report", "--json", str(folder)]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["format"] == READER
    assert rep["kernel_count"] == len(_rows(folder / "kernel_trace.csv"))
    assert rep["marker_count"] == len(_rows(folder / "marker_api_trace.csv"))


def test_open_trace_of_a_copied_sample(tmp_path):
    """The cache and open_trace path: a copy of a sample behaves like the original."""
    src = SAMPLES / "rocprofv3-csv" / "sdk-docs-2025-08-rocm7.0"
    dst = tmp_path / "copy"
    shutil.copytree(src, dst)
    t = open_trace(dst, use_cache=True)
    assert len(t.kernels) == len(_read(src).kernels)
    validate(t)


TWIN = DATA / "rocprofv3-csv-twin"
TWIN_EXPECTED = DATA / "fixtures" / "expected.json"


@pytest.mark.skipif(not (TWIN.exists() and TWIN_EXPECTED.exists()),
                    reason="tests/data/rocprofv3-csv-twin not generated")
def test_twin_matches_expected_json():
    exp = json.loads(TWIN_EXPECTED.read_text())
    t = _read(TWIN)
    assert t.meta["pids"] == sorted(exp["pids"])
    assert t.meta["host"] == exp["hostname"]
    procs = exp["processes"]
    assert len(t.kernels) == sum(p["kernel_count"] for p in procs.values())
    assert len(t.api) == sum(p["api_call_count"] for p in procs.values())
    assert len(t.markers) == sum(p["markers"]["count"] for p in procs.values())
    assert len(t.copies) == sum(p["memory_copies"]["count"] for p in procs.values())
    assert len(t.counters) == sum(p["counters"]["row_count"] for p in procs.values())
    # the GPUs of agent_info (same host: one device per GPU agent, not per process)
    gpus = {(a["node_id"], a["product_name"]) for p in procs.values() for a in p["agents"]
            if a["type"] == "GPU"}
    assert len(t.devices) == len(gpus)
    assert sorted(t.devices.strings("name")) == sorted(n for _i, n in gpus)
    k_pid = t.kernels.numpy("pid").astype(int)
    k_disp = t.kernels.numpy("dispatch_id").astype(int)
    k_api = t.kernels.numpy("api_index", fill=-1).astype(int)
    a_name, a_corr = t.api.strings("name"), t.api.numpy("correlation_id").astype(int)
    a_pid = t.api.numpy("pid").astype(int)
    raw_q = t.queues.strings("raw_id")
    q_key = {(d, q): r for d, q, r in zip(t.queues.numpy("device").tolist(),
                                          t.queues.numpy("queue").tolist(), raw_q)}
    k_dev, k_q = t.kernels.numpy("device").tolist(), t.kernels.numpy("queue").tolist()
    for pid_s, p in procs.items():
        pid = int(pid_s)
        mine = np.nonzero(k_pid == pid)[0]
        assert len(mine) == p["kernel_count"]
        row_of = {int(k_disp[i]): i for i in mine}
        for disp, corr, fn in p["kernel_api_pairs"]:
            i = row_of[disp]
            assert k_api[i] >= 0, (pid, disp)
            assert (a_pid[k_api[i]], a_corr[k_api[i]], a_name[k_api[i]]) == (pid, corr, fn)
        for disp in p["graph_launch"]["dispatch_ids"]:
            assert a_name[k_api[row_of[disp]]] == "hipGraphLaunch"
        by_q = Counter(q_key[(k_dev[i], k_q[i])] for i in mine)
        assert by_q == Counter({str(k): v for k, v in p["kernels_by_queue_id"].items()})
        for nk in p["named_kernels"].values():
            i = row_of[nk["dispatch_id"]]
            assert int(t.kernels.numpy("end")[i] - t.kernels.numpy("start")[i]) == \
                nk["duration"]
            assert t.kernels.strings("name")[i] == nk["name"]
        # roctx ranges: depth from the intervals
        m_pid = t.markers.numpy("pid").astype(int)
        m_rows = {(n, int(s)): int(d) for n, s, d, mp in zip(
            t.markers.strings("name"), t.markers.numpy("start"), t.markers.numpy("depth"),
            m_pid) if mp == pid}
        for r in p["markers"]["rows"]:
            assert (r["message"], r["start"]) in m_rows
            if r["start"] != r["end"]:
                assert m_rows[(r["message"], r["start"])] == r["depth"], r["message"]
    # counters all linked to their dispatch
    assert t.counters.valid("kernel_index").all()
    assert not any("no matching" in w for w in t.warnings), t.warnings
    validate(t)


# --------------------------------------------------------------------------- W3, W9

SDK70 = SAMPLES / "rocprofv3-csv" / "sdk-docs-2025-08-rocm7.0"


@pytest.mark.parametrize("damage", ["zeroed", "header"])
def test_member_file_skipped_is_named(tmp_path, damage):
    """W3: a zeroed member file, or one with a damaged header, vanished from the set
    silently (API calls 111 -> 98)."""
    d = tmp_path / "s"
    shutil.copytree(SDK70, d)
    member = d / "rocpd-to-csv.csv"
    member.chmod(0o644)
    if damage == "zeroed":
        member.write_bytes(b"")
    else:
        text = member.read_text()
        member.write_text(text.replace("Start_Timestamp", "Start_Timestamq", 1))
    t = open_trace(d)
    exp = expected(d)          # plain code: the damaged file holds no readable rows
    assert len(t.api) == exp["n_api"] < expected(SDK70)["n_api"]
    why = "empty" if damage == "zeroed" else "header not recognised"
    hits = [w for w in t.warnings if f"skipped {member}: {why}" in w]
    assert len(hits) == 1, t.warnings
    assert not any("skipped" in w for w in open_trace(SDK70).warnings)


def test_folder_linked_to_itself_is_read_once(tmp_path):
    """W9: a link to the folder itself made 82 kernels 328; a second name of a file
    must not double it either."""
    d = tmp_path / "v"
    shutil.copytree(TWIN / "node01", d)
    (d / "again").symlink_to(".")
    (d / "sub").mkdir()
    (d / "sub" / "up").symlink_to("..")
    (d / "9999_kernel_trace.csv").symlink_to("4242_kernel_trace.csv")
    t = open_trace(d)
    files = sorted((TWIN / "node01").glob("*_kernel_trace.csv"))
    assert len(files) == 2
    assert len(t.kernels) == sum(len(_rows(f)) for f in files)
    with open(TWIN / "node01" / "4242_counter_collection.csv", newline="") as fh:
        n_counters = sum(1 for _ in csv.DictReader(fh))
    with open(TWIN / "node01" / "4243_counter_collection.csv", newline="") as fh:
        n_counters += sum(1 for _ in csv.DictReader(fh))
    assert len(t.counters) == n_counters
    srcs = [Path(s).resolve() for s in t.meta["sources"]]
    assert len(srcs) == len(set(srcs)) == len(list((TWIN / "node01").glob("*.csv")))
    assert not any("shared" in w for w in t.warnings)


# --------------------------------------------------------------------------- issue 13 item 12
def test_one_file_opens_its_own_run_the_folder_all(tmp_path):
    """Two runs in one folder (111_*, 222_* a day later): one file opens its own prefix's
    set, the folder opens both, and open_trace says the runs never overlap in time."""
    day = 86_400 * 10**9
    for pid, n, t0 in ((111, 3, 0), (222, 5, day)):
        write_csv(tmp_path / f"{pid}_kernel_trace.csv", H70,
                  [k70(i, start=1_000_000_000_000 + t0 + i * 10_000) for i in range(n)])
        write_csv(tmp_path / f"{pid}_hip_api_trace.csv", HAPI,
                  [api(i, pid, start=1_000_000_000_000 + t0 + i * 10_000 - 5_000)
                   for i in range(n)])
    raw = {pid: _rows(tmp_path / f"{pid}_kernel_trace.csv") for pid in (111, 222)}
    one = _read(tmp_path / "111_kernel_trace.csv")
    assert len(one.kernels) == len(raw[111])
    assert set(one.kernels.numpy("pid").tolist()) == {111}
    assert one.kernels.numpy("start").tolist() == [int(r["Start_Timestamp"]) for r in raw[111]]
    assert sorted(Path(s).name for s in one.meta["sources"]) == [
        "111_hip_api_trace.csv", "111_kernel_trace.csv"]
    assert len(_read(tmp_path / "222_hip_api_trace.csv").kernels) == len(raw[222])
    both = open_trace(tmp_path)
    assert len(both.kernels) == len(raw[111]) + len(raw[222])
    assert any("do not overlap in time" in w for w in both.warnings)
    assert not any("do not overlap in time" in w
                   for w in open_trace(tmp_path / "111_kernel_trace.csv").warnings)
    validate(one)
