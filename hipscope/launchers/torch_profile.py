"""Run a Python program under the PyTorch profiler without editing it.

    python torch_profile.py [--out DIR] [--wait 1 --warmup 1 --active 3 --repeat 1]
                            [--step-on auto|optimizer|none] [--record-shapes]
                            [--profile-memory] [--with-stack] -- script.py ARGS...
    python torch_profile.py ... -- -m package.module ARGS...
    python -m hipscope.launchers.torch_profile ...          (when hipscope is installed)

This file runs with the *target's* Python, where hipscope may not be installed: it
imports only the standard library and torch (and torch only once the arguments are
parsed). hipscope copies it into the run's profiler folder and runs it by path.

Steps: with ``--step-on optimizer`` the profiler schedule advances after every
``torch.optim.Optimizer.step`` (a global post-hook, torch >= 2.0), so the
wait/warmup/active/repeat schedule counts training steps. With ``--step-on none`` the
whole program is one recorded window. The default, ``auto``, is ``optimizer`` when a
schedule option (--wait/--warmup/--active/--repeat) is given and ``none`` otherwise,
so a program without an optimizer still yields a trace. Each finished window is written as a Kineto
Chrome trace ``<out>/<host>_<pid>[_rank<R>].<n>.pt.trace.json``.
"""

from __future__ import annotations

import argparse
import os
import runpy
import socket
import sys

EXIT_NO_TORCH = 3


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" in argv:
        i = argv.index("--")
        ours, prog = argv[:i], argv[i + 1:]
    else:
        ours, prog = [], argv
    p = argparse.ArgumentParser(prog="torch_profile",
                                description="Run a Python program under torch.profiler.")
    p.add_argument("--out", default=".", help="folder for the traces")
    p.add_argument("--wait", type=int, default=None, help="schedule (default 1)")
    p.add_argument("--warmup", type=int, default=None, help="schedule (default 1)")
    p.add_argument("--active", type=int, default=None, help="schedule (default 3)")
    p.add_argument("--repeat", type=int, default=None, help="schedule (default 1)")
    p.add_argument("--step-on", choices=("auto", "optimizer", "none"), default="auto")
    p.add_argument("--record-shapes", action="store_true")
    p.add_argument("--profile-memory", action="store_true")
    p.add_argument("--with-stack", action="store_true")
    args = p.parse_args(ours)
    scheduled = any(v is not None for v in (args.wait, args.warmup, args.active, args.repeat))
    if args.step_on == "auto":
        args.step_on = "optimizer" if scheduled else "none"
    for name, default in (("wait", 1), ("warmup", 1), ("active", 3), ("repeat", 1)):
        if getattr(args, name) is None:
            setattr(args, name, default)
    if not prog:
        p.error("give the program after --: script.py ARGS or -m module ARGS")
    if prog[0] == "-m" and len(prog) < 2:
        p.error("-m needs a module name")
    return args, prog


def trace_name(out: str, step: int) -> str:
    rank = os.environ.get("RANK") or os.environ.get("SLURM_PROCID")
    tag = f"_rank{rank}" if rank is not None else ""
    return os.path.join(out, f"{socket.gethostname()}_{os.getpid()}{tag}.{step}.pt.trace.json")


def _activities(torch):
    acts = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():   # also true on ROCm builds (HIP behind the cuda API)
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    return acts


def run_program(prog: list[str]) -> None:
    """Run ``script.py args`` or ``-m module args`` as ``__main__``."""
    if prog[0] == "-m":
        sys.argv = [prog[1], *prog[2:]]
        runpy.run_module(prog[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(prog)
        sys.path.insert(0, os.path.dirname(os.path.abspath(prog[0])))
        runpy.run_path(prog[0], run_name="__main__")


def main(argv: list[str] | None = None) -> int:
    args, prog = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import torch
        import torch.profiler
    except ImportError as exc:
        print(f"torch_profile: torch is not importable by {sys.executable}: {exc}",
              file=sys.stderr)
        return EXIT_NO_TORCH
    os.makedirs(args.out, exist_ok=True)
    written: list[str] = []

    def on_ready(prof) -> None:
        path = trace_name(args.out, len(written))
        prof.export_chrome_trace(path)
        written.append(path)
        print(f"torch_profile: wrote {path}", file=sys.stderr, flush=True)

    schedule = None
    if args.step_on == "optimizer":
        schedule = torch.profiler.schedule(wait=args.wait, warmup=args.warmup,
                                           active=args.active, repeat=args.repeat)
    prof = torch.profiler.profile(activities=_activities(torch), schedule=schedule,
                                  on_trace_ready=on_ready, record_shapes=args.record_shapes,
                                  profile_memory=args.profile_memory,
                                  with_stack=args.with_stack)
    handle = None
    if schedule is not None:
        # the global hook is a module-level function of torch.optim.optimizer (every
        # optimizer instance's step() calls it)
        from torch.optim.optimizer import register_optimizer_step_post_hook

        handle = register_optimizer_step_post_hook(lambda *_a, **_k: prof.step())
    code = 0
    prof.start()
    try:
        run_program(prog)
    except SystemExit as exc:   # the program's own exit status passes through
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        if handle is not None:
            handle.remove()
        prof.stop()
    if not written:
        print("torch_profile: no trace written (fewer optimizer steps than wait+warmup? "
              "try --step-on none)", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
