"""Copy and synchronisation rules: ``async-copies``, ``pinned-memory``, ``remove-syncs``.

Which calls block the host is decided by ``analysis.idle`` (``is_sync_call`` and its
blocking-copy detection: a copy call during which the host stayed for at least half
of the copy it issued), the same definition the idle breakdown's *sync* category
uses. "In the hot loop" means overlapping the kernel window (first kernel start to
last kernel end).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..analysis.idle import blocking_copy_calls, is_sync_call
from . import knobs
from .context import TraceContext
from .proposals import Confidence, Evidence, Experiment, Proposal, Ref
from .rules import rule

_COPY_RE = re.compile(r"(memcpy|memset|copy)", re.IGNORECASE)
_MEMSET_RE = re.compile(r"memset", re.IGNORECASE)
# Assumed pinned/pageable bandwidth ratio when no probe measured it: conservative
# (pinned host-device copies are usually several times faster than pageable ones).
DEFAULT_PINNED_SPEEDUP = 2.0


@dataclass
class SyncCalls:
    """API rows (in the kernel window) by kind, and the GPU idle they overlap."""

    copy_rows: np.ndarray        # blocking copy calls
    sync_rows: np.ndarray        # other blocking calls (synchronize, ...)
    copy_idle_ns: int            # device idle while the host was in a blocking copy
    sync_bubble_ns: int          # idle gaps in which a sync call returned, less copy idle


def _gaps(ctx: TraceContext) -> tuple[np.ndarray, np.ndarray]:
    g0 = np.concatenate([d.gap_start for d in ctx.idle.devices.values()] or [np.zeros(0)])
    g1 = np.concatenate([d.gap_end for d in ctx.idle.devices.values()] or [np.zeros(0)])
    order = np.argsort(g0, kind="stable")
    return g0[order].astype(np.int64), g1[order].astype(np.int64)


def _covered(g0: np.ndarray, g1: np.ndarray, a0: np.ndarray, a1: np.ndarray) -> np.ndarray:
    """Per interval [a0, a1): length covered by the (sorted) gaps [g0, g1).
    Gaps of several devices may overlap; each counts (idle is per device)."""
    if len(g0) == 0 or len(a0) == 0:
        return np.zeros(len(a0), dtype=np.int64)
    lens = g1 - g0
    before = np.concatenate(([0], np.cumsum(lens)))

    def upto(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(g0, t, side="right") - 1
        ic = np.maximum(i, 0)
        part = np.clip(t - g0[ic], 0, lens[ic])
        return np.where(i >= 0, before[ic] + part, 0)

    return upto(a1) - upto(a0)


def sync_calls(ctx: TraceContext) -> SyncCalls:
    api = ctx.trace.api
    empty = np.zeros(0, dtype=np.int64)
    if len(api) == 0:
        return SyncCalls(empty, empty, 0, 0)
    codes, names = api.codes("name")
    dcodes, domains = api.codes("domain")
    is_sync = np.array([is_sync_call(n) for n in names] + [False])[codes]
    is_sync |= np.array([d == "cuda_sync" for d in domains] + [False])[dcodes]
    is_copy = np.array([bool(_COPY_RE.search(n)) for n in names] + [False])[codes]
    blocking_copy = (is_sync & is_copy) | blocking_copy_calls(ctx.trace)
    s, e = api.numpy("start"), api.numpy("end")
    w0, w1 = ctx.kernel_window
    inside = (e > w0) & (s < w1)
    copy_rows = np.flatnonzero(blocking_copy & inside)
    sync_rows = np.flatnonzero(is_sync & ~is_copy & ~blocking_copy & inside)
    g0, g1 = _gaps(ctx)
    copy_idle = int(_covered(g0, g1, s[copy_rows], e[copy_rows]).sum())
    # A gap in which a sync call returned is a drain-and-relaunch bubble: the host
    # waited for the GPU to finish, then had to queue new work.
    ends = np.sort(e[sync_rows])
    lo = np.searchsorted(ends, g0, side="left")
    hi = np.searchsorted(ends, g1, side="right")
    has_end = hi > lo
    bubble = int((g1 - g0)[has_end].sum())
    bubble -= int(_covered(g0[has_end], g1[has_end], s[copy_rows], e[copy_rows]).sum()
                  if has_end.any() else 0)
    return SyncCalls(copy_rows, sync_rows, copy_idle, max(0, bubble))


def _steps(ctx: TraceContext) -> int | None:
    """Number of profiler steps when the trace marks them ('ProfilerStep#N', 'step N')."""
    m = ctx.trace.markers
    if len(m) == 0:
        return None
    codes, names = m.codes("name")
    used = set(codes[codes >= 0].tolist())
    steps = {names[c] for c in used if re.match(r"(ProfilerStep#\d+|step \d+)$", names[c])}
    return len(steps) or None


def _n(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


@rule("async-copies")
def async_copies(ctx: TraceContext) -> list[Proposal]:
    sc = sync_calls(ctx)
    span = ctx.span_ns
    if len(sc.copy_rows) == 0 or span <= 0 or sc.copy_idle_ns < 0.02 * span:
        return []
    busy = sum(ctx.device_busy(d) for d in ctx.idle.devices)
    gain = min(sc.copy_idle_ns, busy)
    api = ctx.trace.api
    names = api.strings("name")
    called = sorted({names[i] for i in sc.copy_rows})
    steps = _steps(ctx)
    ev = Evidence(
        figures={"blocking_copy_calls": int(len(sc.copy_rows)), "calls": ", ".join(called[:5]),
                 "gpu_idle_during_copies_ns": sc.copy_idle_ns, "gpu_busy_ns": busy,
                 "steps": steps, "span_ns": span},
        refs=[Ref.at_row("api", int(r), f"blocking copy call {names[r]}")
              for r in sc.copy_rows[:10]])
    return [Proposal(
        id="async-copies", rule="async-copies",
        title=(f"Make the {_n(len(sc.copy_rows), 'blocking copy', 'blocking copies')} in "
               "the hot loop asynchronous so they overlap with kernels: the GPU idles "
               f"{sc.copy_idle_ns / 1e6:.1f} ms "
               "during them"),
        evidence=ev, estimated_gain_fraction=gain / span,
        formula="min(GPU idle while the host is in blocking copy calls, GPU kernel busy "
                "time it could overlap with) / span",
        confidence=Confidence("medium" if gain >= 0.05 * span else "low",
                              "overlap needs independent work to hide the copy behind; "
                              "the estimate assumes all kernel time is available"),
        experiment=Experiment(recipe=(
            "# PyTorch: pinned source + non_blocking copy (on a side stream to overlap)\n"
            "host = host.pin_memory()            # once, outside the loop\n"
            "d = host.to(device, non_blocking=True)\n"
            "# HIP/CUDA: hipHostMalloc/cudaHostAlloc buffers + hipMemcpyAsync/cudaMemcpyAsync"
            " on a separate stream, synchronised with an event instead of the device")),
        applies_to="both", docs=[knobs.PINNED_MEMORY])]


@rule("pinned-memory")
def pinned_memory(ctx: TraceContext) -> list[Proposal]:
    c = ctx.trace.copies
    span = ctx.span_ns
    if len(c) == 0 or span <= 0:
        return []
    names = [n or "" for n in c.strings("name")] if c.has("name") else [""] * len(c)
    pageable = np.array(["pageable" in n.lower() for n in names])
    how = "the profiler labels them Pageable"
    if not pageable.any() and c.has("api_index"):
        # copy calls named Async that still blocked the host: pageable memory is the
        # usual reason (analysis.idle's blocking-copy detection)
        blocked = blocking_copy_calls(ctx.trace)
        ai = c.numpy("api_index", fill=-1).astype(np.int64)
        anames = ctx.trace.api.strings("name")
        pageable = np.array([i >= 0 and blocked[i] and "async" in anames[i].lower()
                             for i in ai])
        how = "Async copy calls that blocked the host until the copy ended"
    if not pageable.any():
        return []
    s, e = c.numpy("start")[pageable], c.numpy("end")[pageable]
    dur = int((e - s).sum())
    nbytes = int(c.numpy("bytes", fill=0)[pageable].sum())
    g0, g1 = _gaps(ctx)
    idle = int(_covered(g0, g1, s, e).sum())
    speedup = float(ctx.probes.get("pinned_speedup", DEFAULT_PINNED_SPEEDUP))
    gain = min(dur * (1 - 1 / speedup), idle)
    if gain < 0.01 * span:
        return []
    rows = np.flatnonzero(pageable)
    bw = nbytes / dur if dur else None        # bytes/ns == GB/s
    ev = Evidence(
        figures={"pageable_copies": int(pageable.sum()), "bytes": nbytes, "copy_ns": dur,
                 "bandwidth_GBps": None if bw is None else round(bw, 2),
                 "gpu_idle_during_copies_ns": idle, "assumed_pinned_speedup": speedup,
                 "detected_by": how},
        refs=[Ref.at_row("copies", int(r), names[r] or "pageable copy") for r in rows[:10]])
    return [Proposal(
        id="pinned-memory", rule="pinned-memory",
        title=(f"Copy from pinned host memory: {int(pageable.sum())} pageable copies take "
               f"{dur / 1e6:.1f} ms" + (f" at {bw:.1f} GB/s" if bw else "")),
        evidence=ev, estimated_gain_fraction=gain / span,
        formula="min(pageable copy time x (1 - 1/pinned_speedup), GPU idle during those "
                "copies) / span; pinned_speedup = probe 'pinned_speedup' or 2 (assumed)",
        confidence=Confidence("medium" if "pinned_speedup" not in ctx.probes else "high",
                              f"detected: {how}; speed-up of pinned copies "
                              + ("measured by a probe" if "pinned_speedup" in ctx.probes
                                 else "assumed 2x (not measured)")),
        experiment=Experiment(recipe=(
            "# PyTorch: allocate the host tensor pinned once and reuse it\n"
            "host = torch.empty(shape, dtype=dtype, pin_memory=True)   # or x.pin_memory()\n"
            "# DataLoader(..., pin_memory=True)\n"
            "# HIP/CUDA: hipHostMalloc / cudaHostAlloc (or hipHostRegister / "
            "cudaHostRegister an existing buffer)")),
        applies_to="both", docs=[knobs.PINNED_MEMORY])]


@rule("remove-syncs")
def remove_syncs(ctx: TraceContext) -> list[Proposal]:
    sc = sync_calls(ctx)
    span = ctx.span_ns
    if len(sc.sync_rows) == 0 or span <= 0 or sc.sync_bubble_ns < 0.01 * span:
        return []
    names = ctx.trace.api.strings("name")
    kinds: dict[str, int] = {}
    for r in sc.sync_rows:
        kinds[names[r]] = kinds.get(names[r], 0) + 1
    steps = _steps(ctx)
    per_step = (f", {len(sc.sync_rows) / steps:.1f} per step" if steps else "")
    ev = Evidence(
        figures={"sync_calls": int(len(sc.sync_rows)), "by_name": kinds, "steps": steps,
                 "bubble_ns": sc.sync_bubble_ns, "span_ns": span},
        refs=[Ref.at_row("api", int(r), f"{names[r]}") for r in sc.sync_rows[:10]])
    return [Proposal(
        id="remove-syncs", rule="remove-syncs",
        title=(f"Remove or defer the {_n(len(sc.sync_rows), 'synchronisation')} in the hot loop"
               f"{per_step}: each drains the GPU before new work is queued"),
        evidence=ev, estimated_gain_fraction=sc.sync_bubble_ns / span,
        formula="sum of GPU idle gaps in which a synchronising call returned (drain and "
                "relaunch bubbles), less the part already counted under blocking copies, "
                "/ span",
        confidence=Confidence("medium", "a sync may be needed for correctness (a value "
                              "the host reads); only the code can tell"),
        experiment=Experiment(recipe=(
            "# PyTorch: avoid .item(), .cpu(), print(tensor), torch.cuda.synchronize() in "
            "the loop;\n# accumulate on the GPU and read once per N steps, e.g.\n"
            "loss_sum += loss.detach()            # instead of loss.item() every step\n"
            "if step % 100 == 0: print(loss_sum.item() / 100)\n"
            "# HIP/CUDA: replace hipDeviceSynchronize with events "
            "(hipEventRecord + hipStreamWaitEvent)")),
        applies_to="both", docs=[knobs.PYTORCH_TUNING_GUIDE, knobs.HIP_ENV_DOCS])]
