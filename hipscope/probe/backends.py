"""One small GPU interface, two backends: cuda-python (NVIDIA) and hip-python (AMD).

Standalone: imports only the standard library and numpy at import time; the GPU
bindings are imported when a backend is opened, so this file imports (and its pure
parts are tested) on machines without a GPU. hipscope copies it next to ``run.py``
onto the target as ``hipscope_probe_backends.py``, with :mod:`.backend_base` (the
interface and the logic both runtimes share) as ``hipscope_probe_backend_base.py``.

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

try:                                   # inside the hipscope package
    from .backend_base import (
        KERNEL_NAMES,
        KERNEL_SOURCE,
        PROGRAM_NAME,
        Backend,
        BackendUnavailable,
        ProbeError,
        blank_bytes,
        describe_exception,
        error_code,
        flag_value,
    )
except ImportError:                    # the copy run by path on a target
    from hipscope_probe_backend_base import (  # type: ignore[import-not-found,no-redef]
        KERNEL_NAMES,
        KERNEL_SOURCE,
        PROGRAM_NAME,
        Backend,
        BackendUnavailable,
        ProbeError,
        blank_bytes,
        describe_exception,
        error_code,
        flag_value,
    )

__all__ = ["BACKENDS", "KERNEL_NAMES", "KERNEL_SOURCE", "PROGRAM_NAME", "Backend",
           "BackendUnavailable", "CudaBackend", "HipBackend", "ProbeError", "backend_order",
           "describe_exception", "open_backend"]

BACKENDS = ("cuda", "hip")


# =============================================================================== CUDA
class CudaBackend(Backend):
    """cuda-python: ``cuda.bindings.driver`` + ``cuda.bindings.nvrtc``, the device's
    primary context (``cuDevicePrimaryCtxRetain`` + ``cuCtxSetCurrent``; no
    ``cuCtxCreate``, whose signature changed in CUDA 13)."""

    name, vendor, api = "cuda", "NVIDIA", "cuda-python"
    CALLS = {
        "module_load": "cuModuleLoadData", "get_function": "cuModuleGetFunction",
        "module_unload": "cuModuleUnload", "stream_sync": "cuStreamSynchronize",
        "stream_wait_event": "cuStreamWaitEvent", "event_record": "cuEventRecord",
        "event_sync": "cuEventSynchronize", "event_query": "cuEventQuery",
        "begin_capture": "cuStreamBeginCapture", "end_capture": "cuStreamEndCapture",
        "graph_launch": "cuGraphLaunch", "graph_exec_destroy": "cuGraphExecDestroy",
        "graph_destroy": "cuGraphDestroy", "device_sync": "cuCtxSynchronize",
        "malloc": "cuMemAlloc", "free": "cuMemFree", "malloc_host": "cuMemAllocHost",
        "free_host": "cuMemFreeHost",
    }

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
        self.rt = self.drv
        self.ordinal = device
        self.ctx = None
        self._dev = None
        self._open(device)
        self._spin_types = (ctypes.c_longlong,)
        # CUDA 12.8 added cuEventElapsedTime_v2; take the plain name when it is there
        elapsed = getattr(self.drv, "cuEventElapsedTime", None)
        self._elapsed: Callable[..., Any] = (elapsed if elapsed is not None
                                             else self.drv.cuEventElapsedTime_v2)

    def _open(self, device: int) -> None:
        """Device ``device``'s primary context made current, and its compute capability."""
        drv = self.drv
        self._ok(drv.cuInit(0), "cuInit(0)")
        self._dev = self._ok(drv.cuDeviceGet(device), f"cuDeviceGet({device})")
        self.ctx = self._ok(drv.cuDevicePrimaryCtxRetain(self._dev), "cuDevicePrimaryCtxRetain")
        self._ok(drv.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        self.cc = (self._attribute("COMPUTE_CAPABILITY_MAJOR"),
                   self._attribute("COMPUTE_CAPABILITY_MINOR"))

    def _attribute(self, name: str) -> int:
        attr = getattr(self.drv.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
        return int(self._ok(self.drv.cuDeviceGetAttribute(attr, self._dev),
                            f"cuDeviceGetAttribute({name})"))

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
        sms = self._attribute("MULTIPROCESSOR_COUNT")
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
        self._load_module(self.np.char.array(data))

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
            if error_code(res[0]) != 0:
                log = self._rtc_read(nv, "nvrtcGetProgramLog", prog, blank_bytes)
                raise ProbeError(f"nvrtcCompileProgram({arch}) failed: "
                                 f"{self._error_text(res[0])}: "
                                 f"{log.decode(errors='replace').strip()}")
            return self._rtc_read(nv, f"nvrtcGet{'CUBIN' if cubin else 'PTX'}", prog, blank_bytes)
        finally:
            try:
                nv.nvrtcDestroyProgram(prog)
            except Exception:  # noqa: BLE001 - cleanup only
                pass

    # ---------------------------------------------------------------- what differs
    def _launch(self, kernel: str, stream: Any, cycles: int | None) -> None:
        args = None if cycles is None else ((cycles,), self._spin_types)
        self._ok(self.drv.cuLaunchKernel(self.fn[kernel], 1, 1, 1, 1, 1, 1, 0, stream, args, 0),
                 f"cuLaunchKernel({kernel})")

    def stream_create(self) -> Any:
        flags = flag_value(self.drv.CUstream_flags.CU_STREAM_NON_BLOCKING)
        return self._ok(self.drv.cuStreamCreate(flags), "cuStreamCreate")

    def event_create(self) -> Any:
        flags = flag_value(self.drv.CUevent_flags.CU_EVENT_DEFAULT)
        return self._ok(self.drv.cuEventCreate(flags), "cuEventCreate")

    def _not_ready(self) -> Any:
        return self.drv.CUresult.CUDA_ERROR_NOT_READY

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return float(self._ok(self._elapsed(start, end), "cuEventElapsedTime"))

    def _capture_mode(self) -> Any:
        return self.drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL

    def graph_instantiate(self, graph: Any) -> Any:
        try:                            # CUDA >= 12: cuGraphInstantiate(graph, flags)
            return self._ok(self.drv.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        except TypeError:
            return self._ok(self.drv.cuGraphInstantiateWithFlags(graph, 0),
                            "cuGraphInstantiateWithFlags")

    def memcpy_htod(self, dptr: Any, src: Any, nbytes: int) -> None:
        self._ok(self.drv.cuMemcpyHtoD(dptr, src, nbytes), "cuMemcpyHtoD")

    def memcpy_dtoh(self, dst: Any, dptr: Any, nbytes: int) -> None:
        self._ok(self.drv.cuMemcpyDtoH(dst, dptr, nbytes), "cuMemcpyDtoH")

    def _release(self) -> None:
        if self._dev is not None and self.ctx is not None:
            self.drv.cuDevicePrimaryCtxRelease(self._dev)


# =============================================================================== HIP
class HipBackend(Backend):
    """hip-python: ``hip.hip`` + ``hip.hiprtc`` (newer releases also ship them as
    ``rocm.bindings``). Kernel arguments go through ``extra`` as ctypes values, the
    way hip-python's ``hipModuleLaunchKernel`` examples pass them."""

    name, vendor, api = "hip", "AMD", "hip-python"
    CALLS = {
        "module_load": "hipModuleLoadData", "get_function": "hipModuleGetFunction",
        "module_unload": "hipModuleUnload", "stream_sync": "hipStreamSynchronize",
        "stream_wait_event": "hipStreamWaitEvent", "event_record": "hipEventRecord",
        "event_sync": "hipEventSynchronize", "event_query": "hipEventQuery",
        "elapsed": "hipEventElapsedTime", "begin_capture": "hipStreamBeginCapture",
        "end_capture": "hipStreamEndCapture", "graph_launch": "hipGraphLaunch",
        "graph_exec_destroy": "hipGraphExecDestroy", "graph_destroy": "hipGraphDestroy",
        "device_sync": "hipDeviceSynchronize", "malloc": "hipMalloc", "free": "hipFree",
        "malloc_host": "hipHostMalloc", "free_host": "hipHostFree",
    }
    HOST_ALLOC_ARGS = (0,)

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
        self.rt = self.hip
        self.ordinal = device
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
        if error_code(res[0]) != 0:
            log = self._rtc_read(rtc, "hiprtcGetProgramLog", prog, bytearray)
            raise ProbeError(f"hiprtcCompileProgram({opts[0].decode()}) failed: "
                             f"{self._error_text(res[0])}: {log.decode(errors='replace')}")
        self._load_module(self._rtc_read(rtc, "hiprtcGetCode", prog, bytearray))

    # ---------------------------------------------------------------- what differs
    def _launch(self, kernel: str, stream: Any, cycles: int | None) -> None:
        extra = None if cycles is None else (ctypes.c_longlong(cycles),)
        self._ok(self.hip.hipModuleLaunchKernel(self.fn[kernel], 1, 1, 1, 1, 1, 1,
                                                sharedMemBytes=0, stream=stream,
                                                kernelParams=None, extra=extra),
                 f"hipModuleLaunchKernel({kernel})")

    def stream_create(self) -> Any:
        return self._ok(self.hip.hipStreamCreateWithFlags(
            int(getattr(self.hip, "hipStreamNonBlocking", 1))), "hipStreamCreateWithFlags")

    def event_create(self) -> Any:
        return self._ok(self.hip.hipEventCreate(), "hipEventCreate")

    def _not_ready(self) -> Any:
        return self.hip.hipError_t.hipErrorNotReady

    def _capture_mode(self) -> Any:
        return self.hip.hipStreamCaptureMode.hipStreamCaptureModeThreadLocal

    def graph_instantiate(self, graph: Any) -> Any:
        return self._ok(self.hip.hipGraphInstantiateWithFlags(graph, 0),
                        "hipGraphInstantiateWithFlags")

    def memcpy_htod(self, dptr: Any, src: Any, nbytes: int) -> None:
        self._ok(self.hip.hipMemcpy(dptr, src, nbytes,
                                    self.hip.hipMemcpyKind.hipMemcpyHostToDevice),
                 "hipMemcpy(HostToDevice)")

    def memcpy_dtoh(self, dst: Any, dptr: Any, nbytes: int) -> None:
        self._ok(self.hip.hipMemcpy(dst, dptr, nbytes,
                                    self.hip.hipMemcpyKind.hipMemcpyDeviceToHost),
                 "hipMemcpy(DeviceToHost)")


_CLASSES: dict[str, Callable[[int], Backend]] = {"cuda": CudaBackend, "hip": HipBackend}


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
