"""The bad-input contract of open_trace and the CLI (RELIABILITY.md T1, T2, F2, F3, H1,
M1, W11): any input gives a trace or one sentence naming the file, never a traceback, a
hang or a memory blow-up. Each reproducer runs through ``open_trace`` and through
``hipscope report --json`` as a subprocess (with a timeout: a hang fails the test)."""

from __future__ import annotations

import csv
import gzip
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from hipscope.parsers import TraceFormatError, base, open_trace
from hipscope.parsers._common import read_input
from hipscope.parsers._inputs import CAP_ENV, max_decompressed_bytes
from tests.conftest import DATA, ROOT, SAMPLES

KINETO = SAMPLES / "kineto" / "nvidia-h200-generated" / "h200_torch_kineto_trace.json.gz"
ROCPD = DATA / "rocpd" / "4242_results.db"
TWIN = DATA / "rocprofv3-csv-twin" / "node01"


def hipscope(*args: str, prefix: tuple[str, ...] = (), env: dict | None = None,
             **kw) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess, importing this tree; a hang is a failure."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([*prefix, sys.executable, "-m", "hipscope.cli.main", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=60,
                          env=full_env, **kw)


def assert_one_sentence(proc: subprocess.CompletedProcess, *must: str) -> str:
    """Exit 2, nothing on stdout, exactly one stderr line naming what it must."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("hipscope: ")
    for text in must:
        assert text in lines[0], (text, lines[0])
    return lines[0]


def raw_kineto_kernels(path: Path) -> int:
    doc = json.loads(gzip.decompress(path.read_bytes()))
    return sum(1 for e in doc["traceEvents"] if e.get("cat") == "kernel")


# --------------------------------------------------------------------------- T1


@pytest.fixture
def corrupt_gzip(tmp_path) -> Path:
    b = bytearray(KINETO.read_bytes())
    b[40] ^= 0xFF
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b)
    with pytest.raises(zlib.error):          # the reproducer really is corrupt deflate data
        zlib.decompress(bytes(b), 16 + zlib.MAX_WBITS)
    return bad


def test_t1_corrupt_gzip_sniffs_as_nothing_and_is_one_sentence(corrupt_gzip):
    assert base.head_bytes(corrupt_gzip) == b""
    assert base.candidates(corrupt_gzip) == []
    with pytest.raises(TraceFormatError, match="gzip") as err:
        open_trace(corrupt_gzip)
    assert str(corrupt_gzip) in str(err.value)
    assert_one_sentence(hipscope("report", "--json", str(corrupt_gzip)), str(corrupt_gzip),
                        "gzip")


# --------------------------------------------------------------------------- T2


def _kineto_with_huge_dur(tmp_path) -> Path:
    doc = json.loads(gzip.decompress(KINETO.read_bytes()))
    first = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
    first["dur"] = 9.2e18                    # ts + dur wraps past 2^63
    out = tmp_path / "huge.json.gz"
    out.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return out


def _rocpd_with_zero_byte(tmp_path) -> Path:
    out = tmp_path / "4242_results.db"
    b = bytearray(ROCPD.read_bytes())
    b[1548] = 0
    out.write_bytes(b)
    return out


@pytest.mark.parametrize("make", [_kineto_with_huge_dur, _rocpd_with_zero_byte])
def test_t2_schema_errors_are_one_sentence(tmp_path, make):
    """Exit 0 with a warning, or exit 2 with one sentence; never a SchemaError."""
    path = make(tmp_path)
    proc = hipscope("report", "--json", "--no-cache", str(path))
    assert "Traceback" not in proc.stderr and "SchemaError\n" not in proc.stderr
    if proc.returncode == 0:
        assert json.loads(proc.stdout)["warnings"]
    else:
        assert_one_sentence(proc, str(path))
    try:
        open_trace(path)
    except TraceFormatError as exc:
        assert str(path) in str(exc)


class _FailingReader:
    """A real registered reader that claims files starting with its magic and fails
    the way a reader bug does."""

    description, patterns, priority, directories = "test", (), 1000, False

    def __init__(self, name: str, exc: BaseException, in_sniff: bool = False):
        self.name, self.exc, self.in_sniff = name, exc, in_sniff

    def sniff(self, path):
        if self.in_sniff:
            raise self.exc
        return 1.0 if path.read_bytes().startswith(b"HIPSCOPE-TEST") else 0.0

    def read(self, path, progress, cancelled):
        raise self.exc


@pytest.fixture
def magic_file(tmp_path) -> Path:
    p = tmp_path / "t.bin"
    p.write_bytes(b"HIPSCOPE-TEST\n")
    return p


def test_any_reader_exception_becomes_internal_error_naming_the_file(
        monkeypatch, magic_file, caplog):
    monkeypatch.setitem(base._REGISTRY, "boom", _FailingReader("boom", IndexError("list")))
    with caplog.at_level("INFO", logger="hipscope.parsers.base"):
        with pytest.raises(TraceFormatError) as err:
            open_trace(magic_file)
    assert str(err.value) == f"internal error reading {magic_file}: IndexError: list."
    assert any(r.exc_info and r.exc_info[0] is IndexError for r in caplog.records)


def test_memory_error_is_not_enough_memory(monkeypatch, magic_file):
    monkeypatch.setitem(base._REGISTRY, "oom", _FailingReader("oom", MemoryError()))
    with pytest.raises(TraceFormatError) as err:
        open_trace(magic_file)
    assert str(err.value) == f"not enough memory to read {magic_file}."


def test_a_sniffer_that_raises_anything_recognises_nothing(monkeypatch, magic_file):
    monkeypatch.setitem(base._REGISTRY, "bad-sniff",
                        _FailingReader("bad-sniff", zlib.error("bad"), in_sniff=True))
    assert all(c.reader.name != "bad-sniff" for c in base.candidates(magic_file))
    assert all(c.reader.name != "bad-sniff" for c in base.candidates(KINETO))


# --------------------------------------------------------------------------- F2, F3


def _unprivileged() -> tuple[str, ...]:
    """A command prefix under which file permissions apply (root bypasses them)."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permissions cannot be tested")
    return (setpriv, "--bounding-set=-dac_override,-dac_read_search")


@pytest.fixture
def locked(tmp_path):
    """An unreadable file, a folder that cannot be listed (0311), one that cannot be
    entered; modes restored afterwards so that tmp_path can be removed."""
    f = tmp_path / "4242_results.db"
    shutil.copy(ROCPD, f)
    nolist = tmp_path / "nolist"
    nolist.mkdir()
    shutil.copy(ROCPD, nolist / "4242_results.db")
    noenter = tmp_path / "noenter"
    noenter.mkdir()
    f.chmod(0)
    nolist.chmod(0o311)
    noenter.chmod(0)
    yield f, nolist, noenter
    for p in (f, nolist, noenter):
        p.chmod(0o755)


def test_f2_unreadable_file_and_unlistable_folder_say_why(locked):
    f, nolist, noenter = locked
    pre = _unprivileged()
    assert_one_sentence(hipscope("report", "--json", str(f), prefix=pre),
                        str(f), "permission denied")
    assert_one_sentence(hipscope("report", "--json", str(nolist), prefix=pre),
                        str(nolist), "list", "permission denied")
    assert_one_sentence(hipscope("report", "--json", str(noenter / "x.db"), prefix=pre),
                        str(noenter / "x.db"), "permission denied")


def test_f3_missing_file_under_missing_folder_names_the_file(tmp_path):
    missing = tmp_path / "no" / "such" / "trace.json"
    line = assert_one_sentence(hipscope("report", "--json", str(missing)), str(missing))
    assert "nothing at that path" in line
    with pytest.raises(TraceFormatError, match="nothing at that path") as err:
        open_trace(missing, use_cache=True)
    assert err.value.path == str(missing)


def test_f2_stdin_pipe_is_read_once():
    with subprocess.Popen(["cat", str(KINETO)], stdout=subprocess.PIPE) as cat:
        proc = hipscope("report", "--json", "/dev/stdin", stdin=cat.stdout)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert rep["kernel_count"] == raw_kineto_kernels(KINETO)
    assert rep["sources"] == ["/dev/stdin"]


def test_f2_process_substitution_pipe_is_read(tmp_path):
    """``<(zcat x.json.gz)``: a /dev/fd path to a pipe, plain JSON."""
    with subprocess.Popen(["zcat", str(KINETO)], stdout=subprocess.PIPE) as zcat:
        fd = zcat.stdout.fileno()
        proc = hipscope("report", "--json", f"/dev/fd/{fd}", pass_fds=(fd,))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["kernel_count"] == raw_kineto_kernels(KINETO)


def test_a_bad_trace_on_a_pipe_names_the_pipe():
    with subprocess.Popen(["printf", "not a trace"], stdout=subprocess.PIPE) as p:
        proc = hipscope("report", "--json", "/dev/stdin", stdin=p.stdout)
    line = assert_one_sentence(proc, "/dev/stdin")
    assert "hipscope-pipe-" not in line


# --------------------------------------------------------------------------- H1


def test_h1_fifo_without_writer_is_refused_at_once(tmp_path):
    fifo = tmp_path / "t.json"
    os.mkfifo(fifo)
    assert_one_sentence(hipscope("report", "--json", str(fifo)), str(fifo), "no program")


def test_h1_devices_and_sockets_are_refused_at_once(tmp_path):
    assert_one_sentence(hipscope("report", "--json", "/dev/null"), "/dev/null",
                        "character device")
    sock_path = tmp_path / "s.json"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(str(sock_path))
        assert_one_sentence(hipscope("report", "--json", str(sock_path)), str(sock_path),
                            "socket")
        with pytest.raises(TraceFormatError, match="socket"):
            open_trace(sock_path)


# --------------------------------------------------------------------------- M1


def _whitespace_bomb(path: Path, head: bytes, mb: int) -> Path:
    path.write_bytes(gzip.compress(head + b" " * (mb << 20) + b"]}", 9))
    return path


@pytest.mark.parametrize("head", [b'{"schemaVersion": 1, "traceEvents": [',
                                  b'{"rocprofiler-sdk-tool": ['])
def test_m1_gzip_bomb_is_refused_at_the_cap(tmp_path, monkeypatch, head):
    bomb = _whitespace_bomb(tmp_path / "bomb.json.gz", head, 8)
    assert bomb.stat().st_size < 1 << 20
    monkeypatch.setenv(CAP_ENV, "2")
    with pytest.raises(TraceFormatError) as err:
        open_trace(bomb)
    msg = str(err.value)
    assert str(bomb) in msg and "2 MB" in msg and CAP_ENV in msg
    assert_one_sentence(hipscope("report", "--json", str(bomb), env={CAP_ENV: "2"}),
                        str(bomb), "2 MB", CAP_ENV)
    monkeypatch.setenv(CAP_ENV, "64")      # raised as the sentence says: past the cap
    try:
        open_trace(bomb)
    except TraceFormatError as exc:        # (an empty rocprofv3 JSON is refused as such)
        assert CAP_ENV not in str(exc) and "empty" in str(exc)


def test_m1_read_input_is_capped(tmp_path, monkeypatch):
    bomb = _whitespace_bomb(tmp_path / "x.pftrace.gz", b"", 3)
    monkeypatch.setenv(CAP_ENV, "1")
    with pytest.raises(TraceFormatError, match=CAP_ENV):
        read_input(bomb, [])
    monkeypatch.setenv(CAP_ENV, "4")
    assert len(read_input(bomb, [])) == (3 << 20) + 2


def test_m1_default_cap_is_a_quarter_of_available_memory(monkeypatch):
    monkeypatch.delenv(CAP_ENV, raising=False)
    with open("/proc/meminfo") as fh:
        avail = next(int(ln.split()[1]) * 1024 for ln in fh if ln.startswith("MemAvailable"))
    cap = max_decompressed_bytes()
    assert 0 < cap <= avail // 4 + (64 << 20)    # MemAvailable moves a little meanwhile
    monkeypatch.setenv(CAP_ENV, "3")
    assert max_decompressed_bytes() == 3 << 20


def test_m1_a_pipe_is_read_up_to_the_cap():
    size = len(gzip.decompress(KINETO.read_bytes()))
    cap_mb = size / 2 / (1 << 20)
    with subprocess.Popen(["zcat", str(KINETO)], stdout=subprocess.PIPE) as zcat:
        proc = hipscope("report", "--json", "/dev/stdin", stdin=zcat.stdout,
                        env={CAP_ENV: str(cap_mb)})
    assert_one_sentence(proc, "/dev/stdin", CAP_ENV)


# --------------------------------------------------------------------------- W11


def test_w11_different_clocks_are_refused():
    proc = hipscope("report", "--json", str(KINETO), str(ROCPD))
    assert_one_sentence(proc, str(KINETO), str(ROCPD), "different clocks")
    with pytest.raises(TraceFormatError, match="different clocks"):
        open_trace([KINETO, ROCPD])


def test_w11_the_same_file_twice_is_refused(tmp_path):
    link = tmp_path / "again.db"
    link.symlink_to(ROCPD)
    for second in (ROCPD, link, Path(str(ROCPD.parent) + "/./" + ROCPD.name)):
        with pytest.raises(TraceFormatError, match="the same file as"):
            open_trace([ROCPD, second])
    assert_one_sentence(hipscope("report", "--json", str(ROCPD), str(link)),
                        str(link), "the same file as")


def test_w11_different_formats_on_one_clock_merge_with_a_warning():
    with sqlite3.connect(f"file:{ROCPD}?mode=ro", uri=True) as db:
        table = db.execute("SELECT name FROM sqlite_master WHERE type='table' AND "
                           "name LIKE 'rocpd_kernel_dispatch_%'").fetchone()[0]
        n_db = db.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
    n_csv = 0
    for f in sorted(TWIN.glob("*_kernel_trace.csv")):      # the folder: both processes
        with open(f, newline="") as fh:
            n_csv += sum(1 for _ in csv.DictReader(fh))
    tr = open_trace([ROCPD, TWIN])
    assert len(tr.kernels) == n_db + n_csv
    assert any("different formats" in w and str(ROCPD) in w for w in tr.warnings)


def _second_run(folder: Path, src: Path, pid: str, shift_ns: int) -> None:
    """Process 4242's files again as process ``pid``, every timestamp ``shift_ns`` later:
    the same program run a second time into the same folder."""
    for f in sorted(src.glob("4242_*.csv")):
        shutil.copy(f, folder / f.name)
        with open(f, newline="") as fh:
            rows = list(csv.reader(fh))
        for r in rows[1:]:
            for i, h in enumerate(rows[0]):
                if h.endswith("_Timestamp") and r[i]:
                    r[i] = str(int(r[i]) + shift_ns)
                elif h == "Process_Id" and r[i]:
                    r[i] = pid
        with open(folder / f.name.replace("4242", pid), "w", newline="") as fh:
            csv.writer(fh, lineterminator="\n").writerows(rows)


def test_w11_two_runs_in_one_folder_are_warned(tmp_path):
    _second_run(tmp_path, TWIN, "5151", 10_000_000_000)
    with open(TWIN / "4242_kernel_trace.csv", newline="") as fh:
        n = sum(1 for _ in csv.DictReader(fh))
    tr = open_trace(tmp_path)
    assert len(tr.kernels) == 2 * n
    (w,) = [w for w in tr.warnings if "do not overlap in time" in w]
    assert "5151" in w and "4242" in w and "separate runs" in w
    assert not [w for w in open_trace(TWIN).warnings if "overlap" in w]   # one run: none


# --------------------------------------------------------------------------- folders of one trace

def _raw_kineto_kernels(path: Path) -> int:
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    return sum(1 for e in events if e.get("ph") == "X" and e.get("cat") == "kernel")


def test_a_folder_holding_one_trace_opens_as_that_trace(tmp_path):
    # e.g. a Kineto trace beside the env.txt that describes its machine: no folder reader
    # claims the folder, its one trace file is what the user means
    shutil.copy(KINETO, tmp_path / KINETO.name)
    (tmp_path / "env.txt").write_text("torch 2.11.0\n")
    tr = open_trace(tmp_path)
    assert tr.meta["format"] == "kineto"
    assert len(tr.kernels) == _raw_kineto_kernels(KINETO)


def test_a_folder_of_separate_traces_names_them_instead_of_guessing(tmp_path):
    shutil.copy(KINETO, tmp_path / "a.json.gz")
    shutil.copy(KINETO, tmp_path / "b.json.gz")
    with pytest.raises(TraceFormatError) as exc:
        open_trace(tmp_path)
    msg = str(exc.value)
    assert str(tmp_path) in msg and "2 separate traces (a.json.gz, b.json.gz)" in msg
    assert "\n" not in msg


def test_a_folder_reader_names_the_other_traces_it_left_out(tmp_path):
    # the rocpd folder reader reads the databases; the Kineto trace beside them was
    # silently left out
    shutil.copy(ROCPD, tmp_path / ROCPD.name)
    shutil.copy(KINETO, tmp_path / "model.json.gz")
    con = sqlite3.connect(ROCPD)
    (kt,) = con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE "
                        "'rocpd_kernel_dispatch_%'").fetchone()
    (n,) = con.execute(f'SELECT count(*) FROM "{kt}"').fetchone()
    con.close()
    tr = open_trace(tmp_path)
    assert tr.meta["format"] == "rocpd" and len(tr.kernels) == n
    assert any("1 other trace beside it not read: model.json.gz (kineto)" in w
               for w in tr.warnings)
