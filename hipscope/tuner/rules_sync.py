"""Copy and synchronisation rules: ``async-copies``, ``pinned-memory``, ``remove-syncs``.

Which calls block the host is decided by ``analysis.idle`` (``is_sync_call`` and its
blocking-copy detection: a copy call during which the host stayed for at least half
of the copy it issued), the same definition the idle breakdown's *sync* category
uses. "In the hot loop" means overlapping the kernel window (first kernel start to
last kernel end). Gains are wall-clock (``tuner.estimate``): the GPUs' idle time is
counted once however many GPUs idle at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..analysis.idle import Coverage, blocking_copy_calls, is_sync_call
from ..analysis.stats import union_length
from ..model import api_names
from ..model.api_names import SYNC_DOMAINS, per_code
from ..model.units import fmt_duration
from . import knobs
from .context import TraceContext
from .estimate import Pieces, estimate, steps_of, thread_label
from .proposals import Confidence, Evidence, Experiment, Proposal, Ref
from .rules import rule

_MEMSET_RE = re.compile(r"memset", re.IGNORECASE)
# Assumed pinned/pageable bandwidth ratio when no probe measured it: conservative
# (pinned host-device copies are usually several times faster than pageable ones).
DEFAULT_PINNED_SPEEDUP = 2.0


@dataclass
class SyncCalls:
    """API rows (in the kernel window) by kind, and where the GPUs idle because of
    them, on the wall clock (time several GPUs idle at once counted once)."""

    copy_rows: np.ndarray        # blocking copy calls
    sync_rows: np.ndarray        # other blocking calls (synchronize, ...)
    copy_idle: Pieces            # GPU idle while the host was in a blocking copy
    bubbles: Pieces              # idle gaps in which a sync call returned, less copy idle

    @property
    def copy_idle_ns(self) -> int:
        return self.copy_idle.wall.length

    @property
    def sync_bubble_ns(self) -> int:
        return self.bubbles.wall.length


def _gap_groups(ctx: TraceContext, mask_of=None) -> list[tuple[Coverage, int, str]]:
    """The idle gaps per (GPU, launching thread), optionally only those ``mask_of(di)``
    selects."""
    out = []
    for d, di in ctx.idle.devices.items():
        rows = np.flatnonzero(mask_of(di)) if mask_of is not None else \
            np.arange(len(di.gap_start))
        key = di.gap_pid[rows] * (1 << 32) + (di.gap_tid[rows] & 0xFFFFFFFF)
        order = np.argsort(key, kind="stable")
        rows, key = rows[order], key[order]
        cut = np.flatnonzero(np.diff(key)) + 1
        for grp in np.split(rows, cut) if len(rows) else []:
            i = grp[0]
            out.append((Coverage(di.gap_start[grp], di.gap_end[grp]), int(d),
                        thread_label(int(di.gap_pid[i]), int(di.gap_tid[i]))))
    return out


def _during(groups: list[tuple[Coverage, int, str]], starts: np.ndarray, ends: np.ndarray,
            threads: np.ndarray | None = None) -> Pieces:
    """The gaps' parts that fall inside [starts, ends); tagged with the interval's
    thread when ``threads`` is given (else the gap's)."""
    out = []
    labels = [""] if threads is None else sorted(set(threads.tolist()))
    for t in labels:
        m = np.ones(len(starts), bool) if threads is None else threads == t
        cov = Coverage(starts[m], ends[m])
        for g, d, gt in groups:
            out.append((g.intersect(cov), d, gt if threads is None else t))
    return Pieces.of(out)


def sync_calls(ctx: TraceContext) -> SyncCalls:
    api = ctx.trace.api
    empty = np.zeros(0, dtype=np.int64)
    if len(api) == 0:
        return SyncCalls(empty, empty, Pieces.of([]), Pieces.of([]))
    codes, names = api.codes("name")
    dcodes, domains = api.codes("domain")
    is_sync = per_code(names, is_sync_call)[codes]
    is_sync |= per_code(domains, lambda d: d in SYNC_DOMAINS)[dcodes]
    is_copy = per_code(names, api_names.is_copy)[codes]
    blocking_copy = (is_sync & is_copy) | blocking_copy_calls(ctx.trace)
    s, e = api.numpy("start"), api.numpy("end")
    w0, w1 = ctx.kernel_window
    inside = (e > w0) & (s < w1)
    copy_rows = np.flatnonzero(blocking_copy & inside)
    sync_rows = np.flatnonzero(is_sync & ~is_copy & ~blocking_copy & inside)
    copy_idle = _during(_gap_groups(ctx), s[copy_rows], e[copy_rows],
                        _api_threads(ctx, copy_rows))
    # A gap in which a sync call returned is a drain-and-relaunch bubble: the host
    # waited for the GPU to finish, then had to queue new work.
    ends = np.sort(e[sync_rows])

    def returned(di) -> np.ndarray:
        return np.searchsorted(ends, di.gap_end, side="right") > np.searchsorted(
            ends, di.gap_start, side="left")

    copies = Coverage(s[copy_rows], e[copy_rows])
    bubbles = Pieces.of([(g.minus(copies), d, t) for g, d, t in _gap_groups(ctx, returned)])
    return SyncCalls(copy_rows, sync_rows, copy_idle, bubbles)


def _api_threads(ctx: TraceContext, rows: np.ndarray) -> np.ndarray:
    api = ctx.trace.api
    pid = api.numpy("pid", fill=-1).astype(np.int64)[rows]
    tid = api.numpy("tid", fill=-1).astype(np.int64)[rows]
    return np.array([thread_label(p, t) for p, t in zip(pid.tolist(), tid.tolist())],
                    dtype=object)


def _steps(ctx: TraceContext) -> int | None:
    """Number of steps the trace marks (``analysis.steps``), None without any."""
    st = steps_of(ctx)
    return len(st) if st is not None else None


def _n(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


@rule("async-copies")
def async_copies(ctx: TraceContext) -> list[Proposal]:
    sc = sync_calls(ctx)
    span = ctx.span_ns
    idle = sc.copy_idle_ns
    if len(sc.copy_rows) == 0 or span <= 0 or idle < 0.02 * span:
        return []
    k = ctx.trace.kernels
    busy = union_length(k.numpy("start"), k.numpy("end"))      # any GPU busy, wall clock
    gain = min(idle, busy)
    est = estimate(ctx, sc.copy_idle.scaled(gain / idle))
    codes, cats = ctx.trace.api.codes("name")
    names = {int(r): cats[codes[r]] for r in sc.copy_rows}       # only the rows shown
    called = sorted(set(names.values()))
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
               f"{fmt_duration(idle)} during them"),
        evidence=ev, estimated_gain_fraction=est.fraction, estimate=est,
        formula="min(wall-clock GPU idle while the host is in blocking copy calls, GPU "
                "kernel busy time it could overlap with), per steady-state step / step "
                "time (no steps: over the kernel window)",
        confidence=Confidence("medium" if est.fraction >= 0.05 else "low",
                              "overlap needs independent work to hide the copy behind; "
                              "the estimate assumes all kernel time is available"),
        experiment=Experiment(recipe=(
            "# PyTorch: pinned source + non_blocking copy (on a side stream to overlap)\n"
            "host = host.pin_memory()            # once, outside the loop\n"
            "d = host.to(device, non_blocking=True)\n"
            "# HIP/CUDA: hipHostMalloc/cudaHostAlloc buffers + hipMemcpyAsync/cudaMemcpyAsync"
            " on a separate stream, synchronised with an event instead of the device")),
        applies_to="both", docs=[knobs.PINNED_MEMORY])]


def _pageable(ctx: TraceContext, names: list[str]) -> tuple[np.ndarray, str]:
    """Copies from pageable memory, and how they were recognised."""
    c = ctx.trace.copies
    pageable = np.array(["pageable" in n.lower() for n in names], dtype=bool)
    if pageable.any() or not c.has("api_index"):
        return pageable, "the profiler labels them Pageable"
    # copy calls named Async that still blocked the host: pageable memory is the
    # usual reason (analysis.idle's blocking-copy detection)
    blocked = blocking_copy_calls(ctx.trace)
    ai = c.numpy("api_index", fill=-1).astype(np.int64)
    codes, anames = ctx.trace.api.codes("name")
    is_async = np.array(["async" in n.lower() for n in anames] + [False])
    ok = ai >= 0
    pageable = np.zeros(len(ai), dtype=bool)
    pageable[ok] = blocked[ai[ok]] & is_async[codes[ai[ok]]]
    return pageable, "Async copy calls that blocked the host until the copy ended"


@rule("pinned-memory")
def pinned_memory(ctx: TraceContext) -> list[Proposal]:
    c = ctx.trace.copies
    span = ctx.span_ns
    if len(c) == 0 or span <= 0:
        return []
    names = [n or "" for n in c.strings("name")] if c.has("name") else [""] * len(c)
    pageable, how = _pageable(ctx, names)
    if not pageable.any():
        return []
    s, e = c.numpy("start")[pageable], c.numpy("end")[pageable]
    dur = union_length(s, e)                  # wall clock: copies may overlap
    nbytes = int(c.numpy("bytes", fill=0)[pageable].sum())
    threads = None
    if c.has("api_index") and len(ctx.trace.api):
        ai = c.numpy("api_index", fill=-1).astype(np.int64)[pageable]
        threads = np.where(ai >= 0, _api_threads(ctx, np.maximum(ai, 0)), "")
    during = _during(_gap_groups(ctx), s, e, threads)
    idle = during.wall.length
    speedup = float(ctx.probes.get("pinned_speedup", DEFAULT_PINNED_SPEEDUP))
    gain = min(dur * (1 - 1 / speedup), idle)
    if gain < 0.01 * span or idle <= 0:
        return []
    est = estimate(ctx, during.scaled(gain / idle))
    rows = np.flatnonzero(pageable)
    per_copy = int((e - s).sum())
    bw = nbytes / per_copy if per_copy else None        # bytes/ns == GB/s, mean per copy
    ev = Evidence(
        figures={"pageable_copies": int(pageable.sum()), "bytes": nbytes, "copy_ns": dur,
                 "bandwidth_GBps": None if bw is None else round(bw, 2),
                 "gpu_idle_during_copies_ns": idle, "assumed_pinned_speedup": speedup,
                 "detected_by": how},
        refs=[Ref.at_row("copies", int(r), names[r] or "pageable copy") for r in rows[:10]])
    return [Proposal(
        id="pinned-memory", rule="pinned-memory",
        title=(f"Copy from pinned host memory: {int(pageable.sum())} pageable copies take "
               f"{fmt_duration(dur)}" + (f" at {bw:.1f} GB/s" if bw else "")),
        evidence=ev, estimated_gain_fraction=est.fraction, estimate=est,
        formula="min(pageable copy time x (1 - 1/pinned_speedup), wall-clock GPU idle "
                "during those copies), per steady-state step / step time (no steps: over "
                "the kernel window); pinned_speedup = probe 'pinned_speedup' or 2 (assumed)",
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
    est = estimate(ctx, sc.bubbles)
    codes, cats = ctx.trace.api.codes("name")
    names = {int(r): cats[codes[r]] for r in sc.sync_rows}       # only the rows shown
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
        evidence=ev, estimated_gain_fraction=est.fraction, estimate=est,
        formula="wall-clock union of the GPU idle gaps in which a synchronising call "
                "returned (drain and relaunch bubbles), less the part already counted "
                "under blocking copies, per steady-state step / step time (no steps: over "
                "the kernel window)",
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
