"""`hipscope tune`: optimisation proposals for a trace, and A/B sweeps.

    hipscope tune --propose TRACE [--json] [--probe-trace GRAPH_TRACE] [--no-probe]
                  [--env K=V ...] [--command CMD] [--cwd DIR]
    hipscope tune --sweep SPEC.toml [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hipscope tune",
                                description="Propose optimisations for a trace; run A/B sweeps.")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--propose", nargs="+", type=Path, metavar="TRACE",
                   help="trace file(s) of one run: print proposals, best first")
    g.add_argument("--sweep", type=Path, metavar="SPEC",
                   help="sweep spec (.json or .toml): run it and print the A/B results")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--probe-trace", type=Path, metavar="GRAPH_TRACE",
                   help="a graph-replay trace of the same machine: measures the replay "
                        "cost per graph node for the graph-capture estimate")
    p.add_argument("--no-probe", action="store_true",
                   help="ignore the stored `hipscope probe` result of the trace's GPU")
    p.add_argument("--rule", action="append", help="run only this rule (repeatable)")
    p.add_argument("--no-cache", action="store_true", help="do not use the parsed-trace cache")
    p.add_argument("--env", action="append", default=[], metavar="K=V",
                   help="the environment the traced program ran with (K=V sets, -K unsets; "
                        "repeatable): rules read these before the trace's own metadata; "
                        "for traces hipscope did not launch (a run folder's env is read "
                        "on its own; these win over it)")
    p.add_argument("--command", metavar="CMD",
                   help="the traced program's command line (shell words), e.g. "
                        "\"python3 train.py --streams 4\"")
    p.add_argument("--cwd", metavar="DIR", help="the traced program's working directory")
    return p


def run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.sweep:
        return _sweep(args)
    return _propose(args)


def _open(paths: list[Path], use_cache: bool):
    from ..parsers import TraceFormatError, open_trace

    try:
        return open_trace(paths, use_cache=use_cache)
    except (TraceFormatError, KeyError, OSError) as exc:
        print(f"hipscope: {exc}", file=sys.stderr)
        return None


def _propose(args) -> int:
    from ..tuner.rules import RULES, graph_node_cost_ns, propose

    trace = _open(args.propose, not args.no_cache)
    if trace is None:
        return 2
    trace = _stated(trace, args)
    if trace is None:
        return 2
    probes: dict[str, float] = {}
    if args.probe_trace:
        probe = _open([args.probe_trace], not args.no_cache)
        if probe is None:
            return 2
        node = graph_node_cost_ns(probe)
        if node is None:
            print(f"hipscope: {args.probe_trace} has no graph-launched kernels to measure",
                  file=sys.stderr)
            return 2
        probes["graph_node_ns"] = node
    if not args.no_probe:
        _add_stored_probe(trace, probes)
    if args.rule:
        propose(trace, probes, only=[])          # loads the rule modules
        unknown = [r for r in args.rule if r not in RULES]
        if unknown:
            print(f"hipscope: unknown rule(s) {', '.join(unknown)}; known: "
                  f"{', '.join(sorted(RULES))}", file=sys.stderr)
            return 2
    props = propose(trace, probes, only=args.rule)
    if args.json:
        json.dump([p.to_json() for p in props], sys.stdout, allow_nan=False, default=str)
        sys.stdout.write("\n")
        return 0
    if not props:
        print("No proposals: nothing in this trace points to a knob or change hipscope "
              "knows.")
        return 0
    for i, p in enumerate(props, 1):
        print(f"{i}. [{p.id}] {p.title}")
        print(f"   estimated gain: {p.estimate_text()} "
              f"({p.confidence.level} confidence: {p.confidence.why})")
        if p.estimate is not None and p.estimate.breakdown_text():
            print(f"   per GPU / host thread: {p.estimate.breakdown_text()}")
        print(f"   formula: {p.formula}")
        ex = p.experiment
        if ex.env:
            print("   try: " + " ".join(f"{k}={'(unset)' if v is None else v}"
                                        for k, v in ex.env.items()))
        for a in ex.args:
            print(f"   try: {a.get('old')} -> {a.get('new')}")
        if ex.recipe:
            print("   change the code:")
            print("\n".join("      " + line for line in ex.recipe.splitlines()))
        for d in p.docs:
            print(f"   see: {d.title} <{d.url}>")
    return 0


def _stated(trace, args):
    """``trace`` with the env/command the user stated (``--env``, ``--command``) as its
    run (over a run folder's); None after printing why a value is not understood."""
    import shlex

    from ..launchers.spec import parse_env_changes
    from ..parsers.run_provenance import stated_run

    if not (args.env or args.command or args.cwd):
        return trace
    try:
        env = parse_env_changes(args.env)
        command = shlex.split(args.command) if args.command else None
    except ValueError as exc:
        print(f"hipscope: {exc}", file=sys.stderr)
        return None
    return trace.with_meta(run=stated_run(command, env, args.cwd, trace.meta.get("run")))


def _add_stored_probe(trace, probes: dict[str, float]) -> None:
    """Figures of the newest stored `hipscope probe` of the trace's GPU (graph replay
    cost per node, pinned/pageable copy speed-up) where no --probe-trace gave them."""
    from ..probe.store import probes_for_trace

    stored, desc = probes_for_trace(trace)
    used = {k: v for k, v in stored.items() if k not in probes}
    if used:
        probes.update(used)
        print(f"hipscope: using the {desc}", file=sys.stderr)


def _sweep(args) -> int:
    from ..tuner.sweep import SweepError, SweepSpec, launcher_runner, run_sweep, subprocess_runner

    try:
        spec = SweepSpec.load(args.sweep)
    except (SweepError, OSError) as exc:
        print(f"hipscope: {exc}", file=sys.stderr)
        return 2
    if spec.target == "local" and spec.profiler == "none":
        runner = subprocess_runner(spec.command, cwd=spec.cwd)
    else:
        runner = launcher_runner(spec)
    try:
        res = run_sweep(spec, runner)
    except SweepError as exc:
        print(f"hipscope: {exc}", file=sys.stderr)
        return 1
    if args.json:
        json.dump(res.to_json(), sys.stdout, allow_nan=False, default=str)
        sys.stdout.write("\n")
        return 0
    _print_sweep(res)
    return 0


SOURCES = {"program": "the program's HIPSCOPE_RESULT wall_s", "process": "process wall time"}


def _print_sweep(res) -> None:
    """The sweep's results as text: what was measured, how it stopped, the A/A noise
    floor, one line per variant, warnings and the best variant."""
    plan = res.spec.plan()
    print(f"measured: {SOURCES.get(res.source, res.source)}; {res.rounds} paired rounds after "
          f"{plan.warmup} warm-up round(s), stopped: {res.stopped} (looks at "
          f"{', '.join(map(str, plan.looks()))}; family-wise alpha {plan.alpha:g}, Holm)")
    b = res.control or (res.comparisons and next(iter(res.comparisons.values())))
    if b:
        print(f"baseline: median {b.baseline.median:.4f} s, IQR {b.baseline.iqr:.4f} s over "
              f"{b.baseline.n} runs")
    rows = ([("noise floor: baseline (A/A control)", res.control)]
            if res.control else []) + list(res.comparisons.items())
    for name, c in rows:
        wide = "" if c.precise else ", wider than the target"
        print(f"{name}: median {c.variant.median:.4f} s, ratio {c.ratio:.3f} "
              f"[{c.ci_low:.3f}, {c.ci_high:.3f}] ({c.confidence:.1%}{wide}) -> {c.verdict}")
    for w in res.warnings():
        print(f"warning: {w}")
    best = res.best()
    print(f"best: {best}" if best else "no variant is better than the baseline")
