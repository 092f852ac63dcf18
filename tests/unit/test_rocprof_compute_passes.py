"""rocprof-compute's per-pass long-form files ``results_pmc_perf_<n>.csv[.gz]`` (issue 13
item 5): sniffed by header and content, never by name alone. The header is the one
rocprof-compute writes from rocpd's counters_collection view (``GPU_ID, Dispatch_ID,
..., Counter_Name, Counter_Value``, as in the real vcopy-MI300X-rocpd sample), optionally
with a leading GUID; the rows are hand-made for an RDNA 3.5 (gfx1151) run. Expected
figures come from the written rows with the csv module."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import pytest

from hipscope.parsers import TraceFormatError, find_reader, open_trace
from hipscope.parsers._validate import validate

LONG = ["GPU_ID", "Dispatch_ID", "Grid_Size", "Workgroup_Size", "LDS_Per_Workgroup",
        "Scratch_Per_Workitem", "Arch_VGPR", "Accum_VGPR", "SGPR", "Kernel_Name",
        "Start_Timestamp", "End_Timestamp", "Kernel_ID", "Counter_Name", "Counter_Value"]
GEMM = "void gemm<__half, 16>(__half*, __half const*, int)"
KERNELS = [(GEMM, 3), ("reduce_kernel(float*, int)", 5), (GEMM, 3)]


def _pass(path: Path, counters: list[str], t0: int, guid: bool = False) -> Path:
    """One pass: every dispatch (1, 2, 3) x every counter, rocprof-compute's columns."""
    head = (["GUID"] if guid else []) + LONG
    rows = []
    for d, (name, kid) in enumerate(KERNELS, start=1):
        start = t0 + d * 100_000
        for c, counter in enumerate(counters):
            row = [1, d, 1048576, 256, 0, 0, 32, 0, 24, name, start, start + 7_000 + d, kid,
                   counter, float(d * 1000 + c)]
            rows.append((["0197a1b2-0000-7000-8000-000000000001"] if guid else []) + row)
    text = [",".join(head)] + [",".join(f'"{v}"' if isinstance(v, str) else str(v)
                                        for v in r) for r in rows]
    data = ("\n".join(text) + "\n").encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


def _raw(path: Path) -> list[dict[str, str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", newline="") as fh:
        return list(csv.DictReader(fh))


def _workload(tmp_path: Path, suffix: str = ".csv", guid: bool = False) -> Path:
    wl = tmp_path / "workloads" / "app" / "gfx1151"
    _pass(wl / f"results_pmc_perf_0{suffix}", ["SQ_WAVES", "GRBM_COUNT"], 10**15, guid)
    _pass(wl / f"results_pmc_perf_1{suffix}", ["SQ_BUSY_CYCLES"], 2 * 10**15, guid)
    return wl


@pytest.mark.parametrize("suffix, guid", [(".csv", False), (".csv", True), (".csv.gz", False)])
def test_results_pass_files_are_a_workload(tmp_path: Path, suffix: str, guid: bool):
    """A results_pmc_perf_0.csv went to the rocprofv3 reader (0 kernels, tool version
    "6.3") or to none; it is a rocprof-compute workload: kernels = pass 0's dispatches,
    counters = every pass's values for them."""
    wl = _workload(tmp_path, suffix, guid)
    first, second = (_raw(wl / f"results_pmc_perf_{n}{suffix}") for n in (0, 1))
    for path in (wl / f"results_pmc_perf_0{suffix}", wl):
        assert find_reader(path).name == "rocprof-compute"
        tr = open_trace(path)
        disp = sorted({int(r["Dispatch_ID"]) for r in first})
        assert tr.kernels.numpy("dispatch_id").tolist() == disp
        starts = {int(r["Dispatch_ID"]): int(r["Start_Timestamp"]) for r in first}
        assert tr.kernels.numpy("start").tolist() == [starts[d] for d in disp]
        assert tr.kernels.strings("name") == [
            next(r["Kernel_Name"] for r in first if int(r["Dispatch_ID"]) == d) for d in disp]
        assert len(tr.counters) == len(first) + len(second)
        assert sorted(set(tr.counters.strings("counter"))) == sorted(
            {r["Counter_Name"] for r in first + second})
        assert "GUID" not in tr.counters.strings("counter")
        got = {(int(d), c): v for d, c, v in zip(tr.counters.numpy("dispatch_id"),
                                                  tr.counters.strings("counter"),
                                                  tr.counters.numpy("value"))}
        assert got == {(int(r["Dispatch_ID"]), r["Counter_Name"]): float(r["Counter_Value"])
                       for r in first + second}
        assert tr.meta["tool"] == "rocprof-compute"
        validate(tr)


def test_rocprof_compute_header_with_correlation_id_is_not_rocprofv3(tmp_path: Path):
    p = _pass(tmp_path / "results_pmc_perf_0.csv", ["SQ_WAVES"], 10**15)
    lines = p.read_text().splitlines()
    lines = ["Correlation_Id," + lines[0]] + [f"{i}," + ln for i, ln in enumerate(lines[1:], 1)]
    p.write_text("\n".join(lines) + "\n")
    assert find_reader(p).name == "rocprof-compute"
    assert len(open_trace(p).kernels) == len({r["Dispatch_ID"] for r in _raw(p)})


@pytest.mark.parametrize("name", ["results_pmc_perf_0.csv", "pmc_perf_0.csv"])
def test_the_name_alone_decides_nothing(tmp_path: Path, name: str):
    """A rocprofv3 counter_collection saved as results_pmc_perf_0.csv (or pmc_perf_0.csv)
    is read as one (kernels from its dispatches); an unrelated CSV named
    results_pmc_perf_0.csv is refused in one sentence naming it."""
    h = ["Correlation_Id", "Dispatch_Id", "Agent_Id", "Queue_Id", "Process_Id", "Thread_Id",
         "Grid_Size", "Kernel_Id", "Kernel_Name", "Workgroup_Size", "LDS_Block_Size",
         "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count", "Counter_Name",
         "Counter_Value", "Start_Timestamp", "End_Timestamp"]
    rows = [[d, d, '"Agent 1"', 1, 77, 77, 1024, 3, f'"k{d}"', 64, 0, 0, 8, 0, 16, f'"{c}"',
             "16384.000000", 1000 * d, 1000 * d + 500] for d in (1, 2) for c in ("SQ_WAVES",)]
    v3 = tmp_path / "v3" / name
    v3.parent.mkdir()
    v3.write_text(",".join(f'"{c}"' for c in h) + "\n"
                  + "".join(",".join(map(str, r)) + "\n" for r in rows))
    assert find_reader(v3).name == "rocprofv3-csv"
    tr = open_trace(v3)
    assert tr.kernels.numpy("dispatch_id").tolist() == [1, 2]
    other = tmp_path / "other" / "results_pmc_perf_0.csv"
    other.parent.mkdir()
    other.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(TraceFormatError) as ei:
        open_trace(other)
    assert str(other) in str(ei.value) and "\n" not in str(ei.value)
