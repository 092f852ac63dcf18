"""The PyTorch profiler (Kineto) reader over every real sample, plus bad input.

Expected figures come from the raw JSON (gzip + json, decimals kept exact), never
from the reader.
"""

from __future__ import annotations

import gzip
import json
import zlib
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from hipscope.parsers import TraceFormatError, get_reader
from hipscope.parsers._validate import validate
from hipscope.parsers.base import candidates
from tests.conftest import SAMPLES, ids, sample_dirs

DIRS = sample_dirs("kineto")
YEAR_2020_NS = 1_577_836_800 * 10**9
YEAR_2030_NS = 1_893_456_000 * 10**9


def _file(d: Path) -> Path:
    files = sorted(d.glob("*.json.gz")) + sorted(d.glob("*.json"))
    assert files, f"no trace in {d}"
    return files[0]


def _raw(path: Path) -> dict:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return json.loads(data, parse_float=Decimal)


def _read(path: Path):
    return get_reader("kineto").read(path, lambda f: None, lambda: False)


def _ns(us) -> int:
    return int(Decimal(us) * 1000)


def _x(events: list, *cats: str) -> list:
    return [e for e in events if e.get("ph") == "X" and e.get("cat") in cats]


def _is_amd(raw: dict) -> bool:
    props = raw.get("deviceProperties") or []
    return ("hip_runtime_version" in raw or "roctracer_version" in raw
            or any(p.get("warpSize") == 64 for p in props))


def _gpu_ids(raw: dict) -> list:
    """The GPU ids with events in the raw file: the device of every kernel, copy and
    GPU-side sync (args.device, else its pid) and GPU annotation (its pid)."""
    gpu = _x(raw["traceEvents"], "kernel", "gpu_memcpy", "gpu_memset", "cuda_sync",
             "gpu_user_annotation")
    return sorted({e.get("args", {}).get("device", e["pid"]) for e in gpu})


def _used_props(raw: dict) -> list:
    """The deviceProperties entries of the GPUs with events (the roctracer backend
    numbers GPUs counting CPU agents first: then the k-th used id is the k-th entry)."""
    props = sorted(raw.get("deviceProperties") or [], key=lambda p: p["id"])
    used = _gpu_ids(raw)
    if set(used) <= {p["id"] for p in props} and not (
            _is_amd(raw) and props and min(used) > props[0]["id"]):
        return [p for p in props if p["id"] in used]
    return props[:len(used)]


@pytest.fixture(scope="module", params=DIRS, ids=ids(DIRS))
def sample(request):
    path = _file(request.param)
    return path, _raw(path), _read(path)


def test_counts(sample):
    path, raw, tr = sample
    ev = raw["traceEvents"]
    assert len(tr.kernels) == len(_x(ev, "kernel"))
    # cuda_sync is the GPU side of a runtime call: a marker, never a second API call
    assert len(tr.api) == len(_x(ev, "cuda_runtime", "cuda_driver"))
    assert len(tr.copies) == len(_x(ev, "gpu_memcpy", "gpu_memset"))
    dirs, cats = tr.copies.codes("direction")
    n_memset = sum(1 for c in dirs if cats[c] == "memset")
    assert n_memset == len(_x(ev, "gpu_memset"))
    assert len(tr.markers) == len(_x(ev, "user_annotation", "gpu_user_annotation", "cpu_op",
                                     "python_function", "cuda_sync"))
    # devices: the GPUs with events; the node's others are kept in meta
    assert len(tr.devices) == len(_gpu_ids(raw))
    props = raw.get("deviceProperties") or []
    idle = tr.meta.get("devices_without_events", [])
    assert len(idle) == len(props) - len(_used_props(raw))
    assert tr.meta["format"] == "kineto"
    assert tr.meta["clock"] == "unix epoch (Kineto)"
    assert tr.meta["sources"] == [str(path)]
    json.dumps(tr.meta)
    validate(tr)


def test_named_kernel_times(sample):
    _path, raw, tr = sample
    base = raw.get("baseTimeNanoseconds", 0)
    kernels = _x(raw["traceEvents"], "kernel")
    names = tr.kernels.strings("name")
    start = tr.kernels.numpy("start")
    end = tr.kernels.numpy("end")
    for e in (kernels[0], kernels[len(kernels) // 2], kernels[-1]):
        want_start = base + _ns(e["ts"])
        hit = [i for i in range(len(names)) if names[i] == e["name"] and start[i] == want_start]
        assert hit, f"kernel {e['name'][:60]} at {want_start} not found"
        assert end[hit[0]] - start[hit[0]] == _ns(e["dur"])
    # epoch ns, old (absolute µs) and new (baseTimeNanoseconds) files alike
    assert YEAR_2020_NS < start.min() and end.max() < YEAR_2030_NS
    api_start = tr.api.numpy("start")
    assert YEAR_2020_NS < api_start.min() and api_start.max() < YEAR_2030_NS
    validate(tr)


def test_correlation_links(sample):
    _path, raw, tr = sample
    ev = raw["traceEvents"]
    runtime = {e["args"]["correlation"]: e for e in _x(ev, "cuda_runtime", "cuda_driver")
               if "correlation" in e.get("args", {})}
    kernels = _x(ev, "kernel")
    want = sum(1 for k in kernels if k.get("args", {}).get("correlation") in runtime)
    api_index = tr.kernels.numpy("api_index", fill=-1)
    assert int((api_index >= 0).sum()) == want
    # the linked call is the one with that correlation id and name
    corr = tr.kernels.numpy("correlation_id", fill=-1)
    api_names = tr.api.strings("name")
    for i in np.flatnonzero(api_index >= 0)[:50]:
        assert api_names[api_index[i]] == runtime[int(corr[i])]["name"]
    copies = _x(ev, "gpu_memcpy", "gpu_memset")
    want_c = sum(1 for c in copies if c.get("args", {}).get("correlation") in runtime)
    assert int((tr.copies.numpy("api_index", fill=-1) >= 0).sum()) == want_c
    validate(tr)


def test_devices_and_grid(sample):
    _path, raw, tr = sample
    props = raw.get("deviceProperties") or []
    prop_ids = sorted(p["id"] for p in props)
    kernels = _x(raw["traceEvents"], "kernel")
    raw_dev = sorted({k["args"].get("device", k["pid"]) for k in kernels})
    used = sorted(set(tr.kernels.numpy("device").tolist()))
    if _is_amd(raw) and (min(raw_dev) > min(prop_ids) or set(raw_dev) - set(prop_ids)):
        # roctracer counts CPU agents: ids are mapped in sorted order onto deviceProperties
        assert used == prop_ids[:len(raw_dev)]
        raw_ids = tr.devices.strings("raw_id")
        index = tr.devices.numpy("index").tolist()
        for r, d in zip(raw_dev, used):
            assert raw_ids[index.index(d)] == str(r)
        assert "device" in tr.meta["provenance"]
    else:
        assert used == raw_dev
    assert set(used) == set(tr.devices.numpy("index").tolist())
    names = tr.devices.strings("name")
    assert names == ([p["name"] for p in _used_props(raw)] if props
                     else [f"GPU {i}" for i in _gpu_ids(raw)])
    vendor = "AMD" if _is_amd(raw) else "NVIDIA"
    assert set(tr.devices.strings("vendor")) == {vendor}
    # NVIDIA grid counts blocks: hipscope stores work-items
    if vendor == "NVIDIA":
        k = kernels[0]
        row = tr.kernels.row(0)
        assert row["grid_x"] == k["args"]["grid"][0] * k["args"]["block"][0]
        assert row["block_x"] == k["args"]["block"][0]
        assert row["registers"] == k["args"]["registers per thread"]
    validate(tr)


def _ref_depths(events: list, base: int, key) -> dict:
    """Depth by a plain stack walk: ranges still open (end > start) when one starts."""
    groups: dict = {}
    for e in events:
        s = base + _ns(e["ts"])
        groups.setdefault(key(e), []).append((s, s + _ns(e.get("dur", 0)), e["name"]))
    out = {}
    for items in groups.values():
        items.sort(key=lambda x: (x[0], -x[1]))
        open_: list = []
        for s, end, name in items:
            open_ = [o for o in open_ if o > s]
            out[(name, s, end)] = len(open_)
            if end > s:
                open_.append(end)
    return out


def test_markers_depth(sample):
    _path, raw, tr = sample
    base = raw.get("baseTimeNanoseconds", 0)
    ev = raw["traceEvents"]
    want = _ref_depths(_x(ev, "user_annotation", "cpu_op", "python_function"), base,
                       lambda e: (e["pid"], e["tid"]))
    want.update(_ref_depths(_x(ev, "gpu_user_annotation"), base,
                            lambda e: ("gpu", e["pid"], e["tid"])))
    # GPU-side syncs nest among themselves, per device and stream
    want.update(_ref_depths(_x(ev, "cuda_sync"), base,
                            lambda e: ("sync", e["args"]["device"], e["args"]["stream"])))
    names = tr.markers.strings("name")
    start = tr.markers.numpy("start").tolist()
    end = tr.markers.numpy("end").tolist()
    depth = tr.markers.numpy("depth").tolist()
    got = {(n, s, e): d for n, s, e, d in zip(names, start, end, depth)}
    assert got == want
    validate(tr)


def test_versions_meta():
    by_name = {d.name: _file(d) for d in DIRS}
    tr = _read(by_name["amd-mi300x-rocm7.2-triton-tracelens"])
    assert tr.meta["hip_runtime_version"] == 70226015 and tr.meta["hip_version"] == "7.2"
    tr = _read(by_name["nvidia-h100-bert-tracelens"])
    assert tr.meta["cuda_version"] == "12.4" and tr.meta["cupti_version"] == 22
    tr = _read(by_name["nvidia-a100-simple-add-hta"])
    assert tr.meta["rank"] == 0 and "baseTimeNanoseconds" not in tr.meta


def test_sniff_claims_kineto_only():
    r = get_reader("kineto")
    for d in DIRS:
        p = _file(d)
        assert r.sniff(p) >= 0.8, p
        assert candidates(p)[0].reader.name == "kineto"
    for p in sorted((SAMPLES / "legacy-rocprof").glob("*/results.json")):
        assert r.sniff(p) <= 0.2, p
    for p in sorted((SAMPLES / "rocprofv3-json").glob("*/*.json*")):
        assert r.sniff(p) == 0.0, p


# --------------------------------------------------------------------------- torn input


def _h200() -> Path:
    return _file(next(d for d in DIRS if d.name == "nvidia-h200-generated"))


def _whole_events_before(text: bytes) -> list:
    """Complete traceEvents elements in a cut Kineto text (its own layout: one
    element closes with a line '  },')."""
    cut = text.rfind(b"\n  },")
    return json.loads(text[:cut + 4] + b"]}")["traceEvents"]


def test_truncated_gzip_loads_whole_events(tmp_path):
    full = gzip.decompress(_h200().read_bytes())
    packed = gzip.compress(full)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(packed[: len(packed) * 9 // 10])
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    prefix = d.decompress(cut.read_bytes())
    want = _whole_events_before(prefix)
    tr = _read(cut)
    assert len(tr.kernels) == len(_x(want, "kernel"))
    assert len(tr.api) == len(_x(want, "cuda_runtime", "cuda_driver", "cuda_sync"))
    assert len(tr.kernels) > 0
    assert any("ends early" in w for w in tr.warnings)
    assert tr.meta["dropped"]["bytes"] > 0
    validate(tr)


def test_truncated_plain_json(tmp_path):
    full = gzip.decompress(_h200().read_bytes())
    cut = tmp_path / "cut.json"
    cut.write_bytes(full[: len(full) // 2])
    want = _whole_events_before(full[: len(full) // 2])
    tr = _read(cut)
    assert len(tr.kernels) == len(_x(want, "kernel"))
    assert len(tr.markers) == len(_x(want, "user_annotation", "gpu_user_annotation", "cpu_op",
                                     "python_function"))
    assert tr.meta["dropped"]["bytes"] > 0
    validate(tr)


@pytest.mark.parametrize("content", [
    b"",
    b"   \n",
    b"\x00\x01\x02garbage\xff\xfe" * 50,
    b"not json at all",
    b"[1, 2, 3]",
    b'{"foo": 1}',
    b'{"traceEvents": 5}',
    b'{"traceEvents": [1, 2]',
    b'{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1}, oops]}',
    b"\x1f\x8b\x08\x00garbage-after-gzip-magic",
], ids=["empty", "blank", "binary", "text", "array", "no-events", "events-not-list",
        "truncated-no-objects", "bad-token", "bad-gzip"])
def test_bad_input_raises_format_error(tmp_path, content):
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    with pytest.raises(TraceFormatError) as exc:
        _read(p)
    assert str(p) in str(exc.value)


def test_odd_values_are_coerced(tmp_path):
    """Strings where numbers are expected, events that are not objects, missing args."""
    doc = {"schemaVersion": 1, "baseTimeNanoseconds": 1790857026000000000,
           "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "warpSize": 32}],
           "traceEvents": [
               7,
               {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": "12",
                "tid": 12, "ts": 10.5, "dur": 2, "args": {"correlation": "5"}},
               {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": "stream 7",
                "ts": "15.25", "dur": 1.0, "args": {"correlation": 5, "device": 0}},
               {"ph": "X", "cat": "kernel", "name": "no-args", "pid": 0, "tid": 7,
                "ts": 20, "dur": 1},
           ]}
    p = tmp_path / "odd.json"
    p.write_text(json.dumps(doc))
    tr = _read(p)
    assert len(tr.kernels) == 2
    assert tr.kernels.numpy("start")[0] == 1790857026000000000 + 15250
    assert tr.kernels.row(0)["api_index"] == 0
    assert tr.meta["dropped"]["records that are not objects"] == 1
    validate(tr)


def test_flows_link_without_correlation_args(tmp_path):
    doc = {"schemaVersion": 1, "baseTimeNanoseconds": 1790857026000000000,
           "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "warpSize": 32}],
           "traceEvents": [
               {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9,
                "tid": 9, "ts": 10.5, "dur": 2},
               {"ph": "s", "id": 77, "pid": 9, "tid": 9, "ts": 10.5, "cat": "ac2g",
                "name": "ac2g"},
               {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                "ts": 15.25, "dur": 1.0},
               {"ph": "f", "id": 77, "pid": 0, "tid": 7, "ts": 15.25, "cat": "ac2g",
                "name": "ac2g", "bp": "e"},
           ]}
    p = tmp_path / "flows.json"
    p.write_text(json.dumps(doc))
    tr = _read(p)
    assert tr.kernels.row(0)["api_index"] == 0
    assert tr.kernels.row(0)["correlation_id"] == 77
    validate(tr)


def test_cli_report_json(capsys):
    from hipscope.cli.main import main

    path = _h200()
    assert main(["report", "--json", "--no-cache", str(path)]) == 0
    out = capsys.readouterr().out
    rep = json.loads(out)
    assert rep["format"] == "kineto"
    assert rep["kernel_count"] == len(_x(_raw(path)["traceEvents"], "kernel"))
    assert rep["queue_delay_ns"] is not None
    assert rep["queue_delay_ns"]["from_api_end"]["count"] > 0


def _planted_h200(tmp_path: Path, plant) -> tuple[Path, dict]:
    """A copy of the H200 sample with ``plant`` applied, and its raw JSON read back."""
    raw = json.loads(gzip.decompress(_h200().read_bytes()))
    plant(raw)
    out = tmp_path / "planted.json.gz"
    out.write_bytes(gzip.compress(json.dumps(raw).encode()))
    return out, _raw(out)


def test_dur_past_int64_is_dropped_not_wrapped(tmp_path):
    """T2(a): dur 9.2e18 µs made ts + dur wrap past 2^63 to an end before the start,
    and the schema check raised a traceback."""
    from hipscope.parsers import open_trace

    def plant(raw):
        next(e for e in raw["traceEvents"] if e.get("cat") == "kernel")["dur"] = 9.2e18
    path, raw = _planted_h200(tmp_path, plant)
    tr = open_trace(path)
    kernels = _x(raw["traceEvents"], "kernel")
    base = raw["baseTimeNanoseconds"]
    want = sorted((base + _ns(k["ts"]), base + _ns(k["ts"]) + _ns(k["dur"]))
                  for k in kernels[1:])
    assert sorted(zip(tr.kernels.numpy("start").tolist(),
                      tr.kernels.numpy("end").tolist())) == want
    assert sum(f"{path}: dropped 1 kernel with a timestamp past 2^62 ns" in w
               for w in tr.warnings) == 1
    validate(tr)


def test_base_time_past_int64_is_ignored_with_a_warning(tmp_path):
    """W6: baseTimeNanoseconds = 2^63-1 overflowed int64: negative idle times."""
    from hipscope.analysis.report import build_report
    from hipscope.parsers import open_trace

    def plant(raw):
        raw["baseTimeNanoseconds"] = 2**63 - 1
    path, raw = _planted_h200(tmp_path, plant)
    tr = open_trace(path)
    kernels = _x(raw["traceEvents"], "kernel")
    assert len(tr.kernels) == len(kernels)             # nothing dropped: times are ts
    assert sorted(tr.kernels.numpy("start").tolist()) == sorted(_ns(k["ts"]) for k in kernels)
    hits = [w for w in tr.warnings if "baseTimeNanoseconds 9223372036854775807" in w]
    assert len(hits) == 1 and "ignored" in hits[0]
    idle = build_report(tr)["idle_breakdown_ns"]["total"]
    assert all(v >= 0 for v in idle.values())
    span = build_report(tr)["span_ns"]
    pristine = build_report(open_trace(_h200()))["span_ns"]
    assert span == pristine


# --------------------------------------------------------------------------- issue 13

DATA = Path(__file__).resolve().parents[1] / "data"
TB_2021 = DATA / "kineto-2021" / "tb_plugin_2021_v100.json"
_OLD_CATS = {"kernel": "kernel", "runtime": "cuda_runtime", "memcpy": "gpu_memcpy",
             "memset": "gpu_memset", "operator": "cpu_op"}


def _sample(name: str) -> Path:
    return _file(next(d for d in DIRS if d.name == name))


def test_2021_category_spellings_are_read():
    """Item 1: PyTorch 1.8/1.9 Kineto spelled Kernel/Runtime/Memcpy/Memset/Operator:
    0 kernels, no warning."""
    raw = _raw(TB_2021)
    ev = [e for e in raw["traceEvents"] if e.get("ph") == "X"]
    by = {new: [e for e in ev if e["cat"].lower() == old] for old, new in _OLD_CATS.items()}
    tr = _read(TB_2021)
    assert len(tr.kernels) == len(by["kernel"]) == 2
    assert len(tr.api) == len(by["cuda_runtime"])
    assert len(tr.copies) == len(by["gpu_memcpy"]) + len(by["gpu_memset"])
    assert len(tr.markers) == len(by["cpu_op"])
    assert set(tr.api.strings("domain")) == {"cuda_runtime"}
    # every kernel linked to the call with its correlation id; times as written
    calls = {e["args"]["correlation"]: e["name"] for e in by["cuda_runtime"]}
    api_names = tr.api.strings("name")
    for i, k in enumerate(sorted(by["kernel"], key=lambda e: e["ts"])):
        row = tr.kernels.row(i)
        assert row["start"] == _ns(k["ts"]) and row["end"] - row["start"] == _ns(k["dur"])
        assert api_names[row["api_index"]] == calls[k["args"]["correlation"]]
        assert row["stream"] == k["args"]["stream"] and row["tid"] == 456
    assert sorted(tr.copies.strings("direction")) == ["HtoD", "memset"]
    assert "Kernel -> kernel" in tr.meta["provenance"]["categories"]
    validate(tr)


def test_no_kernels_from_gpu_trace_warns(tmp_path):
    """Item 1: a trace with GPUs and runtime calls whose kernels hipscope cannot read
    says so (here: a category spelling no Kineto version wrote)."""
    raw = json.loads(gzip.decompress(_h200().read_bytes()))
    n_calls = len(_x(raw["traceEvents"], "cuda_runtime", "cuda_driver"))
    for e in raw["traceEvents"]:
        if e.get("cat") == "kernel":
            e["cat"] = "concurrent_kernel"
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(raw))
    tr = _read(path)
    assert len(tr.kernels) == 0
    hits = [w for w in tr.warnings if "no GPU kernels were read" in w]
    assert len(hits) == 1
    assert f"{n_calls:,} runtime calls" in hits[0] and "concurrent_kernel" in hits[0]
    assert not any("no GPU kernels" in w for w in _read(_h200()).warnings)


def test_cuda_sync_is_a_gpu_side_interval_not_an_api_call():
    """Item 2: the event-sync sample counted its 4 GPU-side syncs as 4 more API calls
    on a host 'Thread ?' lane."""
    path = _sample("nvidia-a100-event-sync-hta")
    raw = _raw(path)
    ev, base = raw["traceEvents"], raw.get("baseTimeNanoseconds", 0)
    syncs = _x(ev, "cuda_sync")
    calls = {e["args"]["correlation"]: e for e in _x(ev, "cuda_runtime", "cuda_driver")}
    assert len(syncs) == 4
    tr = _read(path)
    assert len(tr.api) == len(calls)
    assert tr.api.valid("pid").all() and tr.api.valid("tid").all()     # no 'Thread ?'
    m = tr.markers
    sel = [i for i, d in enumerate(m.strings("domain")) if d == "cuda_sync"]
    assert len(sel) == len(syncs)
    got = sorted((m.row(i)["start"], m.row(i)["end"], m.row(i)["name"], m.row(i)["device"],
                  m.row(i)["stream"], m.row(i)["correlation_id"], m.row(i)["pid"])
                 for i in sel)
    want = sorted((base + _ns(e["ts"]), base + _ns(e["ts"]) + _ns(e["dur"]), e["name"],
                   e["args"]["device"], e["args"]["stream"], e["args"]["correlation"], None)
                  for e in syncs)
    assert got == want
    # each sync is linked (by correlation id) to the host call that waited
    api_corr = tr.api.numpy("correlation_id", fill=-1).tolist()
    api_names = tr.api.strings("name")
    for row in got:
        assert api_names[api_corr.index(row[5])] == calls[row[5]]["name"]
    validate(tr)


def test_folder_of_rank_traces_opens_as_one_trace():
    """Item 7: a folder of rank files was refused; it opens as one multi-rank trace."""
    from hipscope.parsers import open_trace

    folder = SAMPLES / "kineto" / "multirank-sampled-hta"
    files = sorted(folder.glob("*.json.gz"))
    raws = [_raw(f) for f in files]
    tr = open_trace(folder)
    assert len(tr.kernels) == sum(len(_x(r["traceEvents"], "kernel")) for r in raws)
    assert len(tr.api) == sum(len(_x(r["traceEvents"], "cuda_runtime", "cuda_driver"))
                              for r in raws)
    assert tr.meta["sources"] == [str(f) for f in files]
    ranks = tr.meta["ranks"]
    assert [r["rank"] for r in ranks] == [r["distributedInfo"]["rank"] for r in raws]
    host_pids = [sorted({e["pid"] for e in _x(r["traceEvents"], "cuda_runtime")}) for r in raws]
    assert [r["pids"] for r in ranks] == host_pids
    # each rank's kernels on its own device
    dev = tr.kernels.numpy("device")
    pid = tr.kernels.numpy("pid")
    for r in ranks:
        assert set(dev[np.isin(pid, r["pids"])].tolist()) == set(r["devices"])
    assert len(tr.devices) == 2
    validate(tr)


def test_ranks_on_one_gpu_id_keep_distinct_devices(tmp_path):
    """Item 7: two ranks on two nodes, each on its local GPU 0: merge_traces keyed
    devices by (host, raw_id, name) and made them one GPU."""
    from hipscope.parsers import open_trace

    src = SAMPLES / "kineto" / "multirank-sampled-hta"
    for f in sorted(src.glob("*.json.gz")):
        raw = json.loads(gzip.decompress(f.read_bytes()))
        for e in raw["traceEvents"]:
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
                e["pid"] = 0
                e["args"]["device"] = 0
        (tmp_path / f.name).write_bytes(gzip.compress(json.dumps(raw).encode()))
    tr = open_trace(sorted(tmp_path.glob("*.json.gz")))       # the files, merged
    assert len(tr.devices) == 2
    tr = open_trace(tmp_path)                                  # the folder
    assert len(tr.devices) == 2
    dev, pid = tr.kernels.numpy("device"), tr.kernels.numpy("pid")
    r0, r1 = tr.meta["ranks"]
    assert set(dev[np.isin(pid, r0["pids"])].tolist()) == set(r0["devices"])
    assert set(dev[np.isin(pid, r1["pids"])].tolist()) == set(r1["devices"])
    assert r0["devices"] != r1["devices"]
    validate(tr)


def test_devices_are_the_gpus_with_events():
    """Item 8: one GPU of 8 has work: 8 devices were listed."""
    path = _sample("nvidia-a100-event-sync-hta")
    raw = _raw(path)
    tr = _read(path)
    used = _gpu_ids(raw)
    assert used == [0]
    assert tr.devices.numpy("index").tolist() == used
    idle = tr.meta["devices_without_events"]
    assert sorted(d["index"] for d in idle) == sorted(
        p["id"] for p in raw["deviceProperties"] if p["id"] not in used)
    json.dumps(tr.meta)


@pytest.mark.parametrize("where", ["gcnArchName", "kernel names"])
def test_arch_of_a_nameless_amd_device(tmp_path, where):
    """Item 9: a device with an empty name got arch null although the trace shows it."""
    src = _sample("amd-mi250-rocm6.2-hta")
    raw = json.loads(gzip.decompress(src.read_bytes()))
    for p in raw["deviceProperties"]:
        p["name"] = ""
        if where == "gcnArchName":
            p["gcnArchName"] = "gfx942:sramecc+:xnack-"
    path = tmp_path / "nameless.json.gz"
    path.write_bytes(gzip.compress(json.dumps(raw).encode()))
    names = [e["name"] for e in _x(raw["traceEvents"], "kernel")]
    want = "gfx942" if where == "gcnArchName" else "gfx90a"
    if where == "kernel names":
        assert any("_ISA90a_" in n for n in names)      # Tensile's kernel naming
    tr = _read(path)
    assert tr.devices.strings("arch") == [want]


def test_merged_multirank_file_keeps_gpu_annotations_on_their_gpus(tmp_path):
    """Item 11: one file merged from 4 ranks by a tool that offsets each rank's pids
    (rank * 10**6 + pid): the GPU annotations of ranks 1-3 went under a host row."""
    raw = json.loads(gzip.decompress(_h200().read_bytes()))
    merged = []
    for rank in range(4):
        for e in json.loads(json.dumps(raw["traceEvents"])):
            if isinstance(e.get("pid"), int):
                e["pid"] += rank * 10**6
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
                e["args"]["device"] = rank
                e["pid"] = rank * 10**6 + rank
            elif e.get("cat") == "gpu_user_annotation":
                e["pid"] = rank * 10**6 + rank
            merged.append(e)
    path = tmp_path / "merged.json"
    path.write_text(json.dumps({**raw, "traceEvents": merged,
                                "deviceProperties": [{**raw["deviceProperties"][0], "id": r}
                                                     for r in range(4)]}))
    n_ann = len(_x(raw["traceEvents"], "gpu_user_annotation"))
    assert n_ann > 0
    tr = _read(path)
    m = tr.markers
    sel = np.array([d == "gpu_user_annotation" for d in m.strings("domain")])
    assert int(sel.sum()) == 4 * n_ann
    assert m.valid("device")[sel].all()
    assert sorted(m.numpy("device", fill=-1)[sel].tolist()) == sorted(
        r for r in range(4) for _ in range(n_ann))
    assert tr.devices.numpy("index").tolist() == [0, 1, 2, 3]
    validate(tr)


def test_folder_of_pt_trace_files(tmp_path):
    """Item 7: torch.profiler's own names (<host>_<pid>.<n>.pt.trace.json) in a folder;
    a folder without rank traces is still refused in one sentence."""
    from hipscope.parsers import open_trace

    src = sorted((SAMPLES / "kineto" / "multirank-sampled-hta").glob("*.json.gz"))
    raws = [json.loads(gzip.decompress(f.read_bytes())) for f in src]
    for raw in reversed(raws):        # names sort opposite to the ranks
        rank = raw["distributedInfo"]["rank"]
        (tmp_path / f"node{9 - rank}_{1000 + rank}.1.pt.trace.json").write_text(json.dumps(raw))
    tr = open_trace(tmp_path)
    assert [r["rank"] for r in tr.meta["ranks"]] == [0, 1]
    assert len(tr.kernels) == sum(len(_x(r["traceEvents"], "kernel")) for r in raws)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.json").write_text("{}")
    with pytest.raises(TraceFormatError) as exc:
        open_trace(empty)
    assert str(empty) in str(exc.value)
