"""The probe's GPU interface and the logic both runtimes share (standalone: standard
library only at import time; hipscope copies it next to ``run.py`` onto the target as
``hipscope_probe_backend_base.py``).

:class:`Backend` holds every operation whose shape is the same on CUDA and HIP, written
once over the runtime's call names (:attr:`Backend.CALLS`); :mod:`.backends` holds the
two runtime halves, which supply only their names and what differs. Every binding call
returns a tuple ``(err, *values)``; :meth:`Backend._ok` checks it and raises
:class:`ProbeError` naming the call.
"""

from __future__ import annotations

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

class ProbeError(RuntimeError):
    """A GPU call failed; ``str()`` names the call and the runtime's error."""


class BackendUnavailable(ProbeError):
    """The bindings of a backend are not importable here (or no GPU of its kind)."""


def error_code(err: Any) -> int:
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


def flag_value(member: Any) -> int:
    """The integer of a binding's flag (an enum member or a plain int)."""
    return int(getattr(member, "value", member))


def blank_bytes(n: int) -> bytes:
    """A buffer of ``n`` bytes for a runtime to write into (NVRTC's way)."""
    return b" " * n


class Backend:
    """What the probe needs from a GPU runtime, and the logic both runtimes share.

    A runtime half sets ``name`` / ``vendor`` / ``api`` and ``rt`` (its runtime module),
    names its calls in :attr:`CALLS` and implements only what differs: opening the
    device, error text, device facts, compiling, launch arguments, flags and copies
    (the methods that raise NotImplementedError here). Handles are the bindings'
    objects; every method raises :class:`ProbeError` on failure.
    """

    name = "none"
    vendor = "unknown"
    api = "none"

    def _error_text(self, err: Any) -> str:
        return str(err)

    def _ok(self, result: Any, call: str) -> Any:
        """Check ``(err, *values)``; return None, the one value, or the tuple of values."""
        if not isinstance(result, tuple) or not result:
            raise ProbeError(f"{call} returned {result!r}, expected a tuple (err, ...)")
        err, rest = result[0], result[1:]
        if error_code(err) != 0:
            raise ProbeError(f"{call} failed: {self._error_text(err)}")
        if not rest:
            return None
        return rest[0] if len(rest) == 1 else rest

    # ---------------------------------------------------------------- what differs
    def device_info(self) -> dict[str, Any]:
        raise NotImplementedError

    def compile(self, source: str = KERNEL_SOURCE) -> None:
        raise NotImplementedError

    def stream_create(self) -> Any:
        raise NotImplementedError

    def event_create(self) -> Any:
        raise NotImplementedError

    def graph_instantiate(self, graph: Any) -> Any:
        raise NotImplementedError

    def memcpy_htod(self, dptr: Any, src: Any, nbytes: int) -> None:
        """Synchronous host-to-device copy; ``src`` is a numpy array or an address."""
        raise NotImplementedError

    def memcpy_dtoh(self, dst: Any, dptr: Any, nbytes: int) -> None:
        raise NotImplementedError

    # ---------------------------------------------------------------- shared
    #: operation -> the runtime's function (its name is also the label of errors)
    CALLS: dict[str, str] = {}
    #: extra arguments of the pinned host allocation after ``nbytes``
    HOST_ALLOC_ARGS: tuple[Any, ...] = ()
    rt: Any = None
    module: Any = None

    def _call(self, op: str, *args: Any, label: str | None = None) -> Any:
        name = self.CALLS[op]
        return self._ok(getattr(self.rt, name)(*args), label or name)

    def _rtc_read(self, rtc: Any, what: str, prog: Any, buffer: Callable[[int], Any]) -> Any:
        """A compiled program's log or code: ``<what>Size`` then ``<what>`` into a buffer."""
        size = int(self._ok(getattr(rtc, f"{what}Size")(prog), f"{what}Size"))
        buf = buffer(size)
        self._ok(getattr(rtc, what)(prog, buf), what)
        return buf

    def _load_module(self, image: Any) -> None:
        """Load the compiled code and look up the probe's kernels in it."""
        self.module = self._call("module_load", image)
        get = self.CALLS["get_function"]
        self.fn = {k: self._ok(getattr(self.rt, get)(self.module, k.encode()), f"{get}({k})")
                   for k in KERNEL_NAMES}

    # ---------------------------------------------------------------- launches
    def launch_empty(self, stream: Any) -> None:
        self._launch("hipscope_empty", stream, None)

    def launch_spin(self, stream: Any, cycles: int) -> None:
        self._launch("hipscope_spin", stream, int(cycles))

    def _launch(self, kernel: str, stream: Any, cycles: int | None) -> None:
        """Launch one probe kernel on one thread (``cycles``: the spin's argument)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- streams, events
    def stream_sync(self, stream: Any) -> None:
        self._call("stream_sync", stream)

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        self._call("stream_wait_event", stream, event, 0)

    def event_record(self, event: Any, stream: Any) -> None:
        self._call("event_record", event, stream)

    def event_sync(self, event: Any) -> None:
        self._call("event_sync", event)

    def event_done(self, event: Any) -> bool:
        name = self.CALLS["event_query"]
        err = getattr(self.rt, name)(event)[0]
        if error_code(err) == flag_value(self._not_ready()):
            return False
        self._ok((err,), name)
        return True

    def _not_ready(self) -> Any:
        """The runtime's "not ready" error (an event query that must not fail)."""
        raise NotImplementedError

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return float(self._call("elapsed", start, end))

    # ---------------------------------------------------------------- graphs
    def begin_capture(self, stream: Any) -> None:
        self._call("begin_capture", stream, self._capture_mode())

    def _capture_mode(self) -> Any:
        """The runtime's thread-local stream capture mode."""
        raise NotImplementedError

    def end_capture(self, stream: Any) -> Any:
        return self._call("end_capture", stream)

    def graph_launch(self, graph_exec: Any, stream: Any) -> None:
        self._call("graph_launch", graph_exec, stream)

    def graph_destroy(self, graph: Any, graph_exec: Any) -> None:
        self._call("graph_exec_destroy", graph_exec)
        self._call("graph_destroy", graph)

    # ---------------------------------------------------------------- memory
    def device_sync(self) -> None:
        self._call("device_sync")

    def malloc(self, nbytes: int) -> Any:
        return self._call("malloc", nbytes, label=f"{self.CALLS['malloc']}({nbytes})")

    def free(self, dptr: Any) -> None:
        self._call("free", dptr)

    def malloc_host(self, nbytes: int) -> int:
        return int(self._call("malloc_host", nbytes, *self.HOST_ALLOC_ARGS,
                              label=f"{self.CALLS['malloc_host']}({nbytes})"))

    def free_host(self, ptr: int) -> None:
        self._call("free_host", ptr)

    def close(self) -> None:
        try:
            if self.module is not None:
                getattr(self.rt, self.CALLS["module_unload"])(self.module)
            self._release()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass

    def _release(self) -> None:
        """Release the device context after the module (where the runtime has one)."""
