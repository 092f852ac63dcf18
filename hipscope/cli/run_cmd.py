"""``hipscope run`` and ``hipscope runs``: launch a (profiled) run, list past runs."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import Any

from ..model.units import fmt_duration

EXIT_USAGE = 2
EXIT_CANCELLED = 130
#: signals that cancel the run like Ctrl+C does (a terminal closing sends SIGHUP)
CANCEL_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _option_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def build_spec(args: argparse.Namespace):
    from ..launchers.spec import (
        ProfilerSpec,
        RunSpec,
        SlurmOptions,
        parse_env_changes,
        parse_target,
    )

    target = parse_target(args.target)
    target.ssh_config = args.ssh_config
    target.known_hosts = args.known_hosts
    if args.remote_dir:
        target.remote_dir = args.remote_dir
    if target.kind == "slurm":
        target.slurm = SlurmOptions(nodes=args.nodes, ntasks=args.ntasks,
                                    partition=args.partition, time=args.time,
                                    account=args.account, gpus_per_task=args.gpus_per_task)
    opts: dict[str, Any] = {}
    for item in args.profiler_option:
        k, sep, v = item.partition("=")
        if not sep:
            raise ValueError(f"--profiler-option expects KEY=VALUE, not {item!r}")
        opts[k] = _option_value(v)
    if args.pmc:
        opts["pmc"] = args.pmc.split(",")
    if args.trace:
        opts["traces"] = args.trace.split(",")
    if args.output_format:
        opts["output_format"] = args.output_format.split(",")
    return RunSpec(command=args.command, cwd=args.cwd, env=parse_env_changes(args.env),
                   profiler=ProfilerSpec(args.profiler, opts), target=target,
                   telemetry_interval=args.telemetry, name=args.name)


def ask_host_key(host: str, key_type: str, fingerprint: str) -> bool:
    """Terminal prompt for an unknown host key; refuses when there is no terminal."""
    msg = (f"The authenticity of host {host} can't be established.\n"
           f"{key_type} key fingerprint is {fingerprint}.")
    if not sys.stdin.isatty():
        print(f"hipscope: {msg}\nhipscope: not a terminal, so not accepted; connect once with "
              "ssh (or ssh-keyscan after checking the fingerprint) to add it to known_hosts.",
              file=sys.stderr)
        return False
    print(msg, file=sys.stderr)
    answer = input("Are you sure you want to continue connecting (yes/no)? ")
    return answer.strip().lower() == "yes"


def _say(text: str) -> None:
    """A hipscope line on stderr; a terminal that hung up must not stop the cancel."""
    try:
        print(text, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _printer(quiet: bool):
    """The observer printing a run: the program's output as it comes (progress lines
    ending in ``\\r`` included), then hipscope's own lines on a fresh line."""
    lock = threading.Lock()
    open_line = {"stdout": False, "stderr": False}   # the last text had no "\n"
    gone: list[bool] = []                            # the terminal or pipe went away

    def write(stream: str, text: str) -> None:
        if gone:
            return
        try:
            out = sys.stdout if stream == "stdout" else sys.stderr
            out.write(text)
            out.flush()
        except (OSError, ValueError):
            gone.append(True)

    def on_event(ev) -> None:
        with lock:
            if ev.kind == "output":
                write(ev.stream, ev.line + ev.end)
                open_line[ev.stream] = ev.end != "\n"
                return
            if quiet:
                return
            if ev.kind == "state":
                extra = f": {ev.reason}" if ev.reason else ""
                text = f"hipscope: {ev.state.value}{extra}"
            elif ev.kind in ("message", "progress") and ev.text:
                text = f"hipscope: {ev.text}"
            else:
                return
            if any(open_line.values()):     # our line starts on a line of its own
                open_line.update(stdout=False, stderr=False)
                text = "\n" + text
            write("stderr", text + "\n")
    return on_event


class _Signalled(Exception):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_signalled(signum: int, _frame) -> None:
    raise _Signalled(signum)


def _follow(launcher) -> int | None:
    """Wait for the run; Ctrl+C, SIGTERM or SIGHUP cancel it (the program's process
    group gets TERM, grace, KILL) and the run ends ``cancelled``. Returns the signal
    that cancelled it, or None."""
    main = threading.current_thread() is threading.main_thread()   # signals: main only
    old = {s: signal.signal(s, _raise_signalled) for s in CANCEL_SIGNALS} if main else {}
    got: int | None = None
    try:
        launcher.start()
        while launcher.wait(0.5) is None:
            pass
    except KeyboardInterrupt:
        got = signal.SIGINT
    except _Signalled as exc:
        got = exc.signum
    if got is not None:
        for s in (signal.SIGINT, *CANCEL_SIGNALS):   # the cancel is bounded: let it end
            signal.signal(s, signal.SIG_IGN)     # (a signal was raised: main thread)
        _say("hipscope: cancelling ...")
        name = signal.Signals(got).name
        launcher.cancel(None if got == signal.SIGINT else f"cancelled: hipscope got {name}")
        launcher.wait()
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for s, h in old.items():
        signal.signal(s, h)
    return got


def _detect(args: argparse.Namespace) -> int:
    from ..launchers.detect import detect, format_detect
    from ..launchers.hosts import Host, LocalHost
    from ..launchers.spec import parse_target

    target = parse_target(args.target)
    target.ssh_config, target.known_hosts = args.ssh_config, args.known_hosts
    host: Host
    if target.host is None:
        host = LocalHost()
    else:
        from ..launchers.ssh import SSHError, SSHHost

        try:
            host = SSHHost.connect(target, host_key_callback=ask_host_key)
        except SSHError as exc:
            print(f"hipscope: {exc}", file=sys.stderr)
            return EXIT_USAGE
    try:
        info = detect(host, torch=True)
    finally:
        host.close()
    if args.json:
        json.dump(info, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_detect(info))
    return 0


def run_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="hipscope run",
        description="Run a program (optionally profiled) locally, over SSH or through "
                    "Slurm; stream its output; keep everything in a run folder.",
        epilog="example: hipscope run --profiler rocprofv3 --pmc SQ_WAVES -- ./app -n 10")
    p.add_argument("--target", default="local",
                   help="local (default), HOST / USER@HOST:PORT (SSH), slurm or slurm:HOST")
    p.add_argument("--profiler", default="none",
                   help="none, rocprofv3, rocprof, torch, ncu, nsys (default none)")
    p.add_argument("-O", "--profiler-option", action="append", default=[], metavar="K=V",
                   help="profiler option (value may be JSON), e.g. -O stats=true")
    p.add_argument("--pmc", help="counters, comma-separated (rocprofv3, rocprof)")
    p.add_argument("--trace", help="traces, comma-separated, e.g. kernel,hip,memory_copy")
    p.add_argument("--output-format", help="rocprofv3 formats, e.g. csv or rocpd,csv")
    p.add_argument("--env", action="append", default=[], metavar="K=V",
                   help="set (K=V) or unset (-K) an environment variable; repeatable")
    p.add_argument("--cwd", help="working directory (on the target)")
    p.add_argument("--telemetry", type=float, metavar="SECONDS",
                   help="poll GPU telemetry every SECONDS")
    p.add_argument("--name", help="a name for the run folder")
    p.add_argument("--ssh-config", help="ssh config file (default ~/.ssh/config)")
    p.add_argument("--known-hosts", help="known_hosts file (default ~/.ssh/known_hosts)")
    p.add_argument("--remote-dir", help="run folders on the target (default ~/.hipscope/runs)")
    g = p.add_argument_group("Slurm")
    g.add_argument("--nodes", type=int)
    g.add_argument("--ntasks", type=int)
    g.add_argument("--gpus-per-task", type=int)
    g.add_argument("--partition")
    g.add_argument("--account")
    g.add_argument("--time", help="time limit, e.g. 00:30:00")
    p.add_argument("--detect", action="store_true",
                   help="report the target's GPUs, profilers and versions, then exit")
    p.add_argument("--json", action="store_true", help="with --detect: print JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="only the program's output")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS")
    args = p.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if args.detect:
        return _detect(args)
    if not args.command:
        p.error("give the program to run after --")
    from ..launchers import make_launcher

    try:
        spec = build_spec(args)
        launcher = make_launcher(spec, observers=[_printer(args.quiet)],
                                 host_key_callback=ask_host_key)
    except ValueError as exc:
        print(f"hipscope: {exc}", file=sys.stderr)
        return EXIT_USAGE
    got = _follow(launcher)
    res = launcher.result()
    _say(f"hipscope: run folder: {res.folder}")
    if res.trace_inputs:
        _say("hipscope: open with: hipscope " + " ".join(str(x) for x in res.trace_inputs))
    if res.state.value == "cancelled":
        return 128 + got if got else EXIT_CANCELLED
    if res.exit_status is None:
        return EXIT_USAGE if res.state.value == "failed" else 0
    return res.exit_status if 0 <= res.exit_status < 256 else 128 + abs(res.exit_status) % 128


def _fmt_duration(s: float | None) -> str:
    return "-" if s is None else fmt_duration(s * 1e9)     # the one duration text


def runs_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="hipscope runs", description="List past runs.",
        epilog="State 'unknown': the run folder is damaged, or the hipscope process that "
               "ran it is gone (killed: the reason says whether its program still runs; "
               "it has its own process group, so end it with kill -- -PID).")
    p.add_argument("--json", action="store_true", help="print a JSON list")
    args = p.parse_args(argv)
    from ..launchers.rundir import list_runs

    runs = list_runs()
    if args.json:
        json.dump([r.to_json() for r in runs], sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    if not runs:
        print("no runs yet (hipscope run -- CMD ARGS)")
        return 0
    import shlex

    print(f"{'RUN':<36} {'STATE':<10} {'TIME':>7} {'EXIT':>4}  {'TARGET':<16} COMMAND")
    for r in runs:
        cmd = shlex.join(r.command)
        print(f"{r.run_id:<36} {r.state:<10} {_fmt_duration(r.duration_s):>7} "
              f"{'' if r.exit_status is None else r.exit_status:>4}  {r.target:<16} "
              f"{cmd[:80]}")
        if r.state == "unknown" and r.reason:     # damaged, or its hipscope is gone
            print(f"{'':<36} {r.reason}")
    return 0
