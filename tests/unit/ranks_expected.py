"""Expected figures of rank traces, from plain json/gzip code over the raw files (never
hipscope's reader): kernel counts, busy unions, and collective arrivals by the rule of
``analysis/collectives.py`` (the enclosing nccl:* annotation of the launch call, else
record_param_comms' 'Collective name'; Seq where present, else the order)."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

from tests.conftest import SAMPLES

HTA = SAMPLES / "kineto" / "multirank-sampled-hta"


def load(path: Path) -> dict:
    with gzip.open(path, "rt") if str(path).endswith(".gz") else open(path) as fh:
        return json.load(fh)


def ns(doc: dict, ts) -> int:
    """A Kineto timestamp (µs, possibly relative to baseTimeNanoseconds) in ns."""
    return int(doc.get("baseTimeNanoseconds", 0)) + int(Decimal(str(ts)) * 1000)


def kernel_count(doc: dict) -> int:
    return sum(1 for e in doc["traceEvents"] if e.get("cat") == "kernel")


def busy_ns(doc: dict) -> int:
    """Union length of every kernel, memcpy and memset interval."""
    iv = sorted((ns(doc, e["ts"]), ns(doc, e["ts"]) + int(Decimal(str(e["dur"])) * 1000))
                for e in doc["traceEvents"]
                if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    total, cur_s, cur_e = 0, None, None
    for s, e in iv:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + ((cur_e - cur_s) if cur_e is not None else 0)


def _enclosing(ops: list[dict], ev: dict) -> list[dict]:
    return [o for o in ops if o["tid"] == ev["tid"] and o["pid"] == ev["pid"]
            and o["ts"] <= ev["ts"] < o["ts"] + o["dur"]]


def collectives(doc: dict) -> dict[tuple[str, str, int], int]:
    """(name, group, sequence) -> arrival ns of one rank's collective instances."""
    evs = doc["traceEvents"]
    calls = {e["args"]["correlation"]: e for e in evs if e.get("cat") == "cuda_runtime"}
    ops = [e for e in evs if e.get("cat") in ("cpu_op", "user_annotation")
           and (e["name"].startswith("nccl:") or e["name"] == "record_param_comms")]
    found: dict[tuple, list] = {}
    for k in sorted((e for e in evs if e.get("cat") == "kernel" and "nccl" in e["name"]),
                    key=lambda e: e["ts"]):
        call = calls[k["args"]["correlation"]]
        enc = _enclosing(ops, call)
        nccl = [o for o in enc if o["name"].startswith("nccl:")]
        comms = [o for o in enc if o["name"] == "record_param_comms"]
        a = comms[0].get("args", {}) if comms else {}
        owner = id(comms[0] if comms else nccl[0])
        name = nccl[0]["name"] if nccl else a["Collective name"]
        if owner not in found:
            found[owner] = [name, str(a.get("Process Group Name", "")), a.get("Seq"),
                            ns(doc, k["ts"])]
    order: dict[tuple, int] = defaultdict(int)
    out = {}
    for name, group, seq, t in sorted(found.values(), key=lambda r: r[3]):
        if seq is None:
            seq = order[(name, group)]
            order[(name, group)] += 1
        out[(name, group, int(seq))] = t
    return out
