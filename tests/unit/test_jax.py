"""JAX / XLA profiler traces (issue 13 item 6): the trace-viewer JSON that
``jax.profiler.trace`` writes is read (kernels on GPU streams, copies, host ops, launch
links, XLA op and module names), never taken as a PyTorch trace with 0 kernels; the
native ``.xplane.pb`` is read into the same tables, and so is the log folder.

Expected figures come from plain json/gzip code over the fixture files:
``jax/cpu/`` is a real CPU recording, ``jax/gpu/`` follows XLA's documented GPU layout
(tests/data/README.md says how each was made).
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from hipscope.parsers import TraceFormatError, open_trace
from hipscope.parsers.base import find_reader
from tests.conftest import DATA, ROOT, SAMPLES

CPU = DATA / "jax/cpu/vm.trace.json.gz"
PERFETTO = DATA / "jax/cpu/perfetto_trace.json.gz"
XPLANE = DATA / "jax/cpu/vm.xplane.pb"
GPU = DATA / "jax/gpu/gpu2.trace.json.gz"


# --------------------------------------------------------------------------- plain json

def raw_events(path: Path) -> list[dict]:
    return json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


def names_of(evs: list[dict]) -> tuple[dict, dict]:
    procs = {e["pid"]: e["args"]["name"] for e in evs
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    return procs, threads


def ns(e: dict) -> tuple[int, int]:
    start = round(e["ts"] * 1000)
    return start, start + round(e["dur"] * 1000)


def gpu_stream_events(path: Path) -> list[tuple[int, int, dict]]:
    """(device ordinal, stream id, event) of every X event on a ``Stream #`` line."""
    evs = raw_events(path)
    procs, threads = names_of(evs)
    out = []
    for e in evs:
        if e.get("ph") != "X":
            continue
        m = re.fullmatch(r"/device:GPU:(\d+)", procs.get(e["pid"], ""))
        s = re.match(r"Stream #(\d+)", threads.get((e["pid"], e["tid"]), ""))
        if m and s:
            out.append((int(m.group(1)), int(s.group(1)), e))
    return out


def raw_kernels(path: Path) -> list[tuple[int, int, dict]]:
    return [x for x in gpu_stream_events(path) if not x[2]["name"].startswith(("Memcpy",
                                                                               "Memset"))]


def rows(table, *cols: str) -> list[tuple]:
    data = {c: table.column(c).to_pylist() for c in cols}
    return sorted(zip(*(data[c] for c in cols)), key=repr)


# --------------------------------------------------------------------------- sniffing

@pytest.mark.parametrize("path", [CPU, PERFETTO, GPU], ids=["cpu", "perfetto", "gpu"])
def test_jax_traces_go_to_the_jax_reader_not_kineto(path):
    assert find_reader(path).name == "jax"
    assert open_trace(path).format == "jax"


KINETO_FILES = sorted(p for p in (SAMPLES / "kineto").rglob("*.json*") if p.is_file())


@pytest.mark.parametrize("path", KINETO_FILES, ids=[p.parent.name for p in KINETO_FILES])
def test_kineto_samples_stay_with_kineto(path):
    assert find_reader(path).name == "kineto"


# --------------------------------------------------------------------------- real CPU trace

@pytest.mark.parametrize("path", [CPU, PERFETTO], ids=["trace-viewer", "perfetto"])
def test_real_cpu_trace_host_ops_read_with_a_no_kernels_warning(path):
    evs = raw_events(path)
    procs, threads = names_of(evs)
    xs = [e for e in evs if e.get("ph") == "X"]
    tr = open_trace(path)
    assert len(tr.kernels) == 0 and len(tr.api) == 0
    assert rows(tr.markers, "name", "start", "end", "tid") == sorted(
        ((e["name"], *ns(e), e["tid"]) for e in xs), key=repr)
    python = Counter(e["name"] for e in xs if e["name"].startswith("$"))
    dom = Counter(n for n, d in zip(tr.markers.column("name").to_pylist(),
                                    tr.markers.column("domain").to_pylist())
                  if d == "python_function")
    assert dom == python and python                   # jax's Python tracer frames
    assert {"step0", "step1", "step2"} <= {e["name"] for e in xs}
    assert set(procs.values()) == {"/host:CPU"} and len(threads) == 2
    assert any("recorded no kernels" in w and str(path) in w for w in tr.warnings)


def test_perfetto_json_and_trace_viewer_json_read_the_same():
    a, b = open_trace(CPU), open_trace(PERFETTO)
    assert rows(a.markers, "name", "start", "end") == rows(b.markers, "name", "start", "end")


# --------------------------------------------------------------------------- GPU layout

def test_gpu_kernels_on_their_device_and_stream_with_exact_times():
    expected = sorted(((e["name"], dev, stream, *ns(e)) for dev, stream, e in
                       raw_kernels(GPU)), key=repr)
    tr = open_trace(GPU)
    assert len(expected) == 17
    assert rows(tr.kernels, "name", "device", "stream", "start", "end") == expected
    assert sorted(tr.devices.column("index").to_pylist()) == [0, 1]
    assert tr.devices.column("name").to_pylist() == ["/device:GPU:0", "/device:GPU:1"]
    assert set(tr.devices.column("vendor").to_pylist()) == {"NVIDIA"}   # cu* launches


def test_gpu_kernels_link_to_their_launch_call_by_correlation_id():
    evs = raw_events(GPU)
    procs, _ = names_of(evs)
    host = {int(e["args"]["correlation_id"]): e for e in evs if e.get("ph") == "X"
            and procs[e["pid"]] == "/host:CPU" and "correlation_id" in e.get("args", {})}
    tr = open_trace(GPU)
    api_names = tr.api.column("name").to_pylist()
    api_start = tr.api.column("start").to_pylist()
    linked = 0
    for corr, idx in zip(tr.kernels.column("correlation_id").to_pylist(),
                         tr.kernels.column("api_index").to_pylist()):
        if corr in host:
            assert (api_names[idx], api_start[idx]) == (host[corr]["name"], ns(host[corr])[0])
            linked += 1
        else:
            assert idx is None
    assert linked == 16
    assert any("1 of 17 kernels have no launch call" in w for w in tr.warnings)


def test_gpu_kernel_details_give_registers_shared_memory_and_grid():
    want = []
    for _d, _s, e in raw_kernels(GPU):
        det = dict(re.findall(r"(\w+):(\S+)", e["args"]["kernel_details"]))
        grid = [int(v) for v in det["grid"].split(",")]
        block = [int(v) for v in det["block"].split(",")]
        want.append((e["name"], ns(e)[0], int(det["regs"]), int(det["dynamic_shared"]),
                     grid[0] * block[0], block[0]))
    tr = open_trace(GPU)
    assert rows(tr.kernels, "name", "start", "registers", "dyn_lds_bytes", "grid_x",
                "block_x") == sorted(want, key=repr)


def test_gpu_copies_and_memsets_with_direction_and_bytes():
    direction = {"MemcpyH2D": "HtoD", "MemcpyD2H": "DtoH", "Memset": "memset"}
    want = []
    for dev, stream, e in gpu_stream_events(GPU):
        if e["name"] in direction:
            det = e["args"].get("memcpy_details") or e["args"]["memset_details"]
            size = re.search(r"(?:size|num_bytes):(\d+)", det).group(1)
            want.append((direction[e["name"]], dev, stream, *ns(e), int(size)))
    tr = open_trace(GPU)
    assert len(want) == 5
    assert rows(tr.copies, "direction", "device", "stream", "start", "end", "bytes") == \
        sorted(want, key=repr)
    assert all(i is not None for i in tr.copies.column("api_index").to_pylist())


def test_xla_ops_and_modules_are_device_markers():
    evs = raw_events(GPU)
    _procs, threads = names_of(evs)
    lines = {"XLA Ops": "xla_op", "XLA Modules": "xla_module", "Steps": "step"}
    want = [(e["name"], lines[threads[(e["pid"], e["tid"])]], e["pid"] - 1, *ns(e))
            for e in evs if e.get("ph") == "X" and threads.get((e["pid"], e["tid"])) in lines]
    # GPU 1 has no "XLA Ops" line: its kernels' args.hlo_op name the ops
    want += [(e["args"]["hlo_op"], "xla_op", dev, *ns(e)) for dev, _s, e in raw_kernels(GPU)
             if dev == 1]
    tr = open_trace(GPU)
    m = tr.markers
    got = [r for r in rows(m, "name", "domain", "device", "start", "end") if r[2] is not None]
    assert got == sorted(want, key=repr)
    assert {"jit_train_step(17)", "jit_eval(23)", "dot.1"} <= {r[0] for r in got}


def test_gpu_host_ops_are_host_markers_and_launches_are_api_calls():
    evs = raw_events(GPU)
    procs, _ = names_of(evs)
    host = [e for e in evs if e.get("ph") == "X" and procs[e["pid"]] == "/host:CPU"]
    calls = [e for e in host if e["name"].startswith("cu")]
    tr = open_trace(GPU)
    assert rows(tr.api, "name", "start", "end", "tid") == sorted(
        ((e["name"], *ns(e), e["tid"]) for e in calls), key=repr)
    assert set(tr.api.column("domain").to_pylist()) == {"cuda_driver"}
    assert rows(tr.api, "start", "device") == sorted(      # args.device_id: the GPU ordinal
        (ns(e)[0], int(e["args"]["device_id"])) for e in calls)
    host_markers = [r for r in rows(tr.markers, "name", "device", "tid") if r[1] is None]
    assert sorted((n, t) for n, _d, t in host_markers) == sorted(
        (e["name"], e["tid"]) for e in host if not e["name"].startswith("cu"))


# --------------------------------------------------------------------------- the CLI

def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hipscope", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def test_cli_report_json_of_a_gpu_trace():
    proc = run_cli("report", "--json", "--no-cache", str(GPU))
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    kernels = raw_kernels(GPU)
    assert rep["format"] == "jax"
    assert rep["kernel_count"] == len(kernels)
    assert [d["index"] for d in rep["devices"]] == [0, 1]
    top = {k["name"]: k["count"] for k in rep["top_kernels"]}
    assert top == dict(Counter(e["name"] for _d, _s, e in kernels))


def test_cli_report_json_of_the_real_cpu_trace_warns_no_kernels():
    proc = run_cli("report", "--json", "--no-cache", str(CPU))
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert rep["format"] == "jax" and rep["kernel_count"] == 0
    assert any("recorded no kernels" in w for w in rep["warnings"])


def test_cli_report_json_of_the_real_xplane_matches_its_json():
    proc = run_cli("report", "--json", "--no-cache", str(XPLANE))
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert rep["format"] == "xplane" and rep["kernel_count"] == 0
    assert rep["marker_count"] == sum(1 for e in raw_events(CPU) if e.get("ph") == "X")


# --------------------------------------------------------------------------- XSpace

def test_real_xplane_reads_the_same_host_events_as_its_json():
    """The .xplane.pb and the .trace.json.gz of one real recording: same events, same
    ns, same threads (jax wrote both from one XSpace)."""
    a, b = open_trace(XPLANE), open_trace(CPU)
    cols = ("name", "domain", "start", "end", "tid", "depth")
    assert rows(a.markers, *cols) == rows(b.markers, *cols)
    assert a.meta["threads"] == b.meta["threads"]


def test_xplane_recognised_by_content_whatever_its_name(tmp_path):
    p = tmp_path / "profile.bin"
    p.write_bytes(XPLANE.read_bytes())
    assert find_reader(p).name == "xplane"
    assert len(open_trace(p).markers) == len(open_trace(XPLANE).markers)


def test_damaged_xplane_is_one_sentence(tmp_path):
    raw = XPLANE.read_bytes()
    p = tmp_path / "vm.xplane.pb"
    p.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(TraceFormatError) as err:
        open_trace(p)
    msg = str(err.value)
    assert msg.startswith(str(p)) and "XSpace protobuf" in msg and "\n" not in msg


def _write(tmp_path: Path, text: bytes, name: str = "host.trace.json") -> Path:
    p = tmp_path / name
    p.write_bytes(text)
    return p


def test_json_cut_short_keeps_the_whole_events_with_a_warning(tmp_path):
    text = gzip.decompress(GPU.read_bytes())
    cut = text.rfind(b'"name":"MemcpyD2H"')           # inside the last copy event
    tr = open_trace(_write(tmp_path, text[:cut]))
    assert len(tr.kernels) == len(raw_kernels(GPU))
    assert "DtoH" not in tr.copies.column("direction").to_pylist()
    assert any("ends early" in w for w in tr.warnings)


def test_gzip_cut_short_reads_what_decompressed_with_a_warning(tmp_path):
    raw = GPU.read_bytes()
    tr = open_trace(_write(tmp_path, raw[: len(raw) * 2 // 3], "gpu.trace.json.gz"))
    assert 0 < len(tr.kernels) < len(raw_kernels(GPU))
    assert any("ends early" in w for w in tr.warnings)


def test_events_without_numeric_times_are_skipped_and_counted(tmp_path):
    doc = json.loads(gzip.decompress(GPU.read_bytes()))
    evs = doc["traceEvents"]
    bad = [i for i, e in enumerate(evs) if e.get("name") == "wrapped_exp"]
    for i in bad:
        evs[i]["ts"] = "soon"
    tr = open_trace(_write(tmp_path, json.dumps(doc).encode()))
    assert len(tr.kernels) == len(raw_kernels(GPU)) - len(bad)
    assert any(f"skipped {len(bad)} events without a numeric ts/dur" in w for w in tr.warnings)


def test_a_chrome_trace_without_plane_names_is_refused_by_the_jax_reader(tmp_path):
    from hipscope.parsers.base import get_reader

    p = _write(tmp_path, json.dumps({"traceEvents": [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "python3 4242"}},
        {"ph": "X", "pid": 1, "tid": 1, "ts": 1.0, "dur": 2.0, "name": "op"}]}).encode())
    with pytest.raises(TraceFormatError, match="/host:CPU"):
        get_reader("jax").read(p, lambda f: None, lambda: False)


# --------------------------------------------------------------------------- ROCm and TPU

HIP_NAMES = {"cuLaunchKernel": "hipModuleLaunchKernel",
             "cuMemcpyHtoDAsync_v2": "hipMemcpyHtoDAsync",
             "cuMemcpyDtoHAsync_v2": "hipMemcpyDtoHAsync", "cuMemsetD32Async": "hipMemsetAsync"}


def test_rocm_trace_links_hip_launches_and_leaves_grid_unknown(tmp_path):
    """XLA's roctracer collector writes the same layout with hip* host calls; its grid
    unit depends on the launch call, so grid_x stays null (block is known)."""
    doc = json.loads(gzip.decompress(GPU.read_bytes()))
    for e in doc["traceEvents"]:
        e["name"] = HIP_NAMES.get(e.get("name"), e.get("name"))
    tr = open_trace(_write(tmp_path, json.dumps(doc).encode(), "rocm.trace.json"))
    blocks = sorted(int(e["args"]["kernel_details"].split("block:")[1].split(",")[0])
                    for _d, _s, e in raw_kernels(GPU))
    assert set(tr.devices.column("vendor").to_pylist()) == {"AMD"}
    assert set(tr.api.column("domain").to_pylist()) == {"HIP_RUNTIME_API"}
    assert sorted(tr.kernels.column("block_x").to_pylist()) == blocks
    assert tr.kernels.column("grid_x").null_count == len(tr.kernels)
    linked = [i for i in tr.kernels.column("api_index").to_pylist() if i is not None]
    assert len(linked) == 16
    assert {tr.api.column("name").to_pylist()[i] for i in linked} == {"hipModuleLaunchKernel"}


def test_tpu_trace_has_no_kernels_but_its_xla_ops_on_the_device_with_a_warning(tmp_path):
    evs = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:TPU:0"}},
           {"ph": "M", "pid": 1, "tid": 3735928563, "name": "thread_name",
            "args": {"name": "XLA Modules"}},
           {"ph": "M", "pid": 1, "tid": 3735928564, "name": "thread_name",
            "args": {"name": "XLA Ops"}},
           {"ph": "M", "pid": 701, "name": "process_name", "args": {"name": "/host:CPU"}},
           {"ph": "X", "pid": 1, "tid": 3735928563, "ts": 10.5, "dur": 20.25,
            "name": "jit_step(3)"},
           {"ph": "X", "pid": 1, "tid": 3735928564, "ts": 11.0, "dur": 5.0, "name": "fusion.1"},
           {"ph": "X", "pid": 1, "tid": 3735928564, "ts": 16.5, "dur": 9.0, "name": "dot.2"},
           {}]
    tr = open_trace(_write(tmp_path, json.dumps({"traceEvents": evs}).encode()))
    assert len(tr.kernels) == 0
    assert rows(tr.markers, "name", "domain", "device", "start", "end", "depth") == sorted([
        ("jit_step(3)", "xla_module", 0, 10500, 30750, 0),
        ("fusion.1", "xla_op", 0, 11000, 16000, 1), ("dot.2", "xla_op", 0, 16500, 25500, 1)],
        key=repr)
    assert tr.devices.column("name").to_pylist() == ["/device:TPU:0"]
    assert any("no GPU kernels" in w and "TPU" in w for w in tr.warnings)


# --------------------------------------------------------------------------- log folders

def _run_dir(root: Path, run: str, files=(CPU, PERFETTO, XPLANE)) -> Path:
    d = root / "plugins" / "profile" / run
    d.mkdir(parents=True)
    for f in files:
        (d / f.name).write_bytes(f.read_bytes())
    return d


def test_the_log_dir_of_jax_profiler_trace_opens_its_run(tmp_path):
    run = _run_dir(tmp_path, "2026_12_01_09_41_59")
    for folder in (tmp_path, run):
        tr = open_trace(folder)
        assert tr.format == "jax"
        assert tr.meta["sources"] == [str(run / CPU.name)]
        assert len(tr.markers) == sum(1 for e in raw_events(CPU) if e.get("ph") == "X")


def test_a_log_dir_with_two_runs_is_refused_naming_them(tmp_path):
    _run_dir(tmp_path, "run_a")
    _run_dir(tmp_path, "run_b")
    with pytest.raises(TraceFormatError, match="2 runs .*run_a.*run_b.*open one run"):
        open_trace(tmp_path)


def test_a_log_dir_with_only_xplane_reads_it(tmp_path):
    run = _run_dir(tmp_path, "run_a", files=(XPLANE,))
    tr = open_trace(tmp_path)
    assert tr.format == "xplane" and tr.meta["sources"] == [str(run / XPLANE.name)]



def test_launch_calls_whose_gpu_work_was_not_recorded_still_load(tmp_path):
    """Fuzzing found it: a trace cut before any GPU event has launch calls that name
    device 0; that device is listed, the calls are kept, and no kernels is warned."""
    doc = json.loads(gzip.decompress(GPU.read_bytes()))
    procs, _ = names_of(doc["traceEvents"])
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("ph") == "M" or
                          procs.get(e.get("pid")) == "/host:CPU"]
    n_calls = sum(1 for e in doc["traceEvents"] if e.get("name", "").startswith("cu"))
    tr = open_trace(_write(tmp_path, json.dumps(doc).encode()))
    assert len(tr.kernels) == 0 and len(tr.api) == n_calls
    assert set(tr.api.column("device").to_pylist()) <= set(tr.devices.column("index").to_pylist())
    assert any("recorded no kernels" in w for w in tr.warnings)


# --------------------------------------------------------------------------- XSpace of GPUs

def _pb_varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _pb(field: int, value) -> bytes:
    if isinstance(value, int):
        return _pb_varint(field << 3) + _pb_varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _pb_varint(field << 3 | 2) + _pb_varint(len(data)) + data


def to_xspace(doc: dict) -> bytes:
    """An XSpace protobuf (xplane.proto field numbers) holding a trace-viewer JSON's
    events, written the way XLA's collectors do: numeric stats as uint64, details
    strings as ref_value to a stat metadata entry, other stats as str_value."""
    evs = doc["traceEvents"]
    procs, threads = names_of(evs)
    out = b""
    for pid, pname in procs.items():
        stat_ids: dict[str, int] = {}
        event_ids: dict[str, int] = {}

        def sid(name: str) -> int:
            return stat_ids.setdefault(name, len(stat_ids) + 1)  # noqa: B023 - this pass only

        lines = b""
        for (p, tid), tname in threads.items():
            if p != pid:
                continue
            events = b""
            for e in evs:
                if e.get("ph") != "X" or (e["pid"], e["tid"]) != (p, tid):
                    continue
                stats = b""
                for k, v in e.get("args", {}).items():
                    if v.isdigit():
                        stats += _pb(4, _pb(1, sid(k)) + _pb(3, int(v)))
                    elif k.endswith("_details"):
                        stats += _pb(4, _pb(1, sid(k)) + _pb(7, sid(v)))
                    else:
                        stats += _pb(4, _pb(1, sid(k)) + _pb(5, v))
                mid = event_ids.setdefault(e["name"], len(event_ids) + 1)
                events += _pb(4, _pb(1, mid) + _pb(2, round(e["ts"] * 1e6)) +
                              _pb(3, round(e["dur"] * 1e6)) + stats)
            lines += _pb(3, _pb(1, tid) + _pb(10, tid) + _pb(2, tname) + _pb(3, 0) + events)
        meta = b"".join(_pb(4, _pb(1, i) + _pb(2, _pb(1, i) + _pb(2, n)))
                        for n, i in event_ids.items())
        meta += b"".join(_pb(5, _pb(1, i) + _pb(2, _pb(1, i) + _pb(2, n)))
                         for n, i in stat_ids.items())
        plane_id = pid - 1 if pname.startswith("/device:") else 0
        out += _pb(1, _pb(1, plane_id) + _pb(2, pname) + lines + meta)
    return out


def test_gpu_xspace_reads_the_same_tables_as_its_json(tmp_path):
    doc = json.loads(gzip.decompress(GPU.read_bytes()))
    p = tmp_path / "host.xplane.pb"
    p.write_bytes(to_xspace(doc))
    a, b = open_trace(p), open_trace(GPU)
    assert a.format == "xplane" and len(a.kernels) == len(raw_kernels(GPU))
    for table, cols in (("kernels", ("name", "device", "stream", "start", "end",
                                     "correlation_id", "api_index", "grid_x", "registers")),
                        ("copies", ("direction", "device", "start", "end", "bytes")),
                        ("api", ("name", "start", "end", "correlation_id", "device")),
                        ("markers", ("name", "domain", "device", "start", "end"))):
        # (depth left out: which of two identical ranges, a step and its module, is
        # drawn outside follows the order of the input)
        assert rows(getattr(a, table), *cols) == rows(getattr(b, table), *cols), table


def test_a_run_with_two_hosts_is_refused_and_their_gpus_stay_apart_when_merged(tmp_path):
    run = tmp_path / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    files = [run / f"{h}.trace.json.gz" for h in ("node1", "node2")]
    for f in files:
        f.write_bytes(GPU.read_bytes())
    with pytest.raises(TraceFormatError, match="2 files .*open one host's file"):
        open_trace(tmp_path)
    tr = open_trace(files)
    assert sorted(zip(tr.devices.column("host").to_pylist(),
                      tr.devices.column("name").to_pylist())) == [
        ("node1", "/device:GPU:0"), ("node1", "/device:GPU:1"),
        ("node2", "/device:GPU:0"), ("node2", "/device:GPU:1")]
    assert len(tr.kernels) == 2 * len(raw_kernels(GPU))


def test_a_value_too_big_for_its_column_is_null_with_a_warning(tmp_path):
    doc = json.loads(gzip.decompress(GPU.read_bytes()))
    hit = next(e for e in doc["traceEvents"] if e.get("name") == "wrapped_exp")
    hit["args"]["kernel_details"] = hit["args"]["kernel_details"].replace(
        "static_shared:0", "static_shared:99999999999")
    tr = open_trace(_write(tmp_path, json.dumps(doc).encode()))
    lds = tr.kernels.column("lds_bytes").to_pylist()
    assert len(tr.kernels) == len(raw_kernels(GPU)) and lds.count(None) == 1
    assert any("1 kernels.lds_bytes values do not fit" in w for w in tr.warnings)
