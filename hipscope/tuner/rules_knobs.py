"""Runtime-knob rules: ``hw-queues``, ``more-streams``, ``dev-kernarg``,
``serialization-off``, ``tunableop``. Every knob fact comes from ``knobs.py`` (cited
in docs/tuning.md)."""

from __future__ import annotations

import re

import numpy as np

from ..analysis.concurrency import LAUNCH_RE
from ..analysis.stats import kernel_stats, union_length
from . import knobs
from .context import TraceContext
from .estimate import launch_capped, spread_estimate
from .proposals import Confidence, Evidence, Experiment, Proposal, Ref
from .rules import rule


def _stream_busy(ctx: TraceContext, device: int, stream: int) -> int:
    k = ctx.trace.kernels
    m = (k.numpy("device") == device) & (k.numpy("stream", fill=-1) == stream)
    return union_length(k.numpy("start")[m], k.numpy("end")[m])


def _int_env(ctx: TraceContext, name: str, default: int) -> tuple[int, str]:
    """(effective integer value of ``name``, where it came from)."""
    value, where = ctx.knob(name, default)
    try:
        return int(str(value).strip()), where
    except ValueError:
        return default, f"the documented default ({name}={value!r} in {where} is no number)"


@rule("hw-queues")
def hw_queues(ctx: TraceContext) -> list[Proposal]:
    pairs = ctx.concurrency.get("serialized_stream_pairs", [])
    span = ctx.span_ns
    if not pairs or span <= 0:
        return []
    per_dev = ctx.concurrency["per_device"]
    if ctx.vendor == "AMD":
        pairs = [p for p in pairs if p["shared_queue"]]
        var = "GPU_MAX_HW_QUEUES"
        current, source = _int_env(ctx, var, knobs.GPU_MAX_HW_QUEUES_DEFAULT)
        cap, docs = knobs.INSTINCT_USER_QUEUE_LIMIT, [knobs.HIP_ENV_DOCS, knobs.CLR_FLAGS,
                                                       knobs.OVERSUBSCRIPTION,
                                                       knobs.MI300X_WORKLOAD]
    elif ctx.vendor == "NVIDIA":
        var = "CUDA_DEVICE_MAX_CONNECTIONS"
        current, source = _int_env(ctx, var, knobs.CUDA_MAX_CONNECTIONS_DEFAULT)
        # streams beyond the connections alias onto them; at or below it, the
        # serialisation has another cause (dependencies, events)
        pairs = [p for p in pairs if per_dev[str(p["device"])]["streams"] > current]
        cap, docs = knobs.CUDA_MAX_CONNECTIONS_MAX, [knobs.CUDA_ENV_DOCS]
    else:
        return []
    if not pairs:
        return []
    streams = max(per_dev[str(p["device"])]["streams"] for p in pairs)
    want = min(max(streams, current + 1), cap)
    if want <= current:
        return []
    overlap = sum(min(_stream_busy(ctx, p["device"], p["stream_a"]),
                      _stream_busy(ctx, p["device"], p["stream_b"])) for p in pairs)
    overlap = min(overlap, span)
    est, floor = launch_capped(ctx, spread_estimate(ctx, overlap))
    pids = len(ctx.trace.meta.get("pids") or []) or 1
    notes = [f"{var}={current}: {source}"]
    if ctx.vendor == "AMD":
        notes.append(f"{var} is per process and per device; {pids} process(es) x {want} "
                     f"queues must stay within the {cap} user-mode compute queues of "
                     "Instinct GPUs, or the driver oversubscribes (see docs)")
        if pids * want > cap:
            want = max(current + 1, cap // pids)
        notes.append("AMD's MI300X guide notes the hardware is most efficient with 4 "
                     "streams or fewer: fewer streams is the other experiment")
    else:
        notes.append("CUDA_DEVICE_MAX_CONNECTIONS=1 is often set on purpose (ordering of "
                     "communication and compute kernels); check before raising it")
    ev = Evidence(
        figures={"serialized_pairs": len(pairs), "streams": streams, var: current,
                 f"{var}_from": source, "overlappable_ns": overlap, "span_ns": span,
                 "launch_floor_ns": floor},
        refs=[Ref(f"streams {p['stream_a']} and {p['stream_b']} on device {p['device']} "
                  f"never overlap ({p['interleavings']} switches)") for p in pairs[:10]],
        notes=notes)
    return [Proposal(
        id="hw-queues", rule="hw-queues",
        title=(f"Raise {var} from {current} to {'at least ' if want >= streams else ''}"
               f"{want}: {len(pairs)} stream pairs share a hardware queue and never run "
               f"concurrently (now {current}, {_short_source(source)})"),
        evidence=ev, estimated_gain_fraction=est.fraction, estimate=est,
        formula="sum over serialised stream pairs of min(busy time of stream a, busy time "
                "of stream b) (upper bound: assumes their kernels could fully overlap), "
                "at most each step less the time its launching thread takes to issue the "
                "step's launches (the host's launch rate: more queues do not launch faster)",
        confidence=Confidence("low" if ctx.vendor == "NVIDIA" else "medium",
                              "kernels that already fill the GPU gain nothing from overlap; "
                              "the A/B run decides"),
        experiment=Experiment(env={var: str(want)}, note="; ".join(notes)),
        applies_to=ctx.vendor, docs=docs)]


def _short_source(where: str) -> str:
    """Where a knob value came from (:meth:`TraceContext.knob`), short, for titles."""
    for start, short in (("the environment of", "from the run's environment"),
                         ("stated", "stated by the user"),
                         ("the target's", "from the target's environment"),
                         ("the profiler's", "set by the profiler"),
                         ("the trace's", "from the trace's metadata")):
        if where.startswith(start):
            return short
    return "the documented default"


_STREAM_ARG = re.compile(r"^--?(?:num[-_]?|n[-_])?streams?(?:=(\d+))?$", re.IGNORECASE)


def _stream_arg(command: object) -> tuple[str, int, int] | None:
    """(argument text, index in argv, value) of a stream-count argument, if any."""
    argv = command if isinstance(command, list) else str(command or "").split()
    for i, a in enumerate(argv):
        m = _STREAM_ARG.match(a)
        if not m:
            continue
        if m[1]:
            return a, i, int(m[1])
        if i + 1 < len(argv) and argv[i + 1].isdigit():
            return a, i, int(argv[i + 1])
    return None


@rule("more-streams")
def more_streams(ctx: TraceContext) -> list[Proposal]:
    arg = _stream_arg(ctx.command)
    span = ctx.span_ns
    if arg is None or span <= 0:
        return []
    text, _, n = arg
    single = [int(d) for d, v in ctx.concurrency["per_device"].items() if v["streams"] <= n]
    if not single:
        return []
    tot = ctx.idle.total()
    queued_idle = tot["launch_overhead"] + tot["other"]
    gain = queued_idle * 0.5
    if gain < 0.01 * span:
        return []
    new = f"{text.split('=')[0]}={2 * n}" if "=" in text else f"{text} {2 * n}"
    old = text if "=" in text else f"{text} {n}"
    ev = Evidence(figures={"stream_argument": old, "streams_used": n,
                           "queued_idle_ns": queued_idle, "span_ns": span})
    return [Proposal(
        id="more-streams", rule="more-streams",
        title=f"Run independent work on more streams: try {new} (now {old})",
        evidence=ev, estimated_gain_fraction=gain / span,
        formula="(launch_overhead + other idle) x 0.5 / span: doubling the streams is "
                "assumed to hide half of the idle time of queued work",
        confidence=Confidence("low", "whether the work is independent is not visible in "
                              "a trace; the program's stream argument says it can be split"),
        experiment=Experiment(args=[{"old": old, "new": new}]),
        applies_to="both", docs=[knobs.HIP_ENV_DOCS, knobs.CUDA_ENV_DOCS])]


def mi300_class(ctx: TraceContext) -> bool:
    if any(a.split(":")[0] in knobs.MI300_CLASS_ARCHS for a in ctx.archs):
        return True
    return any(re.search(r"MI30[0-9]|MI325", n) for n in ctx.device_names)


@rule("dev-kernarg")
def dev_kernarg(ctx: TraceContext) -> list[Proposal]:
    """HIP_FORCE_DEV_KERNARG=1 on MI300-class GPUs, only where the runtime does not
    already put kernel arguments in device memory (conservative: see docs/tuning.md)."""
    if ctx.vendor != "AMD" or not mi300_class(ctx):
        return []
    env, where = ctx.knob("HIP_FORCE_DEV_KERNARG")
    ver = ctx.rocm_version
    if env is not None and knobs.env_flag_on(env):
        return []
    if env is not None:
        level, why = "medium", f"HIP_FORCE_DEV_KERNARG={env} is set in {where}"
    elif ver is not None and ver >= knobs.DEV_KERNARG_DEFAULT_FROM:
        return []     # clr already uses device kernel arguments on gfx94x by default
    elif ver is not None:
        level, why = "medium", (f"ROCm {ver[0]}.{ver[1]} predates the device-kernarg default "
                                "on gfx94x (6.1, per IREE's note; not stated by AMD docs)")
    else:
        level, why = "low", ("the ROCm version is not recorded: it may already default to "
                             "device kernel arguments (clr does on gfx94x since ~6.1)")
    span = ctx.span_ns
    # kernels that were still queued when their launch call returned (queue delay
    # from the call's end > 0): each paid the dispatch latency the knob shortens
    q = ctx.delays.from_api_end
    n_gaps = int(np.count_nonzero(q > 0)) if q is not None else 0
    launch_idle = ctx.idle.total()["launch_overhead"]
    gain = min(launch_idle, n_gaps * knobs.DEV_KERNARG_SAVING_NS)
    if span <= 0 or (gain < 0.01 * span and env is None):
        return []
    ev = Evidence(figures={"kernels_queued_after_launch_returned": n_gaps,
                           "launch_overhead_idle_ns": launch_idle,
                           "rocm_version": None if ver is None else f"{ver[0]}.{ver[1]}",
                           "archs": ", ".join(sorted(set(ctx.archs))),
                           "HIP_FORCE_DEV_KERNARG": env,
                           "HIP_FORCE_DEV_KERNARG_from": where})
    return [Proposal(
        id="dev-kernarg", rule="dev-kernarg",
        title=f"Set HIP_FORCE_DEV_KERNARG=1: {n_gaps:,} kernels waited on launch latency",
        evidence=ev, estimated_gain_fraction=gain / span,
        formula="min(launch_overhead idle, kernels queued after their launch call returned "
                "x 2 us) / span "
                "(HIP docs: 2-3 us for some kernels; 2 us taken)",
        confidence=Confidence(level, why),
        experiment=Experiment(env={"HIP_FORCE_DEV_KERNARG": "1"}),
        applies_to="AMD", docs=[knobs.HIP_ENV_DOCS, knobs.CLR_KERNARG,
                                knobs.IREE_KERNARG_NOTE, knobs.MI300X_WORKLOAD])]


def _blocked_on_own_kernel(ctx: TraceContext) -> tuple[int, int, int]:
    """(linked kernels, kernels that ended before their launch call returned, ns the
    host spent in launch calls while their kernel ran)."""
    k, api = ctx.trace.kernels, ctx.trace.api
    if not ctx.linked:
        return 0, 0, 0
    ai = k.numpy("api_index", fill=-1).astype(np.int64)
    codes, names = api.codes("name")
    is_launch = np.array([bool(LAUNCH_RE.search(n)) and "graph" not in n.lower()
                          for n in names] + [False])
    ok = ai >= 0
    ok[ok] = is_launch[codes[ai[ok]]]
    if not ok.any():
        return 0, 0, 0
    a = ai[ok]
    ks, ke = k.numpy("start")[ok], k.numpy("end")[ok]
    as_, ae = api.numpy("start")[a], api.numpy("end")[a]
    inside = ke <= ae
    overlap = np.clip(np.minimum(ke, ae) - np.maximum(ks, as_), 0, None)
    return int(ok.sum()), int(inside.sum()), int(overlap.sum())


@rule("serialization-off")
def serialization_off(ctx: TraceContext) -> list[Proposal]:
    on = {v: str(ctx.env[v]) for v in knobs.SERIALIZATION_VARS
          if v in ctx.env and knobs.env_flag_on(ctx.env[v])}
    n, inside, blocked = _blocked_on_own_kernel(ctx)
    evidence = n >= 20 and inside >= 0.95 * n
    if not on and not evidence:
        return []
    span = ctx.span_ns
    if on:
        level, why = "high", "set: " + ", ".join(
            f"{k}={v} (from {ctx.knob(k)[1]})" for k, v in on.items())
    else:
        level, why = "medium", (f"{inside:,} of {n:,} kernels finished before their launch "
                                "call returned: launches are synchronous")
    env_change: dict[str, str | None] = {k: None for k in on} or {
        ("AMD_SERIALIZE_KERNEL" if ctx.vendor == "AMD" else "CUDA_LAUNCH_BLOCKING"): "0"}
    if ctx.vendor == "AMD" and not on:
        env_change.update({"HIP_LAUNCH_BLOCKING": "0", "AMD_SERIALIZE_COPY": "0"})
    ev = Evidence(figures={"serialization_env": on or None, "linked_kernels": n,
                           "ended_inside_launch_call": inside,
                           "host_blocked_on_own_kernel_ns": blocked, "span_ns": span})
    applies = "AMD" if any(v.startswith(("AMD_", "HIP_")) for v in on) else (
        "NVIDIA" if on else (ctx.vendor or "both"))
    return [Proposal(
        id="serialization-off", rule="serialization-off",
        title=("Turn off launch serialisation (" + ", ".join(on) + ")" if on else
               "Launches are synchronous: find and unset the serialisation knob"),
        evidence=ev, estimated_gain_fraction=(blocked / span) if span > 0 else 0.0,
        formula="sum over kernels of the time the host sat in the kernel's own launch call "
                "while the kernel ran / span",
        confidence=Confidence(level, why),
        experiment=Experiment(env=env_change, note=(
            "These are debugging switches (AMD_SERIALIZE_KERNEL/COPY: 1 wait before, 2 "
            "after, 3 both; HIP_LAUNCH_BLOCKING = AMD_SERIALIZE_KERNEL=2; "
            "CUDA_LAUNCH_BLOCKING=1 disables asynchronous launches).")),
        applies_to=applies if applies in ("AMD", "NVIDIA") else "both",
        docs=[knobs.HIP_ENV_DOCS, knobs.CLR_FLAGS, knobs.CUDA_ENV_DOCS])]


GEMM_RE = re.compile(r"(gemm|Cijk_|matmul|hipblaslt|rocblas|tensile|xmma|cutlass)",
                     re.IGNORECASE)
ASSUMED_TUNABLEOP_GEMM_SAVING = 0.10


@rule("tunableop")
def tunableop(ctx: TraceContext) -> list[Proposal]:
    if ctx.vendor != "AMD" or not ctx.is_pytorch:
        return []
    if knobs.env_flag_on(ctx.env.get("PYTORCH_TUNABLEOP_ENABLED")):
        return []
    ks = kernel_stats(ctx.trace)
    total = float(ks.total.sum())
    gemm = float(sum(t for n, t in zip(ks.names, ks.total) if GEMM_RE.search(n)))
    span = ctx.span_ns
    if total <= 0 or span <= 0 or gemm < 0.3 * total:
        return []
    saving = float(ctx.probes.get("tunableop_gemm_saving", ASSUMED_TUNABLEOP_GEMM_SAVING))
    ev = Evidence(figures={"gemm_ns": int(gemm), "kernel_ns": int(total),
                           "gemm_fraction_of_gpu_time": round(gemm / total, 3),
                           "assumed_gemm_saving": saving})
    return [Proposal(
        id="tunableop", rule="tunableop",
        title=(f"Tune the GEMMs with PyTorch TunableOp: GEMM kernels are "
               f"{gemm / total:.0%} of GPU time"),
        evidence=ev, estimated_gain_fraction=min(gemm * saving, span) / span,
        formula="GEMM kernel time x assumed saving (10 %, or probe 'tunableop_gemm_saving') "
                "/ span",
        confidence=Confidence("low", "the saving is assumed; AMD notes tuning may not beat "
                              "the default hipBLASLt choice"),
        experiment=Experiment(
            steps=[{"name": "tuning pass", "env": {"PYTORCH_TUNABLEOP_ENABLED": "1",
                                                   "PYTORCH_TUNABLEOP_TUNING": "1"},
                    "writes": "tunableop_results<device ordinal>.csv "
                              "(PYTORCH_TUNABLEOP_FILENAME, default tunableop_results.csv)"},
                   {"name": "measured run", "env": {"PYTORCH_TUNABLEOP_ENABLED": "1",
                                                    "PYTORCH_TUNABLEOP_TUNING": "0"}}],
            env={"PYTORCH_TUNABLEOP_ENABLED": "1", "PYTORCH_TUNABLEOP_TUNING": "0"},
            note="run the tuning pass once (slow), then A/B the measured run against the "
                 "baseline; results are rejected when PyTorch/ROCm/BLAS versions change"),
        applies_to="AMD", docs=[knobs.TUNABLEOP_README, knobs.MI300X_WORKLOAD])]
