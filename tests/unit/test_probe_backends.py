"""The probe's CUDA and HIP backends over recording stand-ins of their bindings (no
test machine has both GPUs): every operation calls the runtime's own functions, in
order, with the arguments each runtime wants, and a failed call names itself.

The call lists below are what the two backends sent before they shared one base class;
they pin that the shared logic still sends each runtime exactly that.
"""

from __future__ import annotations

import ctypes
import types
import zlib

import pytest

from hipscope.probe import backends
from hipscope.probe.backends import ProbeError


class _Member(str):
    """An enum member of a binding: its text ``"Kind.member"``, a stable ``value``."""

    @property
    def value(self) -> int:
        return zlib.crc32(self.encode()) % 1000 + 1


class _Enum:
    """An enum namespace of a binding: ``Kind.member`` is a :class:`_Member`."""

    def __init__(self, kind: str):
        self._kind = kind

    def __getattr__(self, member: str) -> _Member:
        return _Member(f"{self._kind}.{member}")


class _Runtime:
    """A binding module that records every call ``(name, args)`` and answers
    ``(0, value)``: the value from ``answers`` (a callable or a constant), else a
    handle named after the call. ``fail`` names a call answered with error 7."""

    def __init__(self, calls: list, answers: dict, enums: tuple[str, ...] = (),
                 fail: str | None = None, consts: dict | None = None):
        self._calls, self._answers, self._enums, self._fail = calls, answers, enums, fail
        self._consts = consts or {}

    def __getattr__(self, name: str):
        if name in self._enums:
            return _Enum(name)
        if name in self._consts:
            return self._consts[name]
        if name.startswith("_"):
            raise AttributeError(name)

        def call(*args, **kw):
            self._calls.append((name, _plain(args), _plain(tuple(sorted(kw.items())))))
            if name == self._fail:
                return (7,)
            ans = self._answers.get(name, f"<{name}>")
            ans = ans(*args) if callable(ans) else ans
            return ans if isinstance(ans, tuple) else (0, ans)
        return call


def _plain(v):
    """Arguments as comparable values (ctypes values by their number, buffers by kind)."""
    if isinstance(v, (tuple, list)):
        return type(v)(_plain(x) for x in v)
    if isinstance(v, (int, float, str, bytes, type(None))):
        return v
    if isinstance(v, type):
        return v.__name__
    if hasattr(v, "value"):
        return ("ctypes", v.value)
    return type(v).__name__


def _cuda(calls: list, fail: str | None = None):
    answers = {"cuDeviceGetAttribute": lambda a, d: 9 if a.endswith("MAJOR") else (
                   0 if a.endswith("MINOR") else 132),
               "cuDeviceGetName": b"NVIDIA H200\x00\x00", "cuDriverGetVersion": 12040,
               "nvrtcVersion": (0, 12, 4), "nvrtcCompileProgram": (0,),
               "nvrtcGetCUBINSize": 4, "cuMemAllocHost": 4096, "cuEventQuery": (0,),
               "cuEventElapsedTime": 1.5}
    enums = ("CUdevice_attribute", "CUstream_flags", "CUevent_flags", "CUresult",
             "CUstreamCaptureMode")
    drv = _Runtime(calls, answers, enums, fail)
    nvrtc = _Runtime(calls, answers, (), fail)
    mods = {"cuda.bindings.driver": drv, "cuda.bindings.nvrtc": nvrtc}
    return backends.CudaBackend(importer=mods.__getitem__)


def _hip(calls: list, fail: str | None = None):
    props = types.SimpleNamespace(name=b"AMD Instinct MI300X\x00", gcnArchName=b"gfx942\x00",
                                  multiProcessorCount=304)
    answers = {"hipGetDeviceCount": 1,
               "hipDriverGetVersion": 60342, "hipRuntimeGetVersion": 60342,
               "hiprtcCompileProgram": (0,), "hiprtcGetCodeSize": 4, "hipHostMalloc": 4096,
               "hipEventQuery": (0,), "hipEventElapsedTime": 2.5}
    enums = ("hipError_t", "hipStreamCaptureMode", "hipMemcpyKind")
    hip = _Runtime(calls, answers, enums, fail, consts={"hipStreamNonBlocking": 1,
                                                          "hipDeviceProp_t": lambda: props})
    rtc = _Runtime(calls, answers, (), fail)
    mods = {"hip.hip": hip, "hip.hiprtc": rtc}
    return backends.HipBackend(importer=mods.__getitem__)


def _session(b) -> dict:
    """Every operation of the interface once, in the order the probe uses them."""
    info = b.device_info()
    b.compile()
    s = b.stream_create()
    b.launch_empty(s)
    b.launch_spin(s, 1000)
    e0, e1 = b.event_create(), b.event_create()
    b.event_record(e0, s)
    b.stream_wait_event(s, e0)
    b.event_record(e1, s)
    b.event_sync(e1)
    done = b.event_done(e1)
    b.elapsed_ms(e0, e1)
    b.begin_capture(s)
    g = b.end_capture(s)
    ge = b.graph_instantiate(g)
    b.graph_launch(ge, s)
    b.stream_sync(s)
    b.graph_destroy(g, ge)
    d = b.malloc(64)
    h = b.malloc_host(64)
    b.memcpy_htod(d, h, 64)
    b.memcpy_dtoh(h, d, 64)
    b.free_host(h)
    b.free(d)
    b.device_sync()
    b.close()
    return {"info": info, "done": done}


def _value(kind: str, member: str) -> int:
    """The number a backend passes for a binding's flag (``int(member.value)``)."""
    return getattr(_Enum(kind), member).value


CUDA_CALLS = [
    "cuInit(0)", "cuDeviceGet(0)", "cuDevicePrimaryCtxRetain('<cuDeviceGet>')",
    "cuCtxSetCurrent('<cuDevicePrimaryCtxRetain>')",
    "cuDeviceGetAttribute('CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR', "
    "'<cuDeviceGet>')",
    "cuDeviceGetAttribute('CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR', "
    "'<cuDeviceGet>')",
    "cuDeviceGetName(256, '<cuDeviceGet>')", "cuDriverGetVersion()",
    "cuDeviceGetAttribute('CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT', "
    "'<cuDeviceGet>')",
    "nvrtcVersion()",
    "nvrtcCreateProgram(b'<src>', b'hipscope_probe.cu', 0, None, None)",
    "nvrtcCompileProgram('<nvrtcCreateProgram>', 1, [b'--gpu-architecture=sm_90'])",
    "nvrtcGetCUBINSize('<nvrtcCreateProgram>')", "nvrtcGetCUBIN('<nvrtcCreateProgram>', b'    ')",
    "nvrtcDestroyProgram('<nvrtcCreateProgram>')", "cuModuleLoadData('chararray')",
    "cuModuleGetFunction('<cuModuleLoadData>', b'hipscope_empty')",
    "cuModuleGetFunction('<cuModuleLoadData>', b'hipscope_spin')",
    f"cuStreamCreate({_value('CUstream_flags', 'CU_STREAM_NON_BLOCKING')})",
    "cuLaunchKernel('<cuModuleGetFunction>', 1, 1, 1, 1, 1, 1, 0, '<cuStreamCreate>', None, 0)",
    "cuLaunchKernel('<cuModuleGetFunction>', 1, 1, 1, 1, 1, 1, 0, '<cuStreamCreate>', "
    f"((1000,), ('{ctypes.c_longlong.__name__}',)), 0)",
    f"cuEventCreate({_value('CUevent_flags', 'CU_EVENT_DEFAULT')})",
    f"cuEventCreate({_value('CUevent_flags', 'CU_EVENT_DEFAULT')})",
    "cuEventRecord('<cuEventCreate>', '<cuStreamCreate>')",
    "cuStreamWaitEvent('<cuStreamCreate>', '<cuEventCreate>', 0)",
    "cuEventRecord('<cuEventCreate>', '<cuStreamCreate>')",
    "cuEventSynchronize('<cuEventCreate>')", "cuEventQuery('<cuEventCreate>')",
    "cuEventElapsedTime('<cuEventCreate>', '<cuEventCreate>')",
    "cuStreamBeginCapture('<cuStreamCreate>', "
    "'CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL')",
    "cuStreamEndCapture('<cuStreamCreate>')", "cuGraphInstantiate('<cuStreamEndCapture>', 0)",
    "cuGraphLaunch('<cuGraphInstantiate>', '<cuStreamCreate>')",
    "cuStreamSynchronize('<cuStreamCreate>')", "cuGraphExecDestroy('<cuGraphInstantiate>')",
    "cuGraphDestroy('<cuStreamEndCapture>')", "cuMemAlloc(64)", "cuMemAllocHost(64)",
    "cuMemcpyHtoD('<cuMemAlloc>', 4096, 64)", "cuMemcpyDtoH(4096, '<cuMemAlloc>', 64)",
    "cuMemFreeHost(4096)", "cuMemFree('<cuMemAlloc>')", "cuCtxSynchronize()",
    "cuModuleUnload('<cuModuleLoadData>')", "cuDevicePrimaryCtxRelease('<cuDeviceGet>')",
]

HIP_CALLS = [
    "hipInit(0)", "hipGetDeviceCount()", "hipSetDevice(0)",
    "hipGetDeviceProperties('SimpleNamespace', 0)", "hipDriverGetVersion()",
    "hipRuntimeGetVersion()",
    "hiprtcCreateProgram(b'<src>', b'hipscope_probe.cu', 0, [], [])",
    "hiprtcCompileProgram('<hiprtcCreateProgram>', 1, [b'--offload-arch=gfx942'])",
    "hiprtcGetCodeSize('<hiprtcCreateProgram>')",
    "hiprtcGetCode('<hiprtcCreateProgram>', 'bytearray')", "hipModuleLoadData('bytearray')",
    "hipModuleGetFunction('<hipModuleLoadData>', b'hipscope_empty')",
    "hipModuleGetFunction('<hipModuleLoadData>', b'hipscope_spin')",
    "hipStreamCreateWithFlags(1)",
    "hipModuleLaunchKernel('<hipModuleGetFunction>', 1, 1, 1, 1, 1, 1) "
    "extra=None kernelParams=None sharedMemBytes=0 stream='<hipStreamCreateWithFlags>'",
    "hipModuleLaunchKernel('<hipModuleGetFunction>', 1, 1, 1, 1, 1, 1) "
    "extra=(('ctypes', 1000),) kernelParams=None sharedMemBytes=0 "
    "stream='<hipStreamCreateWithFlags>'",
    "hipEventCreate()", "hipEventCreate()",
    "hipEventRecord('<hipEventCreate>', '<hipStreamCreateWithFlags>')",
    "hipStreamWaitEvent('<hipStreamCreateWithFlags>', '<hipEventCreate>', 0)",
    "hipEventRecord('<hipEventCreate>', '<hipStreamCreateWithFlags>')",
    "hipEventSynchronize('<hipEventCreate>')", "hipEventQuery('<hipEventCreate>')",
    "hipEventElapsedTime('<hipEventCreate>', '<hipEventCreate>')",
    "hipStreamBeginCapture('<hipStreamCreateWithFlags>', "
    "'hipStreamCaptureMode.hipStreamCaptureModeThreadLocal')",
    "hipStreamEndCapture('<hipStreamCreateWithFlags>')",
    "hipGraphInstantiateWithFlags('<hipStreamEndCapture>', 0)",
    "hipGraphLaunch('<hipGraphInstantiateWithFlags>', '<hipStreamCreateWithFlags>')",
    "hipStreamSynchronize('<hipStreamCreateWithFlags>')",
    "hipGraphExecDestroy('<hipGraphInstantiateWithFlags>')",
    "hipGraphDestroy('<hipStreamEndCapture>')", "hipMalloc(64)", "hipHostMalloc(64, 0)",
    "hipMemcpy('<hipMalloc>', 4096, 64, 'hipMemcpyKind.hipMemcpyHostToDevice')",
    "hipMemcpy(4096, '<hipMalloc>', 64, 'hipMemcpyKind.hipMemcpyDeviceToHost')",
    "hipHostFree(4096)", "hipFree('<hipMalloc>')", "hipDeviceSynchronize()",
    "hipModuleUnload('<hipModuleLoadData>')",
]


def _text(calls: list) -> list[str]:
    out = []
    for name, args, kw in calls:
        args = tuple(b"<src>" if isinstance(a, bytes) and b"__global__" in a else a
                     for a in args)
        s = f"{name}({', '.join(map(repr, args))})"
        if kw:
            s += " " + " ".join(f"{k}={v!r}" for k, v in kw)
        out.append(s)
    return out


@pytest.mark.parametrize("vendor", ["cuda", "hip"])
def test_each_backend_calls_its_runtime_in_the_probes_order(vendor):
    calls: list = []
    b = (_cuda if vendor == "cuda" else _hip)(calls)
    got = _session(b)
    assert _text(calls) == (CUDA_CALLS if vendor == "cuda" else HIP_CALLS)
    assert got["done"] is True
    want = ({"name": "NVIDIA H200", "arch": "sm_90", "compute_units": 132,
             "driver": "12.4", "compiler": "nvrtc 12.4", "backend": "cuda-python"}
            if vendor == "cuda" else
            {"name": "AMD Instinct MI300X", "arch": "gfx942", "compute_units": 304,
             "driver": "60342", "runtime": "60342", "compiler": "hiprtc",
             "backend": "hip-python"})
    assert {k: got["info"][k] for k in want} == want


@pytest.mark.parametrize("vendor, call, op", [
    ("cuda", "cuStreamSynchronize", lambda b: b.stream_sync("s")),
    ("cuda", "cuMemAlloc(64)", lambda b: b.malloc(64)),
    ("cuda", "cuGraphExecDestroy", lambda b: b.graph_destroy("g", "x")),
    ("hip", "hipStreamSynchronize", lambda b: b.stream_sync("s")),
    ("hip", "hipHostMalloc(64)", lambda b: b.malloc_host(64)),
    ("hip", "hipMemcpy(HostToDevice)", lambda b: b.memcpy_htod("d", 1, 64)),
])
def test_a_failed_call_names_the_runtimes_call(vendor, call, op):
    calls: list = []
    b = (_cuda if vendor == "cuda" else _hip)(calls, fail=call.split("(")[0])
    with pytest.raises(ProbeError, match=rf"^{call.replace('(', '[(]').replace(')', '[)]')}"
                                         r" failed: "):
        op(b)


def test_event_done_is_false_while_the_runtime_says_not_ready_and_fails_on_errors():
    for make, key, enum, member in (
            (_cuda, "cuEventQuery", "CUresult", "CUDA_ERROR_NOT_READY"),
            (_hip, "hipEventQuery", "hipError_t", "hipErrorNotReady")):
        b = make([])
        rt = b.drv if make is _cuda else b.hip
        rt._answers[key] = (getattr(_Enum(enum), member),)
        assert b.event_done("e") is False
        rt._answers[key] = (_Enum(enum).SomeOtherError,)
        with pytest.raises(ProbeError, match=rf"^{key} failed: "):
            b.event_done("e")
