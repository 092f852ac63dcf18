"""Profiler plug-ins: each builds the command line around the user's program and knows
which of its outputs hipscope opens.

A plug-in turns ``(argv, prof_dir, options)`` into a :class:`Wrapped` command (argv,
extra environment, small files to create in ``prof_dir`` on the target first) and,
after the run, names the trace inputs in the collected folder (one path per process or
rank: :func:`hipscope.parsers.open_trace` reads and merges them). ``prof_dir`` is a
path *on the target*; argv lists are never joined into a shell string here (the SSH and
Slurm launchers quote every word with :func:`shlex.quote`).

``per_rank`` asks for one output per rank (Slurm): rocprofv3 and nsys expand their own
``%rank%`` / ``%q{SLURM_PROCID}`` templates; the others get a fixed ``sh -c`` wrapper
that reads ``$SLURM_PROCID`` at run time, the user's words passed as positional
parameters (never pasted into the script).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Wrapped:
    argv: list[str]
    env: dict[str, str | None] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)   # relative to prof_dir


class ProfilerError(ValueError):
    """Bad profiler options (one sentence for people)."""


class Profiler:
    name = "none"
    description = "no profiler (timing, output and telemetry only)"
    executable: str | None = None
    version_args: tuple[str, ...] = ("--version",)
    options_help: dict[str, str] = {}

    def exe(self, options: dict[str, Any]) -> list[str]:
        """The tool's argv prefix; ``options['executable']`` overrides (a path on the
        target, or a list such as ``["python3", "/path/stand-in.py"]``)."""
        ex = options.get("executable") or self.executable
        return list(ex) if isinstance(ex, (list, tuple)) else [str(ex)]

    def check(self, options: dict[str, Any]) -> None:
        unknown = set(options) - set(self.options_help) - {"executable", "extra_args"}
        if unknown:
            raise ProfilerError(f"{self.name} has no option(s) {sorted(unknown)}; "
                                f"known: {sorted(self.options_help)}")

    def wrap(self, argv: list[str], prof_dir: str, options: dict[str, Any],
             per_rank: bool = False) -> Wrapped:
        self.check(options)
        return Wrapped(list(argv))

    def trace_inputs(self, prof_dir: Path, options: dict[str, Any]) -> list[Path]:
        return []


def _rank_shell(tool_words: list[str], out_flag: str, out_pattern: str, prof_dir: str,
                argv: list[str]) -> list[str]:
    """``sh -c 'exec TOOL... FLAG "$0/<pattern with $R>" "$@"' PROF ARGV...``.

    The script text is fixed (tool words are quoted into it by :func:`shlex.quote`); the
    user's argv and the folder arrive as positional parameters.
    """
    import shlex

    script = ("R=${SLURM_PROCID:-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}}; "
              f"exec {shlex.join(tool_words)} {out_flag} \"$0/{out_pattern}\" \"$@\"")
    return ["sh", "-c", script, prof_dir, *argv]


# --------------------------------------------------------------------------- rocprofv3

ROCPROFV3_TRACES = {
    "kernel": "--kernel-trace", "hip": "--hip-trace", "hsa": "--hsa-trace",
    "marker": "--marker-trace", "memory_copy": "--memory-copy-trace",
    "memory_allocation": "--memory-allocation-trace", "scratch_memory": "--scratch-memory-trace",
    "rccl": "--rccl-trace", "runtime": "--runtime-trace", "sys": "--sys-trace",
}
ROCPROFV3_FORMATS = ("csv", "json", "pftrace", "otf2", "rocpd")
#: which output hipscope opens when several formats were written (best first)
_OPEN_ORDER = ("rocpd", "csv", "json", "pftrace")
_RESULT_SUFFIX = {"rocpd": "_results.db", "json": "_results.json", "pftrace": "_results.pftrace"}


class Rocprofv3(Profiler):
    name = "rocprofv3"
    description = "rocprofv3 (rocprofiler-sdk, ROCm >= 6.2): traces, counters"
    executable = "rocprofv3"
    options_help = {
        "traces": f"list of {sorted(ROCPROFV3_TRACES)} (default kernel, hip, memory_copy, "
                  "marker)",
        "pmc": "counters to collect (--pmc), e.g. ['SQ_WAVES', 'GRBM_GUI_ACTIVE']",
        "output_format": f"list of {list(ROCPROFV3_FORMATS)} (default ['csv'])",
        "stats": "also write *_stats.csv (--stats)",
        "output_template": "the -o template (default %hostname%/%pid%; per rank "
                           "%hostname%/rank%rank%/%pid%)",
    }

    def wrap(self, argv, prof_dir, options, per_rank=False) -> Wrapped:
        self.check(options)
        traces = options.get("traces") or ["kernel", "hip", "memory_copy", "marker"]
        bad = [t for t in traces if t not in ROCPROFV3_TRACES]
        if bad:
            raise ProfilerError(f"rocprofv3 has no trace {bad}; known: "
                                f"{sorted(ROCPROFV3_TRACES)}")
        fmts = _as_list(options.get("output_format") or ["csv"])
        bad = [f for f in fmts if f not in ROCPROFV3_FORMATS]
        if bad:
            raise ProfilerError(f"rocprofv3 writes no format {bad}; known: "
                                f"{list(ROCPROFV3_FORMATS)}")
        words = self.exe(options) + [ROCPROFV3_TRACES[t] for t in traces]
        pmc = _as_list(options.get("pmc") or [])
        if pmc:
            words += ["--pmc", *pmc]
        if options.get("stats"):
            words.append("--stats")
        tmpl = options.get("output_template") or (
            "%hostname%/rank%rank%/%pid%" if per_rank else "%hostname%/%pid%")
        words += ["-d", prof_dir, "-o", tmpl, "--output-format", *fmts]
        words += [str(a) for a in options.get("extra_args", [])]
        return Wrapped(words + ["--", *argv])

    def trace_inputs(self, prof_dir, options) -> list[Path]:
        fmts = _as_list(options.get("output_format") or ["csv"])
        for fmt in _OPEN_ORDER:
            if fmt not in fmts:
                continue
            if fmt == "csv":
                found = sorted({p.parent for p in prof_dir.rglob("*.csv")
                                if _is_rocprofv3_csv(p.name)})
            else:
                found = sorted(prof_dir.rglob("*" + _RESULT_SUFFIX[fmt]))
            if found:
                return found
        return []


def _is_rocprofv3_csv(name: str) -> bool:
    return bool(re.search(r"_(kernel_trace|hip_api_trace|hsa_api_trace|memory_copy_trace|"
                          r"marker_api_trace|counter_collection|rccl_api_trace)\.csv$", name))


# --------------------------------------------------------------------------- legacy rocprof

class LegacyRocprof(Profiler):
    name = "rocprof"
    description = "legacy rocprof (v1, ROCm <= 6.x): results.csv/json/db"
    executable = "rocprof"
    options_help = {
        "traces": "list of hip, hsa, sys, roctx (default hip)",
        "pmc": "counters (written to input.txt as a 'pmc:' line)",
        "stats": "write results.stats.csv (--stats)",
    }
    _FLAGS = {"hip": "--hip-trace", "hsa": "--hsa-trace", "sys": "--sys-trace",
              "roctx": "--roctx-trace"}

    def wrap(self, argv, prof_dir, options, per_rank=False) -> Wrapped:
        self.check(options)
        traces = _as_list(options.get("traces") or ["hip"])
        bad = [t for t in traces if t not in self._FLAGS]
        if bad:
            raise ProfilerError(f"rocprof has no trace {bad}; known: {sorted(self._FLAGS)}")
        words = self.exe(options) + [self._FLAGS[t] for t in traces] + ["--timestamp", "on"]
        files: dict[str, bytes] = {}
        pmc = _as_list(options.get("pmc") or [])
        if pmc:
            files["input.txt"] = ("pmc: " + " ".join(pmc) + "\n").encode()
            words += ["-i", f"{prof_dir}/input.txt"]
        if options.get("stats"):
            words.append("--stats")
        words += [str(a) for a in options.get("extra_args", [])]
        if per_rank:
            return Wrapped(_rank_shell(words, "-o", "rank$R/results.csv", prof_dir, argv),
                           files=files)
        return Wrapped(words + ["-o", f"{prof_dir}/results.csv", *argv], files=files)

    def trace_inputs(self, prof_dir, options) -> list[Path]:
        return sorted({p.parent for p in prof_dir.rglob("results.*")
                       if p.name in ("results.csv", "results.json", "results.db")})


# --------------------------------------------------------------------------- PyTorch profiler

_PYTHON = re.compile(r"^python[0-9.]*$")


class TorchProfiler(Profiler):
    name = "torch"
    description = "PyTorch profiler (Kineto trace), injected by a wrapper script"
    executable = None
    version_args = ()
    options_help = {
        "wait": "schedule: steps skipped first (default 1)",
        "warmup": "schedule: warm-up steps (default 1)",
        "active": "schedule: recorded steps (default 3)",
        "repeat": "schedule: cycles (default 1; 0 = until the end)",
        "step_on": "'auto' (default: 'optimizer' when a schedule option is set, else "
                   "'none'), 'optimizer' (step at each optimizer.step) or 'none' (whole run)",
        "record_shapes": "bool", "profile_memory": "bool", "with_stack": "bool",
        "python": "the target's python when the command is a bare script.py",
    }

    def wrap(self, argv, prof_dir, options, per_rank=False) -> Wrapped:
        self.check(options)
        if _PYTHON.match(os.path.basename(argv[0])):
            python, rest = argv[0], argv[1:]
        elif argv[0].endswith(".py"):
            python, rest = options.get("python") or "python3", argv
        else:
            raise ProfilerError("the PyTorch profiler runs Python programs: the command must "
                                "start with python or a .py script")
        if not rest:
            raise ProfilerError("the PyTorch profiler needs a script (or -m module) to run")
        opts = ["--out", prof_dir]
        for k in ("wait", "warmup", "active", "repeat"):
            if k in options:
                opts += [f"--{k}", str(int(options[k]))]
        if "step_on" in options:
            opts += ["--step-on", str(options["step_on"])]
        for k in ("record_shapes", "profile_memory", "with_stack"):
            if options.get(k):
                opts.append("--" + k.replace("_", "-"))
        opts += [str(a) for a in options.get("extra_args", [])]
        src = Path(__file__).with_name("torch_profile.py").read_bytes()
        return Wrapped([python, f"{prof_dir}/torch_profile.py", *opts, "--", *rest],
                       files={"torch_profile.py": src})

    def trace_inputs(self, prof_dir, options) -> list[Path]:
        return sorted(list(prof_dir.rglob("*.pt.trace.json"))
                      + list(prof_dir.rglob("*.pt.trace.json.gz")))


# --------------------------------------------------------------------------- NVIDIA

class NsightCompute(Profiler):
    """``ncu --csv --page details --log-file`` writes exactly what hipscope's
    ``ncu-csv`` reader reads (the ``==PROF==`` lines included); the program's own
    output stays in stdout.log."""

    name = "ncu"
    description = "Nsight Compute (--csv --page details)"
    executable = "ncu"
    options_help = {"set": "section set (--set, e.g. basic, full)",
                    "sections": "list of --section names",
                    "kernel_regex": "only kernels matching (-k regex:...)",
                    "launch_count": "profile at most N kernels (-c)"}

    def wrap(self, argv, prof_dir, options, per_rank=False) -> Wrapped:
        self.check(options)
        words = self.exe(options) + ["--csv", "--page", "details"]
        if options.get("set"):
            words += ["--set", str(options["set"])]
        for s in _as_list(options.get("sections") or []):
            words += ["--section", s]
        if options.get("kernel_regex"):
            words += ["-k", f"regex:{options['kernel_regex']}"]
        if options.get("launch_count"):
            words += ["-c", str(int(options["launch_count"]))]
        words += [str(a) for a in options.get("extra_args", [])]
        if per_rank:
            return Wrapped(_rank_shell(words, "--log-file", "ncu_details_rank$R.csv",
                                       prof_dir, argv))
        return Wrapped(words + ["--log-file", f"{prof_dir}/ncu_details.csv", *argv])

    def trace_inputs(self, prof_dir, options) -> list[Path]:
        return sorted(prof_dir.rglob("ncu_details*.csv"))


class NsightSystems(Profiler):
    name = "nsys"
    description = "Nsight Systems (nsys profile, exported to SQLite)"
    executable = "nsys"
    options_help = {"trace": "nsys --trace list (default cuda,nvtx,osrt)"}

    def wrap(self, argv, prof_dir, options, per_rank=False) -> Wrapped:
        self.check(options)
        trace = ",".join(_as_list(options.get("trace") or ["cuda", "nvtx", "osrt"]))
        out = f"{prof_dir}/nsys_%h_%q{{SLURM_PROCID}}_%p" if per_rank else \
            f"{prof_dir}/nsys_%h_%p"
        words = self.exe(options) + ["profile", "--trace", trace, "-o", out,
                                     "--export", "sqlite", "--force-overwrite", "true"]
        words += [str(a) for a in options.get("extra_args", [])]
        return Wrapped(words + list(argv))

    def trace_inputs(self, prof_dir, options) -> list[Path]:
        return []   # hipscope has no nsys reader yet: the .nsys-rep/.sqlite are kept


# --------------------------------------------------------------------------- registry

PROFILERS: dict[str, Profiler] = {p.name: p for p in (
    Profiler(), Rocprofv3(), LegacyRocprof(), TorchProfiler(), NsightCompute(), NsightSystems())}


def get_profiler(name: str) -> Profiler:
    try:
        return PROFILERS[name]
    except KeyError:
        raise ProfilerError(f"no profiler named {name!r}; known: {sorted(PROFILERS)}") from None


def _as_list(v: Any) -> list[str]:
    if isinstance(v, str):
        return [x for x in re.split(r"[\s,]+", v) if x]
    if isinstance(v, Iterable):
        return [str(x) for x in v]
    return [str(v)]
