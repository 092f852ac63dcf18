"""`hipscope probe`: measure a target's GPU for the tuner's estimates; stored probes.

    hipscope probe [--target local|HOST|slurm:HOST] [--json] [--python PY]
                   [--backend auto|cuda|hip] [--quick] [--no-save]
    hipscope probe --import RESULT.json [--target NAME]     store a result made elsewhere
    hipscope probe --list [--json]                          the stored probes
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

EXIT_FAILED, EXIT_USAGE = 1, 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hipscope probe",
        description="Measure launch overhead, graph replay cost per node, stream "
                    "concurrency and pageable/pinned copy bandwidth on a target's GPU "
                    "(cuda-python or hip-python there); the tuner uses the stored result "
                    "for traces of the same GPU.")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--import", dest="import_path", type=Path, metavar="RESULT",
                   help="store a result written by `python -m hipscope.probe.run --json`")
    g.add_argument("--list", action="store_true", help="list the stored probes")
    p.add_argument("--target", default="local",
                   help="local (default), HOST / USER@HOST:PORT (SSH), slurm or slurm:HOST")
    p.add_argument("--python", help="the target's Python (default: this one locally, "
                                    "python3 remotely; HIPSCOPE_PROBE_PYTHON overrides)")
    p.add_argument("--backend", default="auto", choices=("auto", "cuda", "hip"))
    p.add_argument("--device", type=int, default=0, help="GPU ordinal on the target")
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
    p.add_argument("--no-save", action="store_true", help="do not store the result")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--ssh-config", help="ssh_config file (default ~/.ssh/config)")
    p.add_argument("--known-hosts", help="known_hosts file (default ~/.ssh/known_hosts)")
    p.add_argument("-v", "--verbose", action="store_true", help="show the probe's output")
    return p


def run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.list:
        return _list(args)
    if args.import_path:
        return _import(args)
    return _probe(args)


def _list(args) -> int:
    from ..probe.store import entries, store_path, tuner_probes

    es = entries()
    if args.json:
        json.dump([{"key": e["key"], "target": e.get("target"), "gpu": e.get("gpu"),
                    "driver": e.get("driver"), "saved_at": e.get("saved_at"),
                    "tuner": tuner_probes(e["result"])} for e in es], sys.stdout)
        sys.stdout.write("\n")
        return 0
    if not es:
        print(f"No stored probes ({store_path()}). Run `hipscope probe`.")
        return 0
    for e in es:
        figs = ", ".join(f"{k}={v:.4g}" for k, v in tuner_probes(e["result"]).items())
        print(f"{e.get('gpu')} on {e.get('target')} (driver {e.get('driver')}, "
              f"{e.get('saved_at')}): {figs or 'no figures'}")
    return 0


def _import(args) -> int:
    from ..probe.store import ProbeResultError, parse_result

    try:
        result = parse_result(args.import_path.read_bytes(), str(args.import_path))
    except (OSError, ProbeResultError) as exc:
        print(f"hipscope: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return _report(result, _save(result, args.target), args.json)


def _probe(args) -> int:
    from ..launchers.spec import parse_target
    from ..probe.remote import ProbeRunError, default_python, probe_spec, run_on_target
    from ..probe.store import ProbeResultError
    from .run_cmd import ask_host_key

    try:
        kind = parse_target(args.target).kind
    except ValueError as exc:
        print(f"hipscope: {exc}", file=sys.stderr)
        return EXIT_USAGE
    extra = ["--backend", args.backend, "--device", str(args.device)]
    if args.quick:
        extra.append("--quick")
    spec = probe_spec(args.target, args.python or default_python(kind), extra,
                      ssh_config=args.ssh_config, known_hosts=args.known_hosts)

    def on_event(ev) -> None:
        if ev.kind == "output" and (args.verbose or ev.stream == "stderr"):
            print(ev.line, file=sys.stderr, flush=True)

    try:
        result, folder = run_on_target(spec, observers=[on_event],
                                       host_key_callback=ask_host_key)
    except (ProbeRunError, ProbeResultError) as exc:
        print(f"hipscope: {exc}", file=sys.stderr)
        return EXIT_FAILED
    key = None if args.no_save else _save(result, args.target)
    if not args.json:
        print(f"run folder: {folder}")
    return _report(result, key, args.json)


def _save(result: dict, target: str) -> str | None:
    """Store a result that has figures for the tuner (a failed probe is not stored:
    it would replace a good one of the same target and GPU)."""
    from ..probe.store import save, tuner_probes

    if not tuner_probes(result):
        print("hipscope: the probe measured none of the tuner's figures; not stored",
              file=sys.stderr)
        return None
    return save(result, target)


def _report(result: dict, key: str | None, as_json: bool) -> int:
    from ..probe.run import format_text
    from ..probe.store import store_path, tuner_probes

    if as_json:
        json.dump(result, sys.stdout, allow_nan=False, default=str)
        sys.stdout.write("\n")
    else:
        print(format_text(result))
        figs = tuner_probes(result)
        if figs:
            print("tuner figures: " + ", ".join(f"{k}={v:.4g}" for k, v in figs.items()))
        if key:
            print(f"stored as {key!r} in {store_path()}")
    return 0 if result.get("gpu") and not result.get("error") else EXIT_FAILED
