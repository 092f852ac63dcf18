"""Rules: each a function ``(TraceContext) -> list[Proposal]``, kept in a registry.

:func:`propose` runs the registered rules over one trace and returns the proposals
best first. Rules read the analyses through :class:`TraceContext` (no analysis is
re-implemented here) and cite every knob they propose (``knobs.py``,
docs/tuning.md). This module holds the registry and the launch-path rules
(graph capture); ``rules_sync.py`` the copy and synchronisation rules,
``rules_knobs.py`` the runtime-knob rules.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..analysis.context import TraceAnalyses
from ..analysis.idle import CATEGORIES, Coverage, category_pieces
from ..model import Trace
from ..model.progress import Cancelled, CancelledFn, check_cancel
from ..model.units import fmt_duration
from . import knobs
from .context import TraceContext
from .estimate import Pieces, estimate, spread_estimate, thread_label
from .proposals import Confidence, Evidence, Experiment, Proposal, Ref

log = logging.getLogger(__name__)

Rule = Callable[[TraceContext], list[Proposal]]
RULES: dict[str, Rule] = {}

HOST_WAIT, LAUNCH_OVERHEAD = CATEGORIES.index("host_wait"), CATEGORIES.index("launch_overhead")
MIN_GAIN = 0.01                        # proposals below 1 % (of a step, or the window) dropped


def rule(name: str) -> Callable[[Rule], Rule]:
    """Register ``fn`` under ``name`` (the proposal ids start with it)."""
    def deco(fn: Rule) -> Rule:
        RULES[name] = fn
        fn.rule_name = name  # type: ignore[attr-defined]
        return fn
    return deco


def propose(trace: Trace, probes: dict[str, float] | None = None,
            only: list[str] | None = None, analyses: TraceAnalyses | None = None,
            cancelled: CancelledFn | None = None) -> list[Proposal]:
    """All proposals for ``trace``, best first (gain, then confidence).

    ``probes``: figures measured elsewhere (see :class:`TraceContext`); ``only``:
    rule names to run (default: all); ``analyses``: the trace's analysis service
    (default: its own); ``cancelled``: checked between rules (raises Cancelled). A
    rule that fails is logged and skipped: one bug must not hide the other proposals.
    """
    _load_rule_modules()
    ctx = TraceContext(trace, probes, analyses, cancelled)
    if not ctx.real_timeline:
        return []
    out: list[Proposal] = []
    for name, fn in RULES.items():
        if only is not None and name not in only:
            continue
        check_cancel(cancelled)
        try:
            props = [_bounded(ctx, p) for p in fn(ctx)]
            out.extend(p for p in props if p.estimated_gain_fraction >= MIN_GAIN
                       or p.confidence.level == "high")
        except Cancelled:
            raise                               # not a rule's bug: the tab is closing
        except Exception:  # noqa: BLE001 - a rule's bug must not hide the others
            log.exception("tuner rule %s failed", name)
    out.sort(key=Proposal.sort_key)
    return out


def _bounded(ctx: TraceContext, p: Proposal) -> Proposal:
    """Give a proposal whose rule set only a span fraction its estimate (spread over
    the kernel window), so every proposal speaks per step and none exceeds its window."""
    if p.estimate is None:
        p.estimate = spread_estimate(ctx, p.estimated_gain_fraction * ctx.span_ns)
        p.estimated_gain_fraction = min(max(p.estimate.fraction, 0.0), 1.0)
    return p


_RULES_LOADED: list[str] = []


def _load_rule_modules() -> None:
    """The built-in rule modules and the ``hipscope.rules`` entry points, once (each
    registers its rules with :func:`rule`; loading twice, from two workers, is harmless)."""
    if not _RULES_LOADED:
        from ..model.plugins import load_group

        load_group("hipscope.rules", ["hipscope.tuner.rules_knobs", "hipscope.tuner.rules_sync"])
        _RULES_LOADED.append("loaded")


# ====================================================================== graph capture
@dataclass(frozen=True)
class Stretch:
    """A run of consecutive kernels of one device separated only by launch gaps."""

    device: int
    first_row: int          # row in trace.kernels
    last_row: int
    t0: int
    t1: int
    kernels: int
    host_wait_ns: int       # gaps dominated by host wait
    launch_ns: int          # gaps dominated by launch overhead

    @property
    def recoverable_ns(self) -> int:
        return self.host_wait_ns + self.launch_ns


def launch_stretches(ctx: TraceContext, max_gap_ns: int = 200_000,
                     min_kernels: int = 16) -> list[Stretch]:
    """Launch-bound stretches per device, from the idle breakdown's gaps.

    Consecutive kernels belong to one stretch when the gap between them is absent or
    is dominated by host wait or launch overhead and is at most ``max_gap_ns`` (a
    longer host gap is other CPU work, which capture does not remove). Kernels a
    graph launch queued are already captured: they end a stretch.
    """
    k = ctx.trace.kernels
    starts, ends, dev = k.numpy("start"), k.numpy("end"), k.numpy("device")
    gap_len = np.zeros(len(k), dtype=np.int64)
    gap_cat = np.full(len(k), -1, dtype=np.int8)
    gap_hw = np.zeros(len(k), dtype=np.int64)
    gap_lo = np.zeros(len(k), dtype=np.int64)
    out: list[Stretch] = []
    for d, di in ctx.idle.devices.items():
        check_cancel(ctx.cancelled)             # seconds a device on millions of kernels
        gap_len[di.gap_next_kernel] = di.gap_end - di.gap_start
        gap_cat[di.gap_next_kernel] = di.gap_category
        gap_hw[di.gap_next_kernel] = di.gap_parts[HOST_WAIT]
        gap_lo[di.gap_next_kernel] = di.gap_parts[LAUNCH_OVERHEAD]
        rows = np.flatnonzero(dev == d)
        rows = rows[np.argsort(starts[rows], kind="stable")]
        gl, gc, graph = gap_len[rows], gap_cat[rows], ctx.graph_kernel[rows]
        launch_gap = (gl > 0) & ((gc == HOST_WAIT) | (gc == LAUNCH_OVERHEAD)) & (gl <= max_gap_ns)
        joins = ((gl == 0) | launch_gap) & ~graph
        joins[0] = False
        breaks = np.flatnonzero(~joins)
        bounds = np.append(breaks, len(rows))
        for a, b in zip(bounds[:-1], bounds[1:]):
            if b - a < min_kernels or graph[a]:
                continue
            inner = rows[a + 1:b]
            # the idle breakdown's own parts of each gap (the figures the Queue delay
            # dock and `report` show), not whole gaps by their dominant category
            hw, lo = int(gap_hw[inner].sum()), int(gap_lo[inner].sum())
            r = rows[a:b]
            out.append(Stretch(int(d), int(r[0]), int(r[-1]), int(starts[r[0]]),
                               int(ends[r].max()), int(b - a), hw, lo))
    return out


def graph_node_cost_ns(trace_or_ctx: Trace | TraceContext, threshold_ns: int = 30_000
                       ) -> float | None:
    """GPU idle per graph node at replay, measured on a trace whose kernels graph
    launches queued: the gaps before graph-launched kernels (each at most
    ``threshold_ns``) over the number of graph-launched kernels. None without any."""
    ctx = trace_or_ctx if isinstance(trace_or_ctx, TraceContext) else TraceContext(trace_or_ctx)
    n = int(ctx.graph_kernel.sum())
    if n == 0:
        return None
    total = 0                           # GPU time per node: a per-device sum is right here
    for di in ctx.idle.devices.values():
        gl = di.gap_end - di.gap_start
        sel = ctx.graph_kernel[di.gap_next_kernel] & (gl <= threshold_ns)
        total += int(gl[sel].sum())
    return total / n


_PYTORCH_RECIPE = """\
# PyTorch: capture the launch-bound region once, replay it each step.
# Simplest: let TorchInductor capture it (CUDA graphs on NVIDIA, HIP graphs on ROCm):
step_fn = torch.compile(step_fn, mode="reduce-overhead")
# Or by hand (static input/output tensors; warm up on a side stream first):
g = torch.cuda.CUDAGraph()
s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        out = step_fn(static_input)
torch.cuda.current_stream().wait_stream(s)
with torch.cuda.graph(g):
    static_output = step_fn(static_input)
# each step: static_input.copy_(new_input); g.replay()"""

_NATIVE_RECIPE = """\
// HIP (CUDA: replace hip by cuda): capture the launches once, replay with one call.
hipStreamBeginCapture(stream, hipStreamCaptureModeGlobal);
launch_the_stretch(stream);                 // the kernels between {t0} and {t1}
hipStreamEndCapture(stream, &graph);
hipGraphInstantiate(&exec, graph, nullptr, nullptr, 0);
for (int step = 0; step < steps; ++step) hipGraphLaunch(exec, stream);"""


def stretch_pieces(ctx: TraceContext, kept: list[tuple[float, float, Stretch]],
                   cats: tuple[str, ...] = ("host_wait", "launch_overhead"),
                   scale: bool = True) -> Pieces:
    """Where the stretches' host wait / launch gaps lie on the wall clock (from the
    idle breakdown's gap parts), each stretch's pieces shortened by its replay cost
    when ``scale``; tagged with the GPU and the launching host thread."""
    starts = ctx.trace.kernels.numpy("start")
    groups = []
    per_device: dict[int, list[tuple[int, int, float]]] = {}     # one pass over ``kept``
    for g, _, s in kept:
        per_device.setdefault(s.device, []).append(
            (s.t0, int(starts[s.last_row]),
             g / s.recoverable_ns if scale and s.recoverable_ns else 1.0))
    for d in sorted(per_device):
        check_cancel(ctx.cancelled)
        di = ctx.idle.devices[d]
        mine = sorted(per_device[d])
        lo = np.array([m[0] for m in mine], np.int64)
        hi = np.array([m[1] for m in mine], np.int64)
        # the stretch each gap belongs to: its next kernel starts in (t0, last start]
        j = np.searchsorted(lo, di.gap_end, side="left") - 1
        jc = np.maximum(j, 0)
        sel = (j >= 0) & (di.gap_end <= hi[jc])
        f = np.minimum(np.array([m[2] for m in mine])[jc], 1.0)
        a, b = category_pieces(di, cats)
        b = a + ((b - a) * f).astype(np.int64)
        key = di.gap_pid * (1 << 32) + (di.gap_tid & 0xFFFFFFFF)
        for k in np.unique(key[sel]):
            m = sel & (key == k)
            i = int(np.flatnonzero(m)[0])
            groups.append((Coverage(a[m], b[m]), d,
                           thread_label(int(di.gap_pid[i]), int(di.gap_tid[i]))))
    return Pieces.of(groups)


def _replay_cost(ctx: TraceContext) -> tuple[float | None, str | None]:
    node_ns = ctx.probes.get("graph_node_ns")
    if node_ns is not None:
        return node_ns, "probe"
    node_ns = graph_node_cost_ns(ctx)        # this trace's own graph replays
    return node_ns, ("this trace's graph replays" if node_ns is not None else None)


def _kept_stretches(ctx: TraceContext, node_ns: float | None
                    ) -> list[tuple[float, float, Stretch]]:
    """(gain, replay cost, stretch) of the launch-bound stretches, largest gain first:
    the GPU idled for at least 30 % of the stretch and capture still gains."""
    kept = []
    for s in launch_stretches(ctx):
        replay = (node_ns or 0.0) * s.kernels
        gain_ns = max(0.0, s.recoverable_ns - replay)
        if s.recoverable_ns >= 0.3 * (s.t1 - s.t0) and gain_ns > 0:
            kept.append((gain_ns, replay, s))
    return sorted(kept, key=lambda x: -x[0])


@rule("graph-capture")
def graph_capture(ctx: TraceContext) -> list[Proposal]:
    span = ctx.span_ns
    node_ns, probe_src = _replay_cost(ctx)
    kept = _kept_stretches(ctx, node_ns) if span > 0 else []
    if not kept:
        return []
    est = estimate(ctx, stretch_pieces(ctx, kept))
    hw = stretch_pieces(ctx, kept, ("host_wait",), scale=False).wall.length
    lo = stretch_pieces(ctx, kept, ("launch_overhead",), scale=False).wall.length
    waits = stretch_pieces(ctx, kept, scale=False).wall.length
    nodes = sum(s.kernels for _, _, s in kept)
    frac = est.fraction
    level = "high" if frac >= 0.3 and probe_src else ("medium" if frac >= 0.1 else "low")
    where = "of each step" if est.basis == "steps" else "of the kernel window"
    why = (f"{frac:.0%} {where} is host wait and launch gaps between kernels of "
           f"launch-bound stretches ({nodes:,} kernels)")
    why += (f"; graph replay cost from {probe_src}" if probe_src else
            "; no graph-replay probe: the estimate is an upper bound (replay is not free)")
    if not ctx.linked:
        level, why = "low", why + "; kernels are not linked to launches (host wait unknown)"
    trace_idle = ctx.idle.total()
    ev = Evidence(
        figures={"span_ns": span, "stretches": len(kept), "kernels_in_stretches": nodes,
                 "host_wait_ns": hw, "launch_overhead_ns": lo,
                 "trace_host_wait_ns": trace_idle["host_wait"],
                 "trace_launch_overhead_ns": trace_idle["launch_overhead"],
                 "graph_node_ns": None if node_ns is None else round(node_ns, 1),
                 "replay_cost_ns": int(sum(r for _, r, _ in kept)),
                 "recoverable_ns": est.span_gain_ns},
        refs=[Ref.span(s.t0, s.t1, f"launch-bound stretch on device {s.device}: "
                       f"{s.kernels} kernels, {fmt_duration(s.recoverable_ns)} of launch gaps")
              for _, _, s in kept[:8]]
        + [Ref.at_row("kernels", kept[0][2].first_row, "first kernel of the largest stretch")],
    )
    top = kept[0][2]
    recipe = _PYTORCH_RECIPE if ctx.is_pytorch else _NATIVE_RECIPE.format(t0=top.t0, t1=top.t1)
    return [Proposal(
        id="graph-capture", rule="graph-capture",
        title=(f"Capture the launch-bound stretches into a graph: {nodes:,} kernels wait "
               f"{fmt_duration(waits)} for the host"),
        evidence=ev, estimated_gain_fraction=frac,
        formula="wall-clock union over GPUs of (host_wait + launch_overhead idle in the "
                "launch-bound stretches, each stretch less graph_node_ns x its kernels) "
                "per steady-state step / step time (no steps: over the kernel window)",
        confidence=Confidence(level, why),
        experiment=Experiment(recipe=recipe, note=(
            "Only the program's code can capture a graph; compare a run of the captured "
            "version against this one with the A/B sweep.")),
        applies_to="both", docs=[knobs.CUDA_GRAPHS, knobs.HIP_GRAPHS], estimate=est,
    )]
