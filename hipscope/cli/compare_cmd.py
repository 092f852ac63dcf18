"""`hipscope compare A B [B2 ...]`: run B against run A, for people or for CI.

Exit status: 0, or 1 when a B is slower than A by more than ``--fail-if-slower PCT``
percent (whole span, or the ``--align`` range), 2 on unreadable input (one sentence on
stderr), 130 when cancelled.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..model.units import fmt_duration

DESCRIPTION = """\
Compare run B (or several: each against A) with run A: headline figures A | B | delta,
kernels matched by normalised name and sorted by impact on GPU time, added and removed
kernels, provenance side by side, and a warning when the runs are not comparable.

--json prints one object: span_ns {a, b, ratio} (ratio = b/a), gpu_busy_fraction
{a, b}, kernels [{name, status, a_count, b_count, a_total_ns, b_total_ns, delta_ns,
ratio, a/b_mean_ns, a/b_p95_ns, merged_names}] by |delta_ns|, added, removed, headline
{key: {a, b, delta, ratio, unit}}, provenance {key: {a, b, differs}}, not_comparable,
warnings, gpus {a, b, count {a, b}, unnamed {a, b}, differ} (differ: true, false, or
null where a stand-in name such as "GPU 0" leaves it open: no refusal then), and with
--align: aligned {label, offset_ns {a, b}, a, b, ratio}. Serialised replays
(rocprof-compute, ncu) have no busy/idle figures (null), as in report. With
several B: {"a": path, "comparisons": [{"b": path, ...one object each}]}.

--by op (default auto: op when both runs have ops, e.g. PyTorch profiler traces)
also matches the runs through their op trees (ProfilerStep#N, then ops by name and
order within the parent; plain Python frames are transparent) and compares the GPU
time each matched op launched, whatever its kernels are called, so two GPUs or two
vendors compare; different GPUs are then a fact among the warnings, and "not
comparable" means no op, module or step matched. JSON key ops: {level (op, module or
step), coverage {a, b} (share of each run's attributed GPU time inside matched ops),
levels {level: {a, b}}, matched_ops, by_name [{name, a_count, b_count, a_gpu_ns,
b_gpu_ns, delta_ns, ratio}], rows [{path, name, shapes, b_shapes, ...the same}] (matched
pairs of ops by A's module path), classes [{class, a_gpu_ns, b_gpu_ns, delta_ns,
ratio}], not_comparable, shapes}.

Rules file (--normalize): one regex substitution a line, "PATTERN" (delete matches)
or "PATTERN => REPLACEMENT"; "@defaults" inserts the default rules (hashes, clone,
.kd and " (.kd)" suffixes, Triton signature suffixes), "@templates" the template-argument rule;
"#" starts a comment. Without the file the defaults apply."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hipscope compare", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", type=Path, help="the reference run (trace file or folder)")
    p.add_argument("b", type=Path, nargs="+", help="the run(s) to compare with A")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--fail-if-slower", type=float, metavar="PCT",
                   help="exit 1 when B is slower than A by more than PCT percent")
    p.add_argument("--align", metavar="MARKER[:N]",
                   help="align at the N-th (default 1st) marker/annotation MARKER and "
                        "compare that range's span (e.g. --align 'step 1')")
    p.add_argument("--align-domain", metavar="DOMAIN",
                   help="marker domain for --align (default: gpu_user_annotation, then "
                        "user_annotation, roctx, nvtx)")
    p.add_argument("--align-kernel", metavar="NAME[:N]",
                   help="align at the N-th instance (launch order) of kernel NAME instead")
    p.add_argument("--normalize", type=Path, metavar="RULES_FILE",
                   help="kernel-name normalisation rules (see below)")
    p.add_argument("--strip-templates", action="store_true",
                   help="also match kernels whose names differ only in template arguments")
    p.add_argument("--top", type=int, help="kernels to list (default: 15 in text, all in "
                   "--json)")
    p.add_argument("--by", choices=("op", "kernel", "auto"), default="auto",
                   help="match by op tree, by kernel name only, or op when both runs "
                        "have ops (default)")
    p.add_argument("--reader", help="force a reader by name (see hipscope --list-readers)")
    p.add_argument("--no-cache", action="store_true", help="do not use the parsed-trace cache")
    return p


def run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    from ..analysis import diff
    from ..parsers import Cancelled, TraceFormatError, open_trace

    try:
        norm = (diff.NameNormalizer.from_file(args.normalize) if args.normalize
                else diff.NameNormalizer())
        if args.strip_templates:
            norm = norm.with_templates_stripped()
        traces = [open_trace(p, reader=args.reader, use_cache=not args.no_cache)
                  for p in (args.a, *args.b)]
        marker = diff.MarkerRef.parse(args.align, args.align_domain) if args.align else None
        at = (diff.KernelRef.parse(args.align_kernel) if args.align_kernel else marker)
        comps = diff.compare_many(traces[0], traces[1:], norm, marker, at)
        from ..analysis.diff.by_op import attach_ops

        attach_ops(traces[0], traces[1:], comps, args.by)
    except (TraceFormatError, diff.RulesError, LookupError, OSError) as exc:
        msg = exc.args[0] if isinstance(exc, LookupError) and exc.args else exc
        print(f"hipscope: {msg}", file=sys.stderr)
        return 2
    except Cancelled:
        return 130
    top = args.top if args.top is not None or args.json else 15
    objs = [diff.to_json(c, top=top) for c in comps]
    from ..analysis.collectives import compare_collectives

    for o, b in zip(objs, traces[1:]):          # two ranks of one job (issue 17)
        rows = compare_collectives(traces[0], b)
        if rows is not None:
            o["collectives"] = rows
    if args.json:
        doc = objs[0] if len(objs) == 1 else {
            "a": str(args.a), "comparisons": [{"b": str(b), **o} for b, o in zip(args.b, objs)]}
        json.dump(doc, sys.stdout, allow_nan=False)
        sys.stdout.write("\n")
    else:
        texts = [format_text(o, str(args.a), str(b)) for b, o in zip(args.b, objs)]
        print("\n\n".join(texts))
    return 1 if any(_slower(o, args.fail_if_slower) for o in objs) else 0


def _slower(obj: dict[str, Any], pct: float | None) -> bool:
    """B slower than A by more than ``pct`` percent (aligned range when aligned)."""
    if pct is None:
        return False
    al = obj.get("aligned")
    a, b = ((al["a"]["span_ns"], al["b"]["span_ns"]) if al else
            (obj["span_ns"]["a"], obj["span_ns"]["b"]))
    if not a or b is None:
        return False
    return (b / a - 1.0) * 100.0 > pct


# --------------------------------------------------------------------------- text

def _label(key: str, obj: dict[str, Any]) -> str:
    from ..analysis.diff import headline_label

    if key == "aligned_span_ns":
        return f"Aligned: {obj['aligned']['label']}"[:24]
    return headline_label(key, indent="  ", arrow="->")


def _val(v: Any, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "ns":
        return fmt_duration(v)
    if unit == "fraction":
        return f"{v:.1%}"
    if unit == "bytes":
        return f"{v:,} B"
    return f"{v:,.0f}" if isinstance(v, float) else f"{v:,}"


def _ratio(r: float | None) -> str:
    return "-" if r is None else f"x{r:.3f}"


def _kernel_lines(kernels: list[dict[str, Any]], name_width: int) -> list[str]:
    if not kernels:
        return []
    lines = ["", f"{'A total':>12} {'B total':>12} {'B - A':>12} {'B / A':>8} "
             f"{'A n':>7} {'B n':>7}  Kernel (by impact on GPU time)"]
    for k in kernels:
        tag = {"added": "[added] ", "removed": "[removed] "}.get(k["status"], "")
        name = tag + k["name"]
        name = name if len(name) <= name_width else name[:name_width - 3] + "..."
        lines.append(f"{fmt_duration(k['a_total_ns']):>12} {fmt_duration(k['b_total_ns']):>12} "
                     f"{fmt_duration(k['delta_ns']):>12} {_ratio(k['ratio']):>8} "
                     f"{k['a_count']:>7,} {k['b_count']:>7,}  {name}")
    return lines


def _op_lines(ops: dict[str, Any], name_width: int, top: int = 15) -> list[str]:
    """The by-op part: level and coverage, ops by |delta|, kernel classes."""
    if ops["level"] is None:
        return ["", "By op: no op, module or step of A matches one of B"]
    cv = ops["coverage"]
    lines = ["", f"By {ops['level']} ({ops['matched_ops']:,} ops matched; they hold "
             f"{cv['a']:.0%} of A's and {cv['b']:.0%} of B's attributed GPU time)",
             f"{'A GPU':>12} {'B GPU':>12} {'B - A':>12} {'B / A':>8} {'A n':>7} {'B n':>7}"
             "  Op (by impact on GPU time)"]
    for r in ops["by_name"][:top]:
        name = r["name"] if len(r["name"]) <= name_width else r["name"][:name_width - 3] + "..."
        lines.append(f"{fmt_duration(r['a_gpu_ns']):>12} {fmt_duration(r['b_gpu_ns']):>12} "
                     f"{fmt_duration(r['delta_ns']):>12} {_ratio(r['ratio']):>8} "
                     f"{r['a_count']:>7,} {r['b_count']:>7,}  {name}")
    lines.append("Kernel classes: " + ", ".join(
        f"{c['class']} {fmt_duration(c['a_gpu_ns'])} -> {fmt_duration(c['b_gpu_ns'])}"
        for c in sorted(ops["classes"], key=lambda c: -max(c["a_gpu_ns"], c["b_gpu_ns"]))))
    return lines


def _gpu_words(obj: dict[str, Any]) -> str | None:
    """What is known of the GPUs, for the headline: different, or not named."""
    g = obj.get("gpus") or {}
    a, b = ", ".join(g.get("a") or []), ", ".join(g.get("b") or [])
    if g.get("differ"):
        return f"different GPUs (A: {a}, B: {b})"
    if g.get("differ") is None and g:
        from ..analysis.diff.comparison import unnamed_who

        return f"{unnamed_who(g)} not named (A: {a}, B: {b}): same product unknown"
    return None


def _facts(obj: dict[str, Any]) -> list[str]:
    """What the verdict rests on, above the figures: level, coverage, GPUs."""
    ops, gpus = obj.get("ops"), _gpu_words(obj)
    if ops is None or ops["level"] is None:     # a known difference is the verdict's
        return [gpus[0].upper() + gpus[1:]] if gpus and not obj["gpus"]["differ"] else []
    cv = ops["coverage"]
    line = (f"Compared by {ops['level']}: matched ops hold {cv['a']:.0%} of A's and "
            f"{cv['b']:.0%} of B's attributed GPU time")
    return [line + (f"; {gpus}" if gpus else "")]


def format_text(obj: dict[str, Any], a: str, b: str, name_width: int = 90) -> str:
    lines = [f"A: {a}", f"B: {b}", *_facts(obj), ""]
    lines.append(f"{'':<24} {'A':>14} {'B':>14} {'B - A':>14} {'B / A':>9}")
    rows = dict(obj["headline"])
    al = obj.get("aligned")
    marker = rows.get("marker_span_ns")
    if al and not (marker and (marker["a"], marker["b"]) == (al["a"]["span_ns"],
                                                            al["b"]["span_ns"])):
        rows = {"aligned_span_ns": {"a": al["a"]["span_ns"], "b": al["b"]["span_ns"],
                                    "delta": al["b"]["span_ns"] - al["a"]["span_ns"],
                                    "ratio": al["ratio"], "unit": "ns"}, **rows}
    for key, r in rows.items():
        if r["a"] is None and r["b"] is None:
            continue
        u = r["unit"]
        d = r["delta"]
        delta = "-" if d is None else ("+" if d > 0 else "") + (
            f"{d * 100:.1f} pt" if u == "fraction" else _val(d, u))
        lines.append(f"{_label(key, obj):<24} {_val(r['a'], u):>14} {_val(r['b'], u):>14} "
                     f"{delta:>14} {_ratio(r['ratio']):>9}")
    lines += _kernel_lines(obj["kernels"], name_width)
    if obj.get("ops") is not None:
        lines += _op_lines(obj["ops"], name_width)
    if obj.get("collectives"):
        from ..analysis.collectives import format_collectives_text

        lines += format_collectives_text(obj["collectives"])
    lines.append("")
    lines.append(f"Added kernels: {len(obj['added'])}   removed kernels: {len(obj['removed'])}")
    diffs = {k: v for k, v in obj["provenance"].items() if v["differs"]}
    same = [k for k, v in obj["provenance"].items() if not v["differs"]]
    if diffs:
        lines.append("Provenance that differs:")
        lines += [f"  {k:<22} A: {v['a']!s:<28} B: {v['b']}" for k, v in diffs.items()]
    if same:
        lines.append("Same in both: " + ", ".join(
            f"{k}={obj['provenance'][k]['a']}" for k in same[:8]) + (" ..." if len(same) > 8
                                                                       else ""))
    lines += [f"Warning: {w}" for w in obj["warnings"]]
    return "\n".join(lines)
