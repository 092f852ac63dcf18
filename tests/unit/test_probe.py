"""The GPU probe without a GPU: backend selection and errors, the kernel source, the
measurements over a simulated GPU, result parsing, the per-target store, the
launcher route and the tuner's use of stored figures.

The real measurement runs on the H200 (tests/data/gpu/run_tuner_proof.sh); here the
simulated backend below stands in for the GPU only to check the probe's arithmetic
(slopes, gates, concurrency, speed-ups) against figures it was built with.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from hipscope.probe import backends, run, store
from hipscope.probe.backends import KERNEL_NAMES, KERNEL_SOURCE, ProbeError
from hipscope.probe.remote import (
    FILES,
    PROFILER_NAME,
    ProbeProfiler,
    ProbeRunError,
    probe_spec,
    read_result,
    run_on_target,
)

ROOT = Path(__file__).resolve().parents[2]
GPU = ROOT / "tests" / "data" / "gpu"


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HIPSCOPE_DATA_DIR", str(tmp_path / "data"))


# ====================================================================== a simulated GPU
class SimGPU(backends.Backend):
    """A deterministic GPU timeline (ns) with a host clock the probe reads.

    Every call costs the host ``call_ns`` (a launch ``launch_api_ns``); work on a stream
    starts when the host has submitted it and the stream is free; kernels need one of
    ``lanes`` execution slots; a queued kernel costs ``gap_ns`` before it runs; graph
    nodes cost ``node_gap_ns`` and a graph launch ``graph_fixed_ns``.
    """

    name, vendor, api = "sim", "SIM", "sim"

    def __init__(self, lanes=4, launch_api_ns=3_000, gap_ns=500, empty_ns=1_000,
                 node_gap_ns=200, graph_fixed_ns=5_000, cycles_per_ns=1.5,
                 pageable_gbps=10.0, pinned_gbps=40.0):
        self.host = 0
        self.lanes = [0] * lanes
        self.ready: dict[int, int] = {}
        self.events: dict[int, int] = {}
        self.n = 0
        self.capturing: dict[int, list] = {}
        self.__dict__.update(launch_api_ns=launch_api_ns, gap_ns=gap_ns, empty_ns=empty_ns,
                             node_gap_ns=node_gap_ns, graph_fixed_ns=graph_fixed_ns,
                             cycles_per_ns=cycles_per_ns, pageable=pageable_gbps,
                             pinned=pinned_gbps)
        self.compiled = None
        self.pinned_ptrs: set[int] = set()

    def _id(self) -> int:
        self.n += 1
        return self.n

    def _call(self, ns: int = 100) -> None:
        self.host += ns

    def _kernel(self, s: int, dur: int, gap: int) -> None:
        i = min(range(len(self.lanes)), key=self.lanes.__getitem__)
        start = max(self.ready.get(s, 0), self.host, self.lanes[i]) + gap
        self.lanes[i] = self.ready[s] = start + dur

    # interface
    def device_info(self):
        return {"name": "SIM GPU", "vendor": "SIM", "arch": "sim_1", "driver": "1.0",
                "backend": "sim"}

    def compile(self, source=KERNEL_SOURCE):
        self.compiled = source

    def launch_empty(self, stream):
        self._launch(stream, self.empty_ns)

    def launch_spin(self, stream, cycles):
        self._launch(stream, int(cycles / self.cycles_per_ns))

    def _launch(self, stream, dur):
        self._call(self.launch_api_ns)
        if stream in self.capturing:
            self.capturing[stream].append(dur)
        else:
            self._kernel(stream, dur, self.gap_ns)

    def stream_create(self):
        s = self._id()
        self.ready[s] = 0
        return s

    def stream_sync(self, stream):
        self.host = max(self.host, self.ready[stream])

    def stream_wait_event(self, stream, event):
        self._call()
        self.ready[stream] = max(self.ready[stream], self.events[event])

    def event_create(self):
        e = self._id()
        self.events[e] = 0
        return e

    def event_record(self, event, stream):
        self._call()
        self.events[event] = max(self.ready[stream], self.host)

    def event_sync(self, event):
        self.host = max(self.host, self.events[event])

    def event_done(self, event):
        return self.events[event] <= self.host

    def elapsed_ms(self, start, end):
        return (self.events[end] - self.events[start]) / 1e6

    def begin_capture(self, stream):
        self.capturing[stream] = []

    def end_capture(self, stream):
        return self.capturing.pop(stream)

    def graph_instantiate(self, graph):
        return list(graph)

    def graph_launch(self, graph_exec, stream):
        self._call(3_000)
        self.ready[stream] = max(self.ready[stream], self.host) + self.graph_fixed_ns
        for dur in graph_exec:
            self._kernel(stream, dur, self.node_gap_ns)

    def graph_destroy(self, graph, graph_exec):
        pass

    def device_sync(self):
        self.host = max([self.host, *self.ready.values()])

    def malloc(self, nbytes):
        return self._id()

    def free(self, dptr):
        pass

    def malloc_host(self, nbytes):
        import ctypes

        buf = ctypes.create_string_buffer(nbytes)
        self._keep = buf
        ptr = ctypes.addressof(buf)
        self.pinned_ptrs.add(ptr)
        return ptr

    def free_host(self, ptr):
        self.pinned_ptrs.discard(ptr)

    def _copy(self, host_buf, nbytes):
        gbps = self.pinned if isinstance(host_buf, int) else self.pageable
        self.host += int(nbytes / gbps)

    def memcpy_htod(self, dptr, src, nbytes):
        self._copy(src, nbytes)

    def memcpy_dtoh(self, dst, dptr, nbytes):
        self._copy(dst, nbytes)


@pytest.fixture
def sim(monkeypatch):
    gpu = SimGPU()
    monkeypatch.setattr(run.time, "perf_counter_ns", lambda: gpu.host)
    return gpu


def test_probe_arithmetic_on_a_simulated_gpu(sim):
    res = run.run_probe(opener=lambda backend, device: sim)
    assert res["schema"] == run.SCHEMA and not res["errors"] and "error" not in res
    assert sim.compiled == KERNEL_SOURCE                 # one source for every backend
    assert res["calibration"]["cycles_per_us"] == pytest.approx(1500, rel=0.03)
    la = res["launch"]
    assert la["api_ns"] == pytest.approx(3_000)          # host time per launch call
    assert la["gpu_ns"] == pytest.approx(sim.gap_ns + sim.empty_ns)   # queue full
    assert la["host_limited_reps"] == 0
    assert la["wall_ns"] >= la["api_ns"]
    gr = res["graph"]
    assert gr["method"] == "slope"
    assert gr["per_node_ns"] == pytest.approx(sim.node_gap_ns + sim.empty_ns)
    # the fixed part: the host's graph-launch call plus the graph's start-up
    assert gr["launch_fixed_ns"] == pytest.approx(3_000 + sim.graph_fixed_ns)
    st = res["streams"]
    conc = {r["streams"]: r["concurrency"] for r in st["sweep"]}
    assert set(conc) == {1, 2, 4, 8, 16}
    assert conc[1] == pytest.approx(1, rel=0.02) and conc[2] == pytest.approx(2, rel=0.02)
    assert conc[8] == pytest.approx(4, rel=0.02) and conc[16] == pytest.approx(4, rel=0.02)
    assert st["overlapping_streams"] == 4                # four lanes
    c = res["copies"]
    assert c["pinned_speedup"] == pytest.approx(4.0, rel=0.01)
    assert c["htod_pageable_GBps"] == pytest.approx(10.0, rel=0.01)
    est = res["estimates"]
    assert est["graph_node_ns"] == pytest.approx(1_200)
    assert est["pinned_speedup"] == pytest.approx(4.0, rel=0.01)
    json.dumps(res, allow_nan=False)
    assert "SIM GPU" in run.format_text(res)


def test_a_failing_section_is_reported_and_the_others_still_run(sim):
    def broken(stream):
        raise ProbeError("cuStreamBeginCapture failed: CUDA_ERROR_NOT_SUPPORTED (operation "
                         "not supported)")

    sim.begin_capture = broken
    res = run.run_probe(opener=lambda b, d: sim)
    assert "cuStreamBeginCapture" in res["errors"]["graph"]
    assert "graph" not in res and {"launch", "streams", "copies"} <= set(res)
    assert "graph_node_ns" not in res["estimates"] and "pinned_speedup" in res["estimates"]
    assert "graph: FAILED: cuStreamBeginCapture" in run.format_text(res)


def test_a_probe_without_a_gpu_says_why_and_exits_1(capsys):
    def none(b, d):
        raise backends.BackendUnavailable("no GPU backend could open a device (cuda: x)")

    res = run.run_probe(opener=none)
    assert res["error"].startswith("no GPU backend") and "gpu" not in res
    assert run.main(["--json", "--backend", "cuda"]) == 1        # no cuda-python here
    out = json.loads(capsys.readouterr().out)
    assert "cuda-python is not importable" in out["error"]


# ====================================================================== backends
def test_backend_order():
    yes = lambda name: True            # noqa: E731
    only_hip = lambda name: name.startswith(("hip", "rocm"))   # noqa: E731
    assert backends.backend_order("hip") == ["hip"]
    with pytest.raises(ValueError, match="unknown backend"):
        backends.backend_order("metal")
    assert backends.backend_order(env={}, importable=yes) == ["cuda", "hip"]
    assert backends.backend_order(env={"ROCR_VISIBLE_DEVICES": "0"}, importable=yes) == \
        ["hip", "cuda"]
    assert backends.backend_order(env={}, importable=only_hip) == ["hip", "cuda"]
    assert backends.backend_order(env={}, importable=lambda n: False) == ["cuda", "hip"]


def test_open_backend_names_every_reason():
    with pytest.raises(backends.BackendUnavailable) as ei:
        backends.open_backend(order=["cuda", "hip"])
    assert "cuda: cuda-python is not importable" in str(ei.value)
    assert "hip: hip-python is not importable" in str(ei.value)


class _Err(int):
    """A CUresult-like enum value."""

    def __str__(self):
        return f"CUresult.{self.name}"

    @property
    def name(self):
        return {0: "CUDA_SUCCESS", 100: "CUDA_ERROR_NO_DEVICE"}.get(int(self), "?")


def _fake_cuda(init_err=0):
    drv = types.SimpleNamespace(
        cuInit=lambda flags: (_Err(init_err),),
        cuGetErrorName=lambda e: (_Err(0), _Err(e).name.encode()),
        cuGetErrorString=lambda e: (_Err(0), b"no CUDA-capable device is detected"),
        cuDeviceGet=lambda i: (_Err(0), i),
        cuDevicePrimaryCtxRetain=lambda d: (_Err(0), "ctx"),
        cuCtxSetCurrent=lambda c: (_Err(0),),
        cuDeviceGetAttribute=lambda a, d: (_Err(0), {"MAJ": 9, "MIN": 0}[a]),
        CUdevice_attribute=types.SimpleNamespace(
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR="MAJ",
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR="MIN"),
        cuEventElapsedTime=lambda a, b: (_Err(0), 1.5),
    )
    nvrtc = types.SimpleNamespace()
    mods = {"cuda.bindings.driver": drv, "cuda.bindings.nvrtc": nvrtc}

    def importer(name):
        if name not in mods:
            raise ImportError(name)
        return mods[name]
    return importer


def test_cuda_backend_errors_name_the_call_and_the_driver_error():
    with pytest.raises(ProbeError) as ei:
        backends.CudaBackend(importer=_fake_cuda(init_err=100))
    msg = str(ei.value)
    assert msg == ("cuInit(0) failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is "
                   "detected)")
    b = backends.CudaBackend(importer=_fake_cuda())
    assert b.cc == (9, 0) and b.elapsed_ms(1, 2) == 1.5
    with pytest.raises(ProbeError, match=r"^cuLaunchKernel returned None, expected a tuple"):
        b._ok(None, "cuLaunchKernel")


def test_backends_import_without_gpu_libraries():
    code = ("import sys, hipscope.probe.backends, hipscope.probe.run, hipscope.probe.store, "
            "hipscope.probe.remote; bad = [m for m in ('cuda', 'hip', 'rocm', 'torch') "
            "if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


# ====================================================================== the kernel source
def test_kernel_source_is_one_well_formed_translation_unit():
    src = KERNEL_SOURCE
    assert "#include" not in src                  # NVRTC and HIPRTC need no headers
    for name in KERNEL_NAMES:                     # unmangled, launchable by name
        assert re.search(rf'extern "C" __global__ void {name}\(', src)
    assert src.count("{") == src.count("}") and src.count("(") == src.count(")")
    assert "clock64()" in src and "long long cycles" in src
    # both backends compile exactly this string (nothing vendor-specific in it)
    assert backends.CudaBackend.compile.__defaults__ == (KERNEL_SOURCE,)
    assert backends.HipBackend.compile.__defaults__ == (KERNEL_SOURCE,)


@pytest.mark.skipif(shutil.which("g++") is None, reason="no host C++ compiler here")
def test_kernel_source_parses_as_cxx(tmp_path):
    """The source is valid C++ once the two GPU words are defined: a syntax check of
    what NVRTC and HIPRTC receive (their builtins: __global__ and clock64)."""
    f = tmp_path / "k.cpp"
    f.write_text("#define __global__\nlong long clock64();\n" + KERNEL_SOURCE)
    out = subprocess.run(["g++", "-fsyntax-only", "-Wall", "-Werror", str(f)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


# ====================================================================== results, store
def _result(name="NVIDIA H200", driver="13.0", node=1_400.0, speedup=3.5, when="2026-11-29"):
    return {"schema": "hipscope-probe/1", "measured_at": when, "host": "h",
            "gpu": {"name": name, "driver": driver, "arch": "sm_90"},
            "graph": {"per_node_ns": node}, "copies": {"pinned_speedup": speedup},
            "estimates": {"graph_node_ns": node, "pinned_speedup": speedup}}


def test_parse_result_accepts_noise_before_the_json_and_rejects_the_rest():
    r = _result()
    text = "probe: NVIDIA H200\nsome warning\n" + json.dumps(r) + "\n"
    assert store.parse_result(text)["gpu"]["name"] == "NVIDIA H200"
    assert store.parse_result(json.dumps(r).encode()) == r
    with pytest.raises(store.ProbeResultError, match=r"^x\.json: no JSON object"):
        store.parse_result("", "x.json")
    with pytest.raises(store.ProbeResultError, match="not a hipscope probe result"):
        store.parse_result('{"schema": "other/1"}')
    with pytest.raises(store.ProbeResultError, match="measured no GPU .no backend"):
        store.parse_result({"schema": "hipscope-probe/1", "error": "no backend"})


def test_tuner_probes_keeps_finite_positive_figures_and_floors_the_speed_up():
    assert store.tuner_probes(_result()) == {"graph_node_ns": 1400.0, "pinned_speedup": 3.5}
    assert store.tuner_probes(_result(speedup=0.8))["pinned_speedup"] == 1.0
    bad = _result(node=float("nan"))
    bad["estimates"]["graph_node_ns"] = float("nan")
    assert "graph_node_ns" not in store.tuner_probes(bad)
    assert store.tuner_probes({"schema": "hipscope-probe/1", "gpu": {"name": "x"}}) == {}


def test_store_keys_by_target_gpu_driver_and_finds_the_newest_match():
    k1 = store.save(_result(when="2026-11-01"), "local")
    k2 = store.save(_result(node=900.0, when="2026-11-20"), "gpu-box")
    k3 = store.save(_result(name="AMD Instinct MI300X", driver="6.4", when="2026-11-25"),
                    "mi300")
    assert k1 == "local|NVIDIA H200|13.0" and len({k1, k2, k3}) == 3
    store.save(_result(node=1_500.0, when="2026-11-02"), "local")     # replaces k1
    data = json.loads(store.store_path().read_text())
    assert len(data["probes"]) == 3
    assert data["probes"][k1]["result"]["graph"]["per_node_ns"] == 1_500.0
    assert store.lookup(["h200"])["key"] == k2                         # newest H200
    assert store.lookup(["NVIDIA  H200"], target="local")["key"] == k1
    assert store.lookup(["Instinct MI300X"])["key"] == k3
    assert store.lookup(["NVIDIA H100"]) is None and store.lookup([]) is None
    assert [e["key"] for e in store.entries()] == [k3, k2, k1]


def test_a_broken_store_reads_as_empty_and_is_replaced(tmp_path):
    p = store.store_path()
    p.parent.mkdir(parents=True)
    p.write_text("{not json")
    assert store.entries() == []
    store.save(_result(), "local")
    assert len(store.entries()) == 1


class _Devices:
    def __init__(self, names):
        self.names = names

    def __len__(self):
        return len(self.names)

    def strings(self, col):
        assert col == "name"
        return self.names


def test_probes_for_trace_matches_the_traces_gpu():
    tr = types.SimpleNamespace(devices=_Devices(["NVIDIA H200"]))
    assert store.probes_for_trace(tr) == ({}, None)
    store.save(_result(), "local")
    figs, desc = store.probes_for_trace(tr)
    assert figs == {"graph_node_ns": 1400.0, "pinned_speedup": 3.5}
    assert "NVIDIA H200 on local" in desc and "pinned_speedup=3.5" in desc
    other = types.SimpleNamespace(devices=_Devices(["AMD Instinct MI300X"]))
    assert store.probes_for_trace(other) == ({}, None)
    assert store.probes_for_trace(types.SimpleNamespace(devices=_Devices([]))) == ({}, None)


# ====================================================================== the launcher route
def test_probe_profiler_ships_the_standalone_probe():
    w = ProbeProfiler().wrap(["python3", "-m", "hipscope.probe.run", "--json", "--quick"],
                             "/remote/run/prof", {})
    assert w.argv == ["python3", "/remote/run/prof/hipscope_probe.py", "--json", "--quick",
                      "--out", "/remote/run/prof/probe.json"]
    assert set(w.files) == set(FILES)
    assert w.files["hipscope_probe.py"] == (ROOT / "hipscope/probe/run.py").read_bytes()
    spec = probe_spec("gpu-box", "python3.12", ["--quick"])
    assert spec.target.kind == "ssh" and spec.target.host == "gpu-box"
    assert spec.command == ["python3.12", "-m", "hipscope.probe.run", "--json", "--quick"]
    assert spec.profiler.name == PROFILER_NAME


def test_the_copied_probe_runs_by_path_without_hipscope(tmp_path):
    for dst, src in FILES.items():
        shutil.copy(ROOT / "hipscope" / "probe" / src, tmp_path / dst)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, str(tmp_path / "hipscope_probe.py"), "--json",
                          "--out", str(tmp_path / "r.json")], capture_output=True,
                         text=True, cwd=tmp_path, env=env, timeout=60)
    assert out.returncode == 1                       # no GPU here: one JSON that says so
    res = json.loads(out.stdout)
    assert res["schema"] == "hipscope-probe/1" and "no GPU backend" in res["error"]
    assert json.loads((tmp_path / "r.json").read_text()) == res
    assert "Traceback" not in out.stderr


def test_probe_through_the_local_launcher_reports_the_probes_own_error():
    spec = probe_spec("local", sys.executable, ["--quick"])
    with pytest.raises(ProbeRunError) as ei:
        run_on_target(spec)
    msg = str(ei.value)
    assert msg.startswith("the probe on local failed: no GPU backend could open a device")
    runs = list((Path(os.environ["HIPSCOPE_DATA_DIR"]) / "runs").iterdir())
    assert len(runs) == 1
    prof = runs[0] / "prof"
    assert {"hipscope_probe.py", "hipscope_probe_backends.py", "probe.json"} <= \
        {p.name for p in prof.iterdir()}


def test_read_result_prefers_probe_json_then_stdout(tmp_path):
    (tmp_path / "prof").mkdir()
    (tmp_path / "stdout.log").write_text("noise\n" + json.dumps(_result(node=1.0)) + "\n")
    assert read_result(tmp_path)["graph"]["per_node_ns"] == 1.0
    (tmp_path / "prof" / "probe.json").write_text(json.dumps(_result(node=2.0)))
    assert read_result(tmp_path)["graph"]["per_node_ns"] == 2.0


# ====================================================================== CLI + tuner wiring
def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "hipscope", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=300, env={**os.environ, **(env or {})})


def test_probe_cli_import_and_list(tmp_path):
    f = tmp_path / "probe.json"
    f.write_text("probe: measuring\n" + json.dumps(_result()) + "\n")
    out = _cli("probe", "--import", str(f), "--target", "h200-box")
    assert out.returncode == 0, out.stderr
    assert "stored as 'h200-box|NVIDIA H200|13.0'" in out.stdout
    listed = json.loads(_cli("probe", "--list", "--json").stdout)
    assert listed == [{"key": "h200-box|NVIDIA H200|13.0", "target": "h200-box",
                       "gpu": "NVIDIA H200", "driver": "13.0",
                       "saved_at": listed[0]["saved_at"],
                       "tuner": {"graph_node_ns": 1400.0, "pinned_speedup": 3.5}}]
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "x"}')
    out = _cli("probe", "--import", str(bad))
    assert out.returncode == 2 and "not a hipscope probe result" in out.stderr
    assert "Traceback" not in out.stderr


def test_probe_cli_without_a_gpu_fails_with_one_sentence():
    out = _cli("probe", "--quick")
    assert out.returncode == 1
    assert "no GPU backend could open a device" in out.stderr and "Traceback" not in out.stderr
    assert not store.store_path().exists()                 # nothing stored


def _pinned(props):
    return next(p for p in props if p["id"] == "pinned-memory")


def test_tune_uses_the_stored_probe_of_the_traces_gpu():
    """sync_bound (H200, pageable 64 MB copies): the pinned-memory estimate uses the
    stored probe's measured speed-up instead of the assumed 2x; --no-probe ignores it."""
    trace = str(GPU / "sync_bound.json.gz")
    base = _cli("tune", "--propose", trace, "--json", "--no-cache")
    assert base.returncode == 0, base.stderr
    p2 = _pinned(json.loads(base.stdout))
    assert p2["evidence"]["figures"]["assumed_pinned_speedup"] == 2.0
    assert "using the stored probe" not in base.stderr
    store.save(_result(speedup=4.0), "h200-box")
    probed = _cli("tune", "--propose", trace, "--json", "--no-cache")
    assert "using the stored probe of NVIDIA H200 on h200-box" in probed.stderr
    p4 = _pinned(json.loads(probed.stdout))
    assert p4["evidence"]["figures"]["assumed_pinned_speedup"] == 4.0
    assert p4["confidence"]["level"] == "high" and "measured by a probe" in \
        p4["confidence"]["why"]
    # min(copy x (1 - 1/s), idle): a 4x speed-up recovers more than the assumed 2x
    assert p4["estimated_gain_fraction"] > p2["estimated_gain_fraction"]
    off = _cli("tune", "--propose", trace, "--json", "--no-cache", "--no-probe")
    assert _pinned(json.loads(off.stdout))["evidence"]["figures"][
        "assumed_pinned_speedup"] == 2.0


def test_tune_graph_capture_uses_the_stored_graph_node_cost():
    trace = str(GPU / "eager.json.gz")
    store.save(_result(node=1_480.0), "h200-box")
    out = _cli("tune", "--propose", trace, "--rule", "graph-capture", "--json", "--no-cache")
    assert out.returncode == 0, out.stderr
    (p,) = json.loads(out.stdout)
    assert p["evidence"]["figures"]["graph_node_ns"] == 1480.0
    assert "graph replay cost from probe" in p["confidence"]["why"]


def test_the_split_backends_ran_every_section_on_a_real_h200():
    """Recorded on the H200 after the CUDA/HIP halves moved behind one base class."""
    raw = (ROOT / "tests/data/gpu/probe-split/probe.json").read_text()
    d = json.loads(raw)
    assert d["errors"] == {} and d["backend"] == "cuda-python"
    assert d["gpu"]["name"] == "NVIDIA H200" and d["gpu"]["arch"] == "sm_90"
    for section in ("launch", "graph", "streams", "copies"):
        assert section in d, section
    assert store.parse_result(raw)["estimates"] == d["estimates"]
