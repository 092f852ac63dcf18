"""The parsed-trace cache: hits skip parsing, and it never serves stale or wrong data.

One test per finding of RELIABILITY.md section 2 (C1-C8), T5 and F3. Expected figures
come from csv/json/zlib code over the raw files, never from hipscope's reader.
"""

from __future__ import annotations

import collections
import csv
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from hipscope.parsers import TraceFormatError, open_trace
from tests.conftest import DATA, ROOT, SAMPLES

SET = SAMPLES / "rocprofv3-csv" / "sdk-docs-2025-08-rocm7.0"
TWIN = DATA / "rocprofv3-csv-twin" / "node01"


# --------------------------------------------------------------------------- helpers

def raw_kernels(folder: Path, pattern: str = "*_kernel_trace.csv") -> list[dict]:
    rows = []
    for f in sorted(folder.glob(pattern)):
        with open(f, newline="") as fh:
            rows += list(csv.DictReader(fh))
    return rows


def assert_kernels_match(trace, rows: list[dict]) -> None:
    """The trace's kernels are exactly the raw rows: names, starts and ends."""
    assert len(trace.kernels) == len(rows)
    assert (collections.Counter(trace.kernels.column("name").to_pylist())
            == collections.Counter(r["Kernel_Name"] for r in rows))
    assert sorted(trace.kernels.numpy("start").tolist()) == sorted(
        int(r["Start_Timestamp"]) for r in rows)
    assert sorted(trace.kernels.numpy("end").tolist()) == sorted(
        int(r["End_Timestamp"]) for r in rows)


def cache_root() -> Path:
    return Path(os.environ["HIPSCOPE_CACHE_DIR"])


def entries() -> list[Path]:
    root = cache_root()
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) \
        if root.is_dir() else []


def temp_folders() -> list[Path]:
    return sorted(p for p in cache_root().iterdir() if p.name.startswith(".tmp-"))


def only_entry() -> Path:
    found = entries()
    assert len(found) == 1, found
    return found[0]


def rewrite(entry: Path, name: str, data: bytes) -> None:
    """Replace one file of an entry; where the entry has a manifest, give it the new
    file's size and CRC-32 too (a consistent entry that is still wrong)."""
    (entry / name).write_bytes(data)
    man_file = entry / "manifest.json"
    if man_file.exists():
        man = json.loads(man_file.read_text())
        man["files"][name] = {"size": len(data), "crc32": zlib.crc32(data)}
        man_file.write_text(json.dumps(man))


def arrow_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


@pytest.fixture
def twin(tmp_path) -> Path:
    d = tmp_path / "v"
    shutil.copytree(TWIN, d)
    return d


def cache_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "hipscope.parsers.cache" and r.levelno >= logging.WARNING]


# --------------------------------------------------------------------------- basics

def test_hit_is_marked_and_equal(tmp_path):
    src = SAMPLES / "legacy-rocprof" / "spatter-kernel-stats" / "results.csv"
    first = open_trace(src, use_cache=True)
    again = open_trace(src, use_cache=True)
    assert not first.meta.get("cached") and again.meta.get("cached")
    assert again.kernels.data.equals(first.kernels.data)
    assert again.devices.data.equals(first.devices.data)


def test_changed_sibling_file_misses(tmp_path):
    d = tmp_path / "set"
    shutil.copytree(SET, d)
    one = d / "kernel_trace.csv"
    a = open_trace(one, use_cache=True)
    assert open_trace(one, use_cache=True).meta.get("cached")
    # the set's API trace changes: opening the same kernel file must re-read the set
    api = d / "hip_runtime_trace.csv"
    api.write_text(api.read_text().splitlines()[0] + "\n")
    st = api.stat()
    os.utime(api, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    b = open_trace(one, use_cache=True)
    assert not b.meta.get("cached")
    assert len(b.api) < len(a.api)


def test_a_changed_reader_does_not_serve_what_the_old_one_made(monkeypatch):
    """Entries made by other reader code are misses: a reader fix (or an upgrade) must
    show on files that are already in the cache, not only on files that change."""
    from hipscope.parsers import cache

    src = SAMPLES / "legacy-rocprof" / "spatter-kernel-stats" / "results.csv"
    open_trace(src, use_cache=True)
    assert open_trace(src, use_cache=True).meta.get("cached")
    monkeypatch.setattr(cache, "code_version", lambda: b"another-reader")
    assert not open_trace(src, use_cache=True).meta.get("cached")
    assert open_trace(src, use_cache=True).meta.get("cached")


# --------------------------------------------------------------------------- C1

@pytest.mark.parametrize("how", ["in_place", "replace_by_rename"])
def test_c1_same_size_and_mtime_edit_is_not_served_stale(twin, how):
    f = twin / "4242_kernel_trace.csv"
    assert not open_trace(twin, use_cache=True).meta.get("cached")
    assert open_trace(twin, use_cache=True).meta.get("cached")
    st = f.stat()
    edited = f.read_bytes().replace(b"FillFunctor", b"FillFuncto2")
    if how == "in_place":
        f.write_bytes(edited)
    else:
        part = twin / "4242_kernel_trace.csv.part"
        part.write_bytes(edited)
        os.replace(part, f)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))   # what a user can set back
    assert (f.stat().st_size, f.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    tr = open_trace(twin, use_cache=True)
    assert not tr.meta.get("cached")
    assert_kernels_match(tr, raw_kernels(twin))
    assert any("FillFuncto2" in n for n in tr.kernels.column("name").to_pylist())


# --------------------------------------------------------------------------- C2

def test_c2_file_growing_during_the_read_is_not_cached(tmp_path):
    d = tmp_path / "growing"
    d.mkdir()
    f = d / "4242_kernel_trace.csv"
    shutil.copy(TWIN / f.name, f)
    before = raw_kernels(d)
    with open(f, newline="") as fh:
        header, *rows = list(csv.reader(fh))
    did = header.index("Dispatch_Id")
    grown = []

    def progress(_fraction: float) -> None:
        """The profiler appends 10 rows while hipscope has the file open (once)."""
        if not grown:
            grown.append(True)
            with open(f, "a", newline="") as fh:
                w = csv.writer(fh)
                for i, row in enumerate(rows[:10]):
                    w.writerow([*row[:did], str(10_000 + i), *row[did + 1:]])

    first = open_trace(f, progress=progress, use_cache=True)
    assert grown and len(first.kernels) == len(before)   # the read saw the old file
    after = raw_kernels(d)
    assert len(after) == len(before) + 10
    second = open_trace(f, use_cache=True)
    assert not second.meta.get("cached")
    assert_kernels_match(second, after)
    assert any("changed while the trace was read" in w for w in first.warnings)
    third = open_trace(f, use_cache=True)
    assert third.meta.get("cached")
    assert_kernels_match(third, after)


def test_c2_side_file_changing_during_the_read_is_not_cached_nor_blamed(twin):
    """A log beside the trace grows during the read: not stored (the key saw the old
    log), but the trace does not warn about data it never read."""
    log_file = twin / "run.log"
    log_file.write_text("step 1\n")
    f = twin / "4242_kernel_trace.csv"
    grown = []

    def progress(_fraction: float) -> None:
        if not grown:
            grown.append(True)
            with open(log_file, "a") as fh:
                fh.write("step 2\n")

    first = open_trace(f, progress=progress, use_cache=True)
    assert_kernels_match(first, raw_kernels(twin, "4242_kernel_trace.csv"))   # its own set
    assert not any("changed while" in w for w in first.warnings)
    assert not open_trace(f, use_cache=True).meta.get("cached")
    assert open_trace(f, use_cache=True).meta.get("cached")


# --------------------------------------------------------------------------- C3

def _flip_name(entry: Path) -> None:
    data = (entry / "kernels.arrow").read_bytes()
    at = data.index(b"FillFunctor")
    (entry / "kernels.arrow").write_bytes(data[:at] + b"FillFunctoX" + data[at + 11:])


def _rewrite_end(entry: Path) -> None:
    t = ipc.open_file(pa.memory_map(str(entry / "kernels.arrow"))).read_all()
    i = t.schema.get_field_index("end")
    end = pa.array([v + 10**9 for v in t.column(i).to_pylist()], type=t.schema.field(i).type)
    (entry / "kernels.arrow").write_bytes(arrow_bytes(t.set_column(i, t.schema.field(i), end)))


def _empty_devices(entry: Path) -> None:
    t = ipc.open_file(pa.memory_map(str(entry / "devices.arrow"))).read_all()
    (entry / "devices.arrow").write_bytes(arrow_bytes(t.slice(0, 0)))


def _foreign_format(entry: Path) -> None:
    meta = json.loads((entry / "meta.json").read_text())
    (entry / "meta.json").write_text(json.dumps({**meta, "format": "ncu-csv"}))


@pytest.mark.parametrize("damage", [_flip_name, _rewrite_end, _empty_devices,
                                    _foreign_format], ids=lambda f: f.__name__[1:])
def test_c3_damaged_entry_is_detected_and_read_again(twin, caplog, damage):
    open_trace(twin, use_cache=True)
    damage(only_entry())
    caplog.clear()
    tr = open_trace(twin, use_cache=True)
    assert not tr.meta.get("cached")
    assert_kernels_match(tr, raw_kernels(twin))
    assert len(tr.devices) == 2 and tr.format == "rocprofv3-csv"
    assert len(cache_warnings(caplog)) == 1
    again = open_trace(twin, use_cache=True)   # the damaged entry was replaced
    assert again.meta.get("cached")
    assert_kernels_match(again, raw_kernels(twin))


def test_c3_format_disagreeing_with_the_manifest_is_a_miss(twin, caplog):
    open_trace(twin, use_cache=True)
    entry = only_entry()
    meta = json.loads((entry / "meta.json").read_text())
    rewrite(entry, "meta.json", json.dumps({**meta, "format": "ncu-csv"}).encode())
    caplog.clear()
    tr = open_trace(twin, use_cache=True)
    assert not tr.meta.get("cached") and tr.format == "rocprofv3-csv"
    assert len(cache_warnings(caplog)) == 1


# --------------------------------------------------------------------------- C4

@pytest.mark.parametrize("name,data", [
    ("meta.json", b"[]"),
    ("meta.json", b'"x"'),
    ("kernels.arrow", None),          # the api table stored as kernels.arrow
], ids=["meta-list", "meta-string", "api-as-kernels"])
def test_c4_wrong_shaped_entry_is_a_miss_not_a_traceback(twin, caplog, name, data):
    open_trace(twin, use_cache=True)
    entry = only_entry()
    rewrite(entry, name, data if data is not None else (entry / "api.arrow").read_bytes())
    caplog.clear()
    tr = open_trace(twin, use_cache=True)
    assert not tr.meta.get("cached")
    assert_kernels_match(tr, raw_kernels(twin))
    assert len(cache_warnings(caplog)) == 1
    assert open_trace(twin, use_cache=True).meta.get("cached")


# --------------------------------------------------------------------------- C5

def _immutable(d: Path) -> bool:
    """Make ``d`` unwritable, for root too (chattr +i); False where that is impossible."""
    if os.geteuid() != 0:
        d.chmod(0o555)
        return True
    chattr = shutil.which("chattr")
    return bool(chattr) and subprocess.run([chattr, "+i", str(d)],
                                           capture_output=True).returncode == 0


def _mutable(d: Path) -> None:
    if os.geteuid() != 0:
        d.chmod(0o755)
    else:
        subprocess.run([shutil.which("chattr") or "chattr", "-i", str(d)], check=True)


@pytest.mark.parametrize("kind", ["a_file", "under_a_file", "read_only"])
def test_c5_unwritable_cache_reads_without_it(tmp_path, monkeypatch, caplog, twin, kind):
    root = tmp_path / "cache"
    if kind == "a_file":
        root.write_text("not a folder")
    elif kind == "under_a_file":
        (tmp_path / "plain").write_text("not a folder")
        root = tmp_path / "plain" / "cache"
    else:
        root.mkdir()
        if not _immutable(root):
            pytest.skip("cannot make a folder read-only here (no chattr +i as root)")
    monkeypatch.setenv("HIPSCOPE_CACHE_DIR", str(root))
    bad = tmp_path / "bad" / "4242_kernel_trace.csv"
    bad.parent.mkdir()
    bad.write_text("this is not a trace\n")
    try:
        for _ in range(2):
            tr = open_trace(twin, use_cache=True)
            assert not tr.meta.get("cached")
            assert_kernels_match(tr, raw_kernels(twin))
        assert cache_warnings(caplog)
        with pytest.raises(TraceFormatError) as err:
            open_trace(bad, use_cache=True)
        assert str(bad) in str(err.value) and str(root) not in str(err.value)
    finally:
        if kind == "read_only":
            _mutable(root)


# --------------------------------------------------------------------------- C6

def test_c6_sibling_vanishing_during_the_key_is_not_an_error(twin, monkeypatch):
    """A program deletes its temp files between hipscope's listing and its stat of them
    (simulated deterministically: the first stat of each deletes it)."""
    doomed = {"tmp.813", "tmp.814.log"}
    for name in doomed:
        (twin / name).write_text("scratch")
    pending, real_stat = set(doomed), os.stat

    def stat_then_delete(path, *args, **kwargs):
        st = real_stat(path, *args, **kwargs)
        name = os.path.basename(os.fsdecode(path))
        if name in pending:
            pending.discard(name)
            os.unlink(path)
        return st

    f = twin / "4242_kernel_trace.csv"
    monkeypatch.setattr(os, "stat", stat_then_delete)
    tr = open_trace(f, use_cache=True)
    monkeypatch.undo()
    assert "tmp.814.log" not in pending            # it vanished while the key was taken
    assert_kernels_match(tr, raw_kernels(twin, "4242_kernel_trace.csv"))
    open_trace(f, use_cache=True)
    assert open_trace(f, use_cache=True).meta.get("cached")


# --------------------------------------------------------------------------- T5

def test_t5_symlink_loop_trace_gets_the_readers_sentence(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.symlink_to(b.name)
    b.symlink_to(a.name)
    with pytest.raises(TraceFormatError) as err:
        open_trace(a, use_cache=True)
    assert str(a) in str(err.value)


def test_t5_odd_sibling_names_and_link_loops_are_keyed(twin):
    """A Latin-1 file name and a symlink loop beside the trace: it opens and caches."""
    (twin / os.fsdecode(b"caf\xe9.txt")).write_text("notes")
    (twin / "x.csv").symlink_to("y.csv")
    (twin / "y.csv").symlink_to("x.csv")
    (twin / "again").symlink_to(".")
    for path in (twin, twin / "4242_kernel_trace.csv"):
        first = open_trace(path, use_cache=True)
        assert not first.meta.get("cached")
        again = open_trace(path, use_cache=True)
        assert again.meta.get("cached")
        assert again.kernels.data.equals(first.kernels.data)
    # the odd name is in the key: touching it misses
    os.utime(twin / os.fsdecode(b"caf\xe9.txt"), ns=(0, 0))
    assert not open_trace(twin / "4242_kernel_trace.csv", use_cache=True).meta.get("cached")


# --------------------------------------------------------------------------- F3

def test_f3_file_in_a_folder_that_cannot_be_listed_opens(tmp_path, monkeypatch):
    d = tmp_path / "locked"
    d.mkdir()
    f = d / "4242_kernel_trace.csv"
    shutil.copy(TWIN / f.name, f)
    expect = raw_kernels(d)
    if os.geteuid() == 0:      # root lists any folder: deny the listing as mode 0311 would
        def denied(fn):
            def call(p=".", *args, **kwargs):
                if not isinstance(p, int) and os.path.abspath(os.fsdecode(p)) == str(d):
                    raise PermissionError(13, "Permission denied", os.fsdecode(p))
                return fn(p, *args, **kwargs)
            return call
        monkeypatch.setattr(os, "listdir", denied(os.listdir))
        monkeypatch.setattr(os, "scandir", denied(os.scandir))
    else:
        d.chmod(0o311)
    try:
        with pytest.raises(PermissionError):
            os.listdir(d)
        tr = open_trace(f, use_cache=True)
        assert_kernels_match(tr, expect)
    finally:
        d.chmod(0o755)


# --------------------------------------------------------------------------- C7

def test_c7_ctrl_c_during_store_removes_its_temp_folder(twin, monkeypatch):
    real, calls = ipc.new_file, []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(ipc, "new_file", interrupted)
    with pytest.raises(KeyboardInterrupt):
        open_trace(twin, use_cache=True)
    assert len(calls) == 2
    assert temp_folders() == [] and entries() == []


_BLOCKED_STORE = """
import sys
import pyarrow.ipc as ipc
real = ipc.new_file
def blocked(*args, **kwargs):
    print("storing", flush=True)
    sys.stdin.read()
    return real(*args, **kwargs)
ipc.new_file = blocked
from hipscope.parsers import open_trace
open_trace(sys.argv[1], use_cache=True)
"""


def test_c7_killed_store_and_old_leftovers_are_swept(tmp_path, twin):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", _BLOCKED_STORE, str(twin)], cwd=ROOT,
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "storing\n"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        proc.stdout.close()
        proc.stdin.close()
    killed = temp_folders()
    assert len(killed) == 1
    old = cache_root() / ".tmp-abandoned"      # no owner recorded, untouched for 2 h
    old.mkdir()
    hours_ago = time.time() - 7200
    os.utime(old, (hours_ago, hours_ago))
    fresh = cache_root() / ".tmp-another-host"   # may be a store in progress elsewhere
    fresh.mkdir()
    layout2 = cache_root() / ("0" * 32)          # an entry of the old layout, unused 2 h
    layout2.mkdir()
    (layout2 / "meta.json").write_text("{}")
    os.utime(layout2, (hours_ago, hours_ago))
    open_trace(twin, use_cache=True)
    assert temp_folders() == [fresh]
    assert len(entries()) == 1 and not layout2.exists()


def _entry_bytes(entry: Path) -> int:
    return sum(p.stat().st_size for p in entry.iterdir())


def test_c7_least_recently_used_entries_are_evicted_above_the_cap(tmp_path, monkeypatch):
    a, b, c = (tmp_path / n for n in "abc")
    for d in (a, b, c):
        shutil.copytree(TWIN, d)
    open_trace(a, use_cache=True)
    ea = only_entry()
    monkeypatch.setenv("HIPSCOPE_CACHE_MAX_MB", str(2.5 * _entry_bytes(ea) / 2**20))
    open_trace(b, use_cache=True)
    (eb,) = set(entries()) - {ea}
    now = time.time()
    for entry, age in ((ea, 200), (eb, 100)):       # a was used before b ...
        os.utime(entry / "last_used", (now - age, now - age))
    assert open_trace(a, use_cache=True).meta.get("cached")   # ... and now after it
    open_trace(c, use_cache=True)                   # a third entry: b goes
    assert eb not in entries() and ea in entries() and len(entries()) == 2
    assert sum(_entry_bytes(e) for e in entries()) <= 2.5 * _entry_bytes(ea)
    assert open_trace(a, use_cache=True).meta.get("cached")
    assert not open_trace(b, use_cache=True).meta.get("cached")


def test_c7_the_analysis_files_count_towards_the_cap(tmp_path, monkeypatch):
    a, b = (tmp_path / n for n in "ab")
    for d in (a, b):
        shutil.copytree(TWIN, d)
    open_trace(a, use_cache=True)
    ea = only_entry()
    size = _entry_bytes(ea)
    monkeypatch.setenv("HIPSCOPE_CACHE_MAX_MB", str(3 * size / 2**20))
    (ea / "analyses").mkdir(exist_ok=True)               # a's timeline rows, say
    (ea / "analyses" / "timeline_frame-0.hsan").write_bytes(b"\0" * (2 * size))
    open_trace(b, use_cache=True)                        # a is 3x its tables: over the cap
    assert ea not in entries() and len(entries()) == 1


# --------------------------------------------------------------------------- C8

_OPEN_AND_SUMMARISE = """
import json, sys
from hipscope.parsers import open_trace
t = open_trace(sys.argv[1], use_cache=True)
print(json.dumps([len(t.kernels), sorted(t.kernels.column("name").to_pylist()),
                  t.kernels.numpy("end").tolist(), len(t.api), len(t.devices)]))
"""


def test_c8_concurrent_opens_of_a_new_file_make_one_entry(twin):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", _OPEN_AND_SUMMARISE, str(twin)],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0]
    assert outs[0] == outs[1] == outs[2]
    assert json.loads(outs[0])[0] == len(raw_kernels(twin))
    assert len(entries()) == 1 and temp_folders() == []
