"""One small GPU interface, two backends: cuda-python (NVIDIA) and hip-python (AMD).

Standalone: imports only the standard library and numpy at import time; the GPU
bindings are imported when a backend is opened, so this file imports (and its pure
parts are tested) on machines without a GPU. hipscope copies it next to ``run.py``
onto the target as ``hipscope_probe_backends.py``.

Both backends compile the same source (:data:`KERNEL_SOURCE`) at run time: NVRTC
(``cuda.bindings.nvrtc``) for ``sm_XY`` of the device, HIPRTC (``hip.hiprtc``) for the
device's ``gcnArchName``. Every binding call returns a tuple ``(err, *values)``;
:meth:`Backend._ok` checks it and raises :class:`ProbeError` naming the call.
"""

from __future__ import annotations

import ctypes
import importlib
from collections.abc import Callable
from typing import Any

#: The kernels of the probe, one source for NVRTC and HIPRTC (no includes: both
#: compilers know ``__global__`` and ``clock64()`` without headers).
KERNEL_SOURCE = r"""
extern "C" __global__ void hipscope_empty()
{
}

extern "C" __global__ void hipscope_spin(long long cycles)
{
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
}
"""
KERNEL_NAMES = ("hipscope_empty", "hipscope_spin")
PROGRAM_NAME = "hipscope_probe.cu"

BACKENDS = ("cuda", "hip")


class ProbeError(RuntimeError):
    """A GPU call failed; ``str()`` names the call and the runtime's error."""


class BackendUnavailable(ProbeError):
    """The bindings of a backend are not importable here (or no GPU of its kind)."""


def _code(err: Any) -> int:
    """The integer value of a CUresult / nvrtcResult / hipError_t / hiprtcResult."""
    v = getattr(err, "value", err)
    try:
        return int(v)
    except (TypeError, ValueError):
        return -1


def describe_exception(exc: BaseException) -> str:
    """One line for an unexpected exception: its type, message and the innermost
    frame of this probe's code (where a binding's signature differed from ours)."""
    import traceback

    where = ""
    for fr in reversed(traceback.extract_tb(exc.__traceback__)):
        if "probe" in fr.filename:
            where = f" (at {fr.filename.rsplit('/', 1)[-1]}:{fr.lineno} {fr.name}: {fr.line})"
            break
    return f"{type(exc).__name__}: {exc}{where}"


def _flag(member: Any) -> int:
    return int(getattr(member, "value", member))


class Backend:
    """What the probe needs from a GPU runtime. Handles are the bindings' objects.

    Subclasses set ``name`` / ``vendor`` / ``api`` and implement the methods; every
    method raises :class:`ProbeError` on failure.
    """

    name = "none"
    vendor = "unknown"
    api = "none"

    # ---------------------------------------------------------------- errors
    def _error_text(self, err: Any) -> str:
        return str(err)

    def _ok(self, result: Any, call: str) -> Any:
        """Check ``(err, *values)``; return None, the one value, or the tuple of values."""
        if not isinstance(result, tuple) or not result:
            raise ProbeError(f"{call} returned {result!r}, expected a tuple (err, ...)")
        err, rest = result[0], result[1:]
        if _code(err) != 0:
            raise ProbeError(f"{call} failed: {self._error_text(err)}")
        if not rest:
            return None
        return rest[0] if len(rest) == 1 else rest

    # ---------------------------------------------------------------- interface
    def device_info(self) -> dict[str, Any]:
        raise NotImplementedError

    def compile(self, source: str = KERNEL_SOURCE) -> None:
        raise NotImplementedError

    def launch_empty(self, stream: Any) -> None:
        raise NotImplementedError

    def launch_spin(self, stream: Any, cycles: int) -> None:
        raise NotImplementedError

    def stream_create(self) -> Any:
        raise NotImplementedError

    def stream_sync(self, stream: Any) -> None:
        raise NotImplementedError

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        raise NotImplementedError

    def event_create(self) -> Any:
        raise NotImplementedError

    def event_record(self, event: Any, stream: Any) -> None:
        raise NotImplementedError

    def event_sync(self, event: Any) -> None:
        raise NotImplementedError

    def event_done(self, event: Any) -> bool:
        """True when the event completed (a query, never waits)."""
        raise NotImplementedError

    def elapsed_ms(self, start: Any, end: Any) -> float:
        raise NotImplementedError

    def begin_capture(self, stream: Any) -> None:
        raise NotImplementedError

    def end_capture(self, stream: Any) -> Any:
        raise NotImplementedError

    def graph_instantiate(self, graph: Any) -> Any:
        raise NotImplementedError

    def graph_launch(self, graph_exec: Any, stream: Any) -> None:
        raise NotImplementedError

    def graph_destroy(self, graph: Any, graph_exec: Any) -> None:
        raise NotImplementedError

    def device_sync(self) -> None:
        raise NotImplementedError

    def malloc(self, nbytes: int) -> Any:
        raise NotImplementedError

    def free(self, dptr: Any) -> None:
        raise NotImplementedError

    def malloc_host(self, nbytes: int) -> int:
        """Pinned (page-locked) host memory; returns its address."""
        raise NotImplementedError

    def free_host(self, ptr: int) -> None:
        raise NotImplementedError

    def memcpy_htod(self, dptr: Any, src: Any, nbytes: int) -> None:
        """Synchronous host-to-device copy; ``src`` is a numpy array or an address."""
        raise NotImplementedError

    def memcpy_dtoh(self, dst: Any, dptr: Any, nbytes: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the backend holds (best effort, never raises)."""


# =============================================================================== CUDA
class CudaBackend(Backend):
    """cuda-python: ``cuda.bindings.driver`` + ``cuda.bindings.nvrtc``, the device's
    primary context (``cuDevicePrimaryCtxRetain`` + ``cuCtxSetCurrent``; no
    ``cuCtxCreate``, whose signature changed in CUDA 13)."""

    name, vendor, api = "cuda", "NVIDIA", "cuda-python"

    def __init__(self, device: int = 0, importer: Callable[[str], Any] = importlib.import_module):
        try:
            self.drv = importer("cuda.bindings.driver")
            self.nvrtc = importer("cuda.bindings.nvrtc")
        except ImportError:
            try:      # cuda-python < 12.6 spelled the modules cuda.cuda / cuda.nvrtc
                self.drv = importer("cuda.cuda")
                self.nvrtc = importer("cuda.nvrtc")
            except ImportError as exc:
                raise BackendUnavailable(f"cuda-python is not importable: {exc}") from None
        import numpy as np

        self.np = np
        self.ordinal = device
        self.module = None
        self.ctx = None
        self._dev = None
        drv = self.drv
        self._ok(drv.cuInit(0), "cuInit(0)")
        self._dev = self._ok(drv.cuDeviceGet(device), f"cuDeviceGet({device})")
        self.ctx = self._ok(drv.cuDevicePrimaryCtxRetain(self._dev), "cuDevicePrimaryCtxRetain")
        self._ok(drv.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        attr = drv.CUdevice_attribute
        self.cc = (int(self._ok(drv.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self._dev),
            "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)")),
            int(self._ok(drv.cuDeviceGetAttribute(
                attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self._dev),
                "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)")))
        self._spin_types = (ctypes.c_longlong,)
        # CUDA 12.8 added cuEventElapsedTime_v2; take the plain name when it is there
        self._elapsed = getattr(drv, "cuEventElapsedTime", None)
        if self._elapsed is None:
            self._elapsed = drv.cuEventElapsedTime_v2

    def _error_text(self, err: Any) -> str:
        try:
            if type(err).__name__.startswith("nvrtc"):
                _, s = self.nvrtc.nvrtcGetErrorString(err)
                return f"{err!s} ({s.decode(errors='replace') if isinstance(s, bytes) else s})"
            _, name = self.drv.cuGetErrorName(err)
            _, desc = self.drv.cuGetErrorString(err)
            dec = [x.decode(errors="replace") if isinstance(x, bytes) else str(x)
                   for x in (name, desc)]
            return f"{dec[0]} ({dec[1]})"
        except Exception:  # noqa: BLE001 - the error text must not hide the error
            return str(err)

    def device_info(self) -> dict[str, Any]:
        drv = self.drv
        raw = self._ok(drv.cuDeviceGetName(256, self._dev), "cuDeviceGetName")
        name = raw.split(b"\x00")[0].decode(errors="replace") if isinstance(raw, bytes) \
            else str(raw)
        driver = int(self._ok(drv.cuDriverGetVersion(), "cuDriverGetVersion"))
        sms = int(self._ok(drv.cuDeviceGetAttribute(
            drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, self._dev),
            "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)"))
        try:
            nv = self._ok(self.nvrtc.nvrtcVersion(), "nvrtcVersion")
            compiler = f"nvrtc {nv[0]}.{nv[1]}"
        except ProbeError:
            compiler = "nvrtc"
        return {"name": name, "vendor": self.vendor, "arch": f"sm_{self.cc[0]}{self.cc[1]}",
                "compute_units": sms, "index": self.ordinal,
                "driver": f"{driver // 1000}.{(driver % 1000) // 10}",
                "driver_api_version": driver, "compiler": compiler, "backend": self.api}

    # ---------------------------------------------------------------- compile
    def compile(self, source: str = KERNEL_SOURCE) -> None:
        major, minor = self.cc
        try:
            data = self._nvrtc(source, f"--gpu-architecture=sm_{major}{minor}", cubin=True)
        except ProbeError as first:
            # an NVRTC older than the GPU: PTX for the newest virtual arch it knows
            try:
                data = self._nvrtc(source, f"--gpu-architecture=compute_{major}{minor}",
                                   cubin=False)
            except ProbeError:
                raise first from None
        self.module = self._ok(self.drv.cuModuleLoadData(self.np.char.array(data)),
                               "cuModuleLoadData")
        self.fn = {k: self._ok(self.drv.cuModuleGetFunction(self.module, k.encode()),
                               f"cuModuleGetFunction({k})") for k in KERNEL_NAMES}

    def _nvrtc(self, source: str, arch: str, cubin: bool) -> bytes:
        nv = self.nvrtc
        try:
            prog = self._ok(nv.nvrtcCreateProgram(source.encode(), PROGRAM_NAME.encode(), 0,
                                                  None, None), "nvrtcCreateProgram")
        except TypeError:      # older bindings want lists for the (empty) headers
            prog = self._ok(nv.nvrtcCreateProgram(source.encode(), PROGRAM_NAME.encode(), 0,
                                                  [], []), "nvrtcCreateProgram")
        try:
            opts = [arch.encode()]
            res = nv.nvrtcCompileProgram(prog, len(opts), opts)
            if _code(res[0]) != 0:
                size = self._ok(nv.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
                log = b" " * int(size)
                self._ok(nv.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
                raise ProbeError(f"nvrtcCompileProgram({arch}) failed: "
                                 f"{self._error_text(res[0])}: "
                                 f"{log.decode(errors='replace').strip()}")
            what = "CUBIN" if cubin else "PTX"
            size = int(self._ok(getattr(nv, f"nvrtcGet{what}Size")(prog), f"nvrtcGet{what}Size"))
            buf = b" " * size
            self._ok(getattr(nv, f"nvrtcGet{what}")(prog, buf), f"nvrtcGet{what}")
            return buf
        finally:
            try:
                nv.nvrtcDestroyProgram(prog)
            except Exception:  # noqa: BLE001 - cleanup only
                pass

    # ---------------------------------------------------------------- launches
    def launch_empty(self, stream: Any) -> None:
        self._ok(self.drv.cuLaunchKernel(self.fn["hipscope_empty"], 1, 1, 1, 1, 1, 1, 0,
                                         stream, None, 0), "cuLaunchKernel(hipscope_empty)")

    def launch_spin(self, stream: Any, cycles: int) -> None:
        self._ok(self.drv.cuLaunchKernel(self.fn["hipscope_spin"], 1, 1, 1, 1, 1, 1, 0,
                                         stream, ((int(cycles),), self._spin_types), 0),
                 "cuLaunchKernel(hipscope_spin)")

    # ---------------------------------------------------------------- streams, events
    def stream_create(self) -> Any:
        flags = _flag(self.drv.CUstream_flags.CU_STREAM_NON_BLOCKING)
        return self._ok(self.drv.cuStreamCreate(flags), "cuStreamCreate")

    def stream_sync(self, stream: Any) -> None:
        self._ok(self.drv.cuStreamSynchronize(stream), "cuStreamSynchronize")

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        self._ok(self.drv.cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent")

    def event_create(self) -> Any:
        return self._ok(self.drv.cuEventCreate(_flag(self.drv.CUevent_flags.CU_EVENT_DEFAULT)),
                        "cuEventCreate")

    def event_record(self, event: Any, stream: Any) -> None:
        self._ok(self.drv.cuEventRecord(event, stream), "cuEventRecord")

    def event_sync(self, event: Any) -> None:
        self._ok(self.drv.cuEventSynchronize(event), "cuEventSynchronize")

    def event_done(self, event: Any) -> bool:
        err = self.drv.cuEventQuery(event)[0]
        if _code(err) == _flag(self.drv.CUresult.CUDA_ERROR_NOT_READY):
            return False
        self._ok((err,), "cuEventQuery")
        return True

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return float(self._ok(self._elapsed(start, end), "cuEventElapsedTime"))

    # ---------------------------------------------------------------- graphs
    def begin_capture(self, stream: Any) -> None:
        mode = self.drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        self._ok(self.drv.cuStreamBeginCapture(stream, mode), "cuStreamBeginCapture")

    def end_capture(self, stream: Any) -> Any:
        return self._ok(self.drv.cuStreamEndCapture(stream), "cuStreamEndCapture")

    def graph_instantiate(self, graph: Any) -> Any:
        try:                            # CUDA >= 12: cuGraphInstantiate(graph, flags)
            return self._ok(self.drv.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        except TypeError:
            return self._ok(self.drv.cuGraphInstantiateWithFlags(graph, 0),
                            "cuGraphInstantiateWithFlags")

    def graph_launch(self, graph_exec: Any, stream: Any) -> None:
        self._ok(self.drv.cuGraphLaunch(graph_exec, stream), "cuGraphLaunch")

    def graph_destroy(self, graph: Any, graph_exec: Any) -> None:
        self._ok(self.drv.cuGraphExecDestroy(graph_exec), "cuGraphExecDestroy")
        self._ok(self.drv.cuGraphDestroy(graph), "cuGraphDestroy")

    # ---------------------------------------------------------------- memory
    def device_sync(self) -> None:
        self._ok(self.drv.cuCtxSynchronize(), "cuCtxSynchronize")

    def malloc(self, nbytes: int) -> Any:
        return self._ok(self.drv.cuMemAlloc(nbytes), f"cuMemAlloc({nbytes})")

    def free(self, dptr: Any) -> None:
        self._ok(self.drv.cuMemFree(dptr), "cuMemFree")

    def malloc_host(self, nbytes: int) -> int:
        return int(self._ok(self.drv.cuMemAllocHost(nbytes), f"cuMemAllocHost({nbytes})"))

    def free_host(self, ptr: int) -> None:
        self._ok(self.drv.cuMemFreeHost(ptr), "cuMemFreeHost")

    def memcpy_htod(self, dptr: Any, src: Any, nbytes: int) -> None:
        self._ok(self.drv.cuMemcpyHtoD(dptr, src, nbytes), "cuMemcpyHtoD")

    def memcpy_dtoh(self, dst: Any, dptr: Any, nbytes: int) -> None:
        self._ok(self.drv.cuMemcpyDtoH(dst, dptr, nbytes), "cuMemcpyDtoH")

    def close(self) -> None:
        try:
            if self.module is not None:
                self.drv.cuModuleUnload(self.module)
            if self._dev is not None and self.ctx is not None:
                self.drv.cuDevicePrimaryCtxRelease(self._dev)
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


# =============================================================================== HIP
class HipBackend(Backend):
    """hip-python: ``hip.hip`` + ``hip.hiprtc`` (newer releases also ship them as
    ``rocm.bindings``). Kernel arguments go through ``extra`` as ctypes values, the
    way hip-python's ``hipModuleLaunchKernel`` examples pass them."""

    name, vendor, api = "hip", "AMD", "hip-python"

    def __init__(self, device: int = 0, importer: Callable[[str], Any] = importlib.import_module):
        last: Exception | None = None
        for pkg in ("hip", "rocm.bindings"):
            try:
                self.hip = importer(f"{pkg}.hip")
                self.rtc = importer(f"{pkg}.hiprtc")
                break
            except ImportError as exc:
                last = exc
        else:
            raise BackendUnavailable(f"hip-python is not importable (hip.hip, "
                                     f"rocm.bindings.hip): {last}")
        self.ordinal = device
        self.module = None
        hip = self.hip
        self._ok(hip.hipInit(0), "hipInit(0)")
        count = int(self._ok(hip.hipGetDeviceCount(), "hipGetDeviceCount"))
        if count <= device:
            raise BackendUnavailable(f"hipGetDeviceCount: {count} device(s), no device {device}")
        self._ok(hip.hipSetDevice(device), f"hipSetDevice({device})")
        self.props = hip.hipDeviceProp_t()
        self._ok(hip.hipGetDeviceProperties(self.props, device), "hipGetDeviceProperties")

    def _error_text(self, err: Any) -> str:
        try:
            if type(err).__name__.startswith("hiprtc"):
                s = self.rtc.hiprtcGetErrorString(err)
            else:
                s = self.hip.hipGetErrorString(err)
            s = s[-1] if isinstance(s, tuple) else s
            return f"{err!s} ({s.decode(errors='replace') if isinstance(s, bytes) else s})"
        except Exception:  # noqa: BLE001
            return str(err)

    @staticmethod
    def _text(v: Any) -> str:
        return v.split(b"\x00")[0].decode(errors="replace") if isinstance(v, bytes) else str(v)

    def device_info(self) -> dict[str, Any]:
        hip = self.hip
        driver = int(self._ok(hip.hipDriverGetVersion(), "hipDriverGetVersion"))
        runtime = int(self._ok(hip.hipRuntimeGetVersion(), "hipRuntimeGetVersion"))
        return {"name": self._text(self.props.name), "vendor": self.vendor,
                "arch": self._text(self.props.gcnArchName),
                "compute_units": int(self.props.multiProcessorCount), "index": self.ordinal,
                "driver": str(driver), "runtime": str(runtime), "compiler": "hiprtc",
                "backend": self.api}

    def compile(self, source: str = KERNEL_SOURCE) -> None:
        rtc = self.rtc
        prog = self._ok(rtc.hiprtcCreateProgram(source.encode(), PROGRAM_NAME.encode(), 0,
                                                [], []), "hiprtcCreateProgram")
        arch = self.props.gcnArchName
        arch = arch if isinstance(arch, bytes) else str(arch).encode()
        opts = [b"--offload-arch=" + arch.split(b"\x00")[0]]
        res = rtc.hiprtcCompileProgram(prog, len(opts), opts)
        if _code(res[0]) != 0:
            size = self._ok(rtc.hiprtcGetProgramLogSize(prog), "hiprtcGetProgramLogSize")
            log = bytearray(int(size))
            self._ok(rtc.hiprtcGetProgramLog(prog, log), "hiprtcGetProgramLog")
            raise ProbeError(f"hiprtcCompileProgram({opts[0].decode()}) failed: "
                             f"{self._error_text(res[0])}: {log.decode(errors='replace')}")
        size = int(self._ok(rtc.hiprtcGetCodeSize(prog), "hiprtcGetCodeSize"))
        code = bytearray(size)
        self._ok(rtc.hiprtcGetCode(prog, code), "hiprtcGetCode")
        self.module = self._ok(self.hip.hipModuleLoadData(code), "hipModuleLoadData")
        self.fn = {k: self._ok(self.hip.hipModuleGetFunction(self.module, k.encode()),
                               f"hipModuleGetFunction({k})") for k in KERNEL_NAMES}

    def launch_empty(self, stream: Any) -> None:
        self._ok(self.hip.hipModuleLaunchKernel(self.fn["hipscope_empty"], 1, 1, 1, 1, 1, 1,
                                                sharedMemBytes=0, stream=stream,
                                                kernelParams=None, extra=None),
                 "hipModuleLaunchKernel(hipscope_empty)")

    def launch_spin(self, stream: Any, cycles: int) -> None:
        self._ok(self.hip.hipModuleLaunchKernel(self.fn["hipscope_spin"], 1, 1, 1, 1, 1, 1,
                                                sharedMemBytes=0, stream=stream,
                                                kernelParams=None,
                                                extra=(ctypes.c_longlong(int(cycles)),)),
                 "hipModuleLaunchKernel(hipscope_spin)")

    def stream_create(self) -> Any:
        return self._ok(self.hip.hipStreamCreateWithFlags(
            int(getattr(self.hip, "hipStreamNonBlocking", 1))),
                        "hipStreamCreateWithFlags")

    def stream_sync(self, stream: Any) -> None:
        self._ok(self.hip.hipStreamSynchronize(stream), "hipStreamSynchronize")

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        self._ok(self.hip.hipStreamWaitEvent(stream, event, 0), "hipStreamWaitEvent")

    def event_create(self) -> Any:
        return self._ok(self.hip.hipEventCreate(), "hipEventCreate")

    def event_record(self, event: Any, stream: Any) -> None:
        self._ok(self.hip.hipEventRecord(event, stream), "hipEventRecord")

    def event_sync(self, event: Any) -> None:
        self._ok(self.hip.hipEventSynchronize(event), "hipEventSynchronize")

    def event_done(self, event: Any) -> bool:
        err = self.hip.hipEventQuery(event)[0]
        if _code(err) == _flag(self.hip.hipError_t.hipErrorNotReady):
            return False
        self._ok((err,), "hipEventQuery")
        return True

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return float(self._ok(self.hip.hipEventElapsedTime(start, end), "hipEventElapsedTime"))

    def begin_capture(self, stream: Any) -> None:
        mode = self.hip.hipStreamCaptureMode.hipStreamCaptureModeThreadLocal
        self._ok(self.hip.hipStreamBeginCapture(stream, mode), "hipStreamBeginCapture")

    def end_capture(self, stream: Any) -> Any:
        return self._ok(self.hip.hipStreamEndCapture(stream), "hipStreamEndCapture")

    def graph_instantiate(self, graph: Any) -> Any:
        return self._ok(self.hip.hipGraphInstantiateWithFlags(graph, 0),
                        "hipGraphInstantiateWithFlags")

    def graph_launch(self, graph_exec: Any, stream: Any) -> None:
        self._ok(self.hip.hipGraphLaunch(graph_exec, stream), "hipGraphLaunch")

    def graph_destroy(self, graph: Any, graph_exec: Any) -> None:
        self._ok(self.hip.hipGraphExecDestroy(graph_exec), "hipGraphExecDestroy")
        self._ok(self.hip.hipGraphDestroy(graph), "hipGraphDestroy")

    def device_sync(self) -> None:
        self._ok(self.hip.hipDeviceSynchronize(), "hipDeviceSynchronize")

    def malloc(self, nbytes: int) -> Any:
        return self._ok(self.hip.hipMalloc(nbytes), f"hipMalloc({nbytes})")

    def free(self, dptr: Any) -> None:
        self._ok(self.hip.hipFree(dptr), "hipFree")

    def malloc_host(self, nbytes: int) -> int:
        return int(self._ok(self.hip.hipHostMalloc(nbytes, 0), f"hipHostMalloc({nbytes})"))

    def free_host(self, ptr: int) -> None:
        self._ok(self.hip.hipHostFree(ptr), "hipHostFree")

    def memcpy_htod(self, dptr: Any, src: Any, nbytes: int) -> None:
        self._ok(self.hip.hipMemcpy(dptr, src, nbytes,
                                    self.hip.hipMemcpyKind.hipMemcpyHostToDevice),
                 "hipMemcpy(HostToDevice)")

    def memcpy_dtoh(self, dst: Any, dptr: Any, nbytes: int) -> None:
        self._ok(self.hip.hipMemcpy(dst, dptr, nbytes,
                                    self.hip.hipMemcpyKind.hipMemcpyDeviceToHost),
                 "hipMemcpy(DeviceToHost)")

    def close(self) -> None:
        try:
            if self.module is not None:
                self.hip.hipModuleUnload(self.module)
        except Exception:  # noqa: BLE001
            pass


_CLASSES: dict[str, type[Backend]] = {"cuda": CudaBackend, "hip": HipBackend}


def backend_order(prefer: str | None = None, env: dict[str, str] | None = None,
                  importable: Callable[[str], bool] | None = None) -> list[str]:
    """Which backends to try, in order.

    ``prefer`` (``cuda`` / ``hip``) forces one. Otherwise the runtime whose bindings
    are importable comes first; with both (or neither), HIP first when the machine
    looks like ROCm (``/dev/kfd`` or ``ROCR_VISIBLE_DEVICES`` / ``HIP_VISIBLE_DEVICES``
    set), else CUDA first. Opening a backend also needs its GPU, so the caller tries
    the next one when the first finds none.
    """
    if prefer and prefer != "auto":
        if prefer not in _CLASSES:
            raise ValueError(f"unknown backend {prefer!r}; known: auto, {', '.join(BACKENDS)}")
        return [prefer]
    import os

    real_machine = env is None
    env = dict(os.environ) if env is None else env
    if importable is None:
        importable = _importable
    have = {"cuda": importable("cuda.bindings") or importable("cuda.cuda"),
            "hip": importable("hip.hip") or importable("rocm.bindings")}
    rocm_like = real_machine and os.path.exists("/dev/kfd")
    rocm_like = rocm_like or bool(env.get("ROCR_VISIBLE_DEVICES") or
                                  env.get("HIP_VISIBLE_DEVICES"))
    order = ["hip", "cuda"] if rocm_like else ["cuda", "hip"]
    return sorted(order, key=lambda b: not have[b])       # stable: importable first


def _importable(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def open_backend(prefer: str | None = None, device: int = 0,
                 order: list[str] | None = None) -> Backend:
    """The first backend that opens device ``device``; :class:`BackendUnavailable` with
    every backend's reason when none does."""
    reasons = []
    for name in order or backend_order(prefer):
        try:
            return _CLASSES[name](device)
        except ProbeError as exc:
            reasons.append(f"{name}: {exc}")
        except Exception as exc:  # noqa: BLE001 - a binding that differs from ours
            reasons.append(f"{name}: {describe_exception(exc)}")
    raise BackendUnavailable("no GPU backend could open a device (" + "; ".join(reasons) + ")")
