"""Local launcher with real processes: streaming, exit status, env, cancel of the whole
process group, run folders, the rocprofv3 stand-in, ``hipscope run`` / ``hipscope runs``."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hipscope.launchers import ProfilerSpec, RunSpec, local, make_launcher
from hipscope.launchers.base import MAX_FRAGMENT_CHARS, InvalidTransition, RunState
from hipscope.launchers.rundir import list_runs
from hipscope.parsers import open_trace
from tests.conftest import ROOT
from tests.unit.launcher_fixtures import (
    Recorder,
    alive,
    install_rocprofv3_standin,
    kill_pids,
    wait_until,
)

PY = sys.executable


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    d = tmp_path / "data"
    monkeypatch.setenv("HIPSCOPE_DATA_DIR", str(d))
    return d


def run(spec: RunSpec, timeout: float = 60):
    rec = Recorder()
    launcher = make_launcher(spec, observers=[rec])
    launcher.start()
    res = launcher.wait(timeout)
    assert res is not None, "the run did not end in time"
    return res, rec, launcher


def test_run_streams_output_and_finishes(data_dir):
    code = ("import sys\nfor i in range(50): print('out', i, flush=True)\n"
            "print('warn', file=sys.stderr)\n")
    res, rec, _ = run(RunSpec([PY, "-c", code]))
    assert res.state == RunState.FINISHED and res.exit_status == 0 and res.reason is None
    assert rec.lines("stdout") == [f"out {i}" for i in range(50)]
    assert rec.lines("stderr") == ["warn"]
    assert rec.states() == ["starting", "running", "collecting", "finished"]
    folder = res.folder
    assert folder.parent == data_dir / "runs"
    assert (folder / "stdout.log").read_text() == "".join(f"out {i}\n" for i in range(50))
    assert (folder / "stderr.log").read_text() == "warn\n"
    st = json.loads((folder / "status.json").read_text())
    assert st["state"] == "finished" and st["exit_status"] == 0 and st["target"] == "local"
    t = st["timings"]
    assert t["queued"] <= t["starting"] <= t["running"] <= t["collecting"] <= t["ended"]
    spec = json.loads((folder / "spec.json").read_text())
    assert spec["command"] == [PY, "-c", code]
    prov = json.loads((folder / "provenance.json").read_text())
    assert prov["host"] and "gpus" in prov and "versions" in prov
    assert prov["clocks"]["realtime_ns"] > prov["clocks"]["boottime_ns"] > 0   # aligns telemetry
    events = [json.loads(x) for x in (folder / "events.jsonl").read_text().splitlines()]
    assert [e["state"] for e in events if e["kind"] == "state"] == rec.states()


def test_failed_run_keeps_logs_and_exit_status():
    code = "import sys; print('partial'); print('boom', file=sys.stderr); sys.exit(7)"
    res, rec, _ = run(RunSpec([PY, "-c", code]))
    assert res.state == RunState.FAILED and res.exit_status == 7
    assert "status 7" in res.reason
    assert (res.folder / "stdout.log").read_text() == "partial\n"
    assert (res.folder / "stderr.log").read_text() == "boom\n"
    st = json.loads((res.folder / "status.json").read_text())
    assert st["state"] == "failed" and st["exit_status"] == 7 and "status 7" in st["reason"]


def test_env_changes_and_working_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("HIPSCOPE_TEST_DROP", "present")
    wd = tmp_path / "wd"
    wd.mkdir()
    code = ("import os; print(os.getcwd()); print(os.environ.get('HS_A')); "
            "print(os.environ.get('HIPSCOPE_TEST_DROP'))")
    res, rec, _ = run(RunSpec([PY, "-c", code], cwd=str(wd),
                              env={"HS_A": "a b 'c'", "HIPSCOPE_TEST_DROP": None}))
    assert res.state == RunState.FINISHED
    assert rec.lines() == [str(wd), "a b 'c'", "None"]
    assert json.loads((res.folder / "provenance.json").read_text())["env_changes"] == \
        {"HS_A": "a b 'c'", "HIPSCOPE_TEST_DROP": None}


GROUP_PROGRAM = r"""
import os, subprocess, sys, time
pidfile = sys.argv[1]
child = subprocess.Popen([sys.executable, "-c",
    "import subprocess, sys, time\n"
    "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "print(g.pid, flush=True)\n"
    "time.sleep(600)\n"], stdout=subprocess.PIPE, text=True)
grandchild = int(child.stdout.readline())
with open(pidfile + ".tmp", "w") as fh:
    fh.write(f"{os.getpid()} {child.pid} {grandchild}")
os.replace(pidfile + ".tmp", pidfile)
print("ready", flush=True)
time.sleep(600)
"""


def test_cancel_kills_the_process_group(tmp_path):
    pidfile = tmp_path / "pids"
    rec = Recorder()
    launcher = make_launcher(RunSpec([PY, "-c", GROUP_PROGRAM, str(pidfile)]), observers=[rec])
    launcher.kill_grace_s = 5.0
    launcher.start()
    pids: list[int] = []
    try:
        rec.wait_for(lambda r: "ready" in r.lines(), 30, "the program to start its children")
        pids = [int(x) for x in pidfile.read_text().split()]
        assert len(pids) == 3 and all(alive(p) for p in pids)
        launcher.cancel()
        res = launcher.wait(30)
        assert res is not None and res.state == RunState.CANCELLED
        assert res.reason == "cancelled by the user"
        wait_until(lambda: not any(alive(p) for p in pids), 10,
                   "program, child and grandchild to be gone")
        assert (res.folder / "stdout.log").read_text() == "ready\n"   # kept
        assert json.loads((res.folder / "status.json").read_text())["state"] == "cancelled"
    finally:
        kill_pids(pids)
        launcher.cancel()
        launcher.wait(30)


def test_cancel_before_start_never_runs(tmp_path):
    marker = tmp_path / "ran"
    launcher = make_launcher(RunSpec([PY, "-c", f"open({str(marker)!r}, 'w')"]))
    launcher.cancel()
    res = launcher.run()
    assert res.state == RunState.CANCELLED and not marker.exists()


def test_missing_program_fails_with_a_reason():
    res, rec, _ = run(RunSpec(["/nonexistent/hipscope-no-such-program", "x"]))
    assert res.state == RunState.FAILED
    assert "cannot start" in res.reason and "hipscope-no-such-program" in res.reason
    assert res.exit_status is None


def test_state_machine_refuses_bad_transitions():
    launcher = make_launcher(RunSpec([PY, "-c", "pass"]))
    with pytest.raises(InvalidTransition):
        launcher.set_state(RunState.FINISHED)
    launcher.run()
    with pytest.raises(InvalidTransition):
        launcher.set_state(RunState.RUNNING)


def test_observer_errors_do_not_break_the_run(caplog):
    def bad(ev):
        raise RuntimeError("observer bug")
    launcher = make_launcher(RunSpec([PY, "-c", "print('x')"]), observers=[bad])
    assert launcher.run().state == RunState.FINISHED
    assert "observer" in caplog.text


def test_rocprofv3_standin_run_opens_as_one_trace(tmp_path):
    bindir = tmp_path / "bin"
    install_rocprofv3_standin(bindir)
    spec = RunSpec([PY, "-c", "print('app ran')"],
                   profiler=ProfilerSpec("rocprofv3", {"executable": str(bindir / "rocprofv3"),
                                                       "pmc": ["SQ_WAVES"]}))
    res, rec, launcher = run(spec)
    assert res.state == RunState.FINISHED, res.reason
    assert rec.lines() == ["app ran"]
    argv = json.loads((res.folder / "status.json").read_text())["argv"]
    assert argv[argv.index("-d") + 1] == str(res.folder / "prof")
    assert argv[argv.index("-o") + 1] == "%hostname%/%pid%"
    names = sorted(p.name.split("_", 1)[1] for p in res.artifacts)
    assert names == ["counter_collection.csv", "hip_api_trace.csv", "kernel_trace.csv",
                     "marker_api_trace.csv", "memory_copy_trace.csv"]
    assert len(res.trace_inputs) == 1 and res.trace_inputs[0].parent == res.folder / "prof"
    trace = open_trace(res.trace_inputs)
    assert trace.meta["format"] == "rocprofv3-csv"
    assert len(trace.kernels) == 9 and len(trace.counters) > 0
    st = json.loads((res.folder / "status.json").read_text())
    assert st["trace_inputs"] == [str(p) for p in res.trace_inputs]


# --------------------------------------------------------------------------- CLI

def cli(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "hipscope", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env={**os.environ, **(env or {})})


def test_cli_run_streams_and_exits_with_the_programs_status(data_dir):
    code = "import os, sys; print('hello', os.environ['HS_X']); sys.exit(5)"
    p = cli("run", "--env", "HS_X=42", "--", PY, "-c", code)
    assert p.returncode == 5, p.stderr
    assert p.stdout == "hello 42\n"
    folder = Path(p.stderr.strip().splitlines()[-1].split("run folder: ", 1)[1])
    assert folder.parent == data_dir / "runs" and (folder / "spec.json").is_file()
    assert "failed: the program exited with status 5" in p.stderr

    p2 = cli("run", "-q", "--", PY, "-c", "print('second')")
    assert p2.returncode == 0 and p2.stdout == "second\n"

    listed = cli("runs", "--json")
    assert listed.returncode == 0
    runs = json.loads(listed.stdout)
    assert [r["state"] for r in runs] == ["failed", "finished"]
    assert runs[0]["exit_status"] == 5 and runs[0]["target"] == "local"
    assert runs[0]["command"] == [PY, "-c", code] and runs[0]["duration_s"] >= 0
    text = cli("runs").stdout
    assert "failed" in text and "finished" in text and folder.name in text
    assert [r.run_id for r in list_runs()] == [r["id"] for r in runs]


def test_cli_run_usage_errors():
    p = cli("run", "--profiler", "nope", "--", "true")
    assert p.returncode == 2 and "no profiler named 'nope'" in p.stderr
    p = cli("run")
    assert p.returncode == 2
    p = cli("run", "--env", "1BAD=x", "--", "true")
    assert p.returncode == 2 and "not an environment variable name" in p.stderr


def test_cli_detect_reports_this_machine():
    p = cli("run", "--detect", "--json")
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert info["host"] == os.uname().nodename
    assert {"gpus", "profilers", "versions", "tools"} <= set(info)
    assert "Host:" in cli("run", "--detect").stdout


# --------------------------------------------------------------------------- hipscope itself ends

def _start_cli_run(tmp_path: Path, *command: str) -> subprocess.Popen:
    out, err = open(tmp_path / "cli.out", "wb"), open(tmp_path / "cli.err", "wb")
    try:
        return subprocess.Popen([PY, "-m", "hipscope", "run", "--", *command], cwd=ROOT,
                                stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    finally:
        out.close()
        err.close()


def _running_status(data_dir: Path) -> tuple[Path, dict]:
    """Wait until the one run folder's status.json says running; (folder, status)."""
    def running():
        for st_path in (data_dir / "runs").glob("*/status.json"):
            try:
                st = json.loads(st_path.read_text())
            except ValueError:          # being replaced right now
                return None
            if st.get("state") == "running" and st.get("pid"):
                return st_path.parent, st
        return None
    return wait_until(running, 60, "status.json to say running")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_cli_run_cancels_when_hipscope_gets_sigterm_or_sighup(sig, tmp_path, data_dir):
    pidfile = tmp_path / "pids"
    cli_proc = _start_cli_run(tmp_path, PY, "-c", GROUP_PROGRAM, str(pidfile))
    pids: list[int] = []
    try:
        folder, _st = _running_status(data_dir)
        wait_until(pidfile.exists, 60, "the program to start its children")
        pids = [int(x) for x in pidfile.read_text().split()]
        assert all(alive(p) for p in pids)
        cli_proc.send_signal(sig)
        assert cli_proc.wait(60) == 128 + sig
        st = json.loads((folder / "status.json").read_text())
        assert st["state"] == "cancelled"
        assert st["reason"] == f"cancelled: hipscope got {signal.Signals(sig).name}"
        wait_until(lambda: not any(alive(p) for p in pids), 10,
                   "program, child and grandchild to be gone")
        assert "hipscope: cancelling" in (tmp_path / "cli.err").read_text()
    finally:
        kill_pids(pids)
        if cli_proc.poll() is None:
            cli_proc.kill()
            cli_proc.wait(30)


def test_runs_says_when_the_hipscope_process_of_a_run_was_killed(tmp_path, data_dir):
    """SIGKILL cannot be caught: the listing must not say running forever, and it says
    that the program (its own process group) lives on."""
    code = "import time\ntime.sleep(600)\n"
    cli_proc = _start_cli_run(tmp_path, PY, "-c", code)
    program = None
    try:
        folder, st = _running_status(data_dir)
        program = st["pid"]
        cli_proc.kill()
        cli_proc.wait(30)
        p = cli("runs", "--json")
        [run_] = json.loads(p.stdout)
        assert run_["id"] == folder.name and run_["state"] == "unknown"
        assert run_["reason"] == (f"the hipscope process that ran it is gone "
                                  f"(pid {cli_proc.pid}); its program (pid {program}) is "
                                  "still running")
        os.killpg(program, signal.SIGKILL)
        wait_until(lambda: not alive(program), 10, "the program to be gone")
        [r] = list_runs()
        assert r.reason == f"the hipscope process that ran it is gone (pid {cli_proc.pid})"
        assert "unknown" in cli("runs").stdout.splitlines()[1]
    finally:
        if program is not None:
            kill_pids([program])
        if cli_proc.poll() is None:
            cli_proc.kill()
            cli_proc.wait(30)


# --------------------------------------------------------------------------- output

def test_a_line_without_end_arrives_in_bounded_pieces():
    """Memory stays bounded (no readline of a 3 MB line), the log is byte-exact, and
    the pieces put together are the output."""
    n = 3_000_000
    code = f"import sys\nsys.stdout.write('x' * {n} + '\\nend\\n')\n"
    res, rec, _ = run(RunSpec([PY, "-c", code]))
    assert res.state == RunState.FINISHED
    out = [e for e in rec.events if e.kind == "output" and e.stream == "stdout"]
    assert max(len(e.line) for e in out) <= MAX_FRAGMENT_CHARS
    assert "".join(e.line + e.end for e in out) == "x" * n + "\nend\n"
    assert (res.folder / "stdout.log").read_bytes() == b"x" * n + b"\nend\n"


def test_cli_output_is_the_programs_output_exactly():
    """UTF-8 split across read chunks, CR LF, and a last line without newline."""
    code = ("import sys\n"
            "sys.stdout.buffer.write(('a' + 'é' * 100_000 + '\\r\\n' + 'ünfinished').encode())\n")
    text = "a" + "é" * 100_000 + "\r\n" + "ünfinished"
    p = subprocess.run([PY, "-m", "hipscope", "run", "-q", "--", PY, "-c", code],
                       capture_output=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout == text.replace("\r\n", "\n").encode()


def test_cli_passes_progress_output_through_as_it_comes(tmp_path, data_dir):
    """tqdm-style ``\\r`` progress shows while the program runs, byte for byte."""
    gate = tmp_path / "gate"
    code = ("import os, sys, time\n"
            "for i in range(1, 6):\n    sys.stderr.write(f'\\rstep {i}'); sys.stderr.flush()\n"
            f"while not os.path.exists({str(gate)!r}): time.sleep(0.02)\n"
            "sys.stderr.write('\\n')\n")
    cli_proc = subprocess.Popen([PY, "-m", "hipscope", "run", "--", PY, "-c", code], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    got = bytearray()

    def read():
        while data := os.read(cli_proc.stderr.fileno(), 65536):
            got.extend(data)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_until(lambda: b"step 5" in got, 60, "the progress line while the program runs")
        assert cli_proc.poll() is None
    finally:
        gate.touch()
        assert cli_proc.wait(60) == 0
        reader.join(30)
        cli_proc.stderr.close()
    assert b"hipscope: running\n\rstep 1\rstep 2\rstep 3\rstep 4\rstep 5\nhipscope: " in got


# --------------------------------------------------------------------------- full disk

WRITER = ("import sys, time\nfor _ in range({n}): sys.stdout.write('y' * 65535 + '\\n')\n"
          "sys.stdout.flush()\ntime.sleep(600)\n")


def _assert_failed_disk_full(res, folder_reason: str, rec) -> None:
    assert res.state == RunState.FAILED
    assert res.reason.startswith(f"disk full: could not write stdout.log in {folder_reason} "
                                 "(No space left on device)"), res.reason
    assert res.reason.endswith("; the program was ended")
    assert any(m.startswith("disk full") for m in rec.messages())
    st = json.loads((res.folder / "status.json").read_text())
    assert st["state"] == "failed" and st["reason"] == res.reason
    assert not alive(st["pid"])


def test_full_disk_fails_the_run_and_ends_the_program(monkeypatch):
    """The log write fails with ENOSPC after 100 kB (as on a full disk, at the very
    point it happens): the pipe is still drained, the program ended, the run failed."""
    budget = [100_000]
    real_write_all = local._write_all

    def write_all(fd: int, data: bytes) -> None:
        take = min(budget[0], len(data))
        real_write_all(fd, data[:take])
        budget[0] -= take
        if take < len(data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(local, "_write_all", write_all)
    res, rec, _ = run(RunSpec([PY, "-c", WRITER.format(n=64)]))
    _assert_failed_disk_full(res, str(res.folder), rec)
    assert (res.folder / "stdout.log").read_bytes() == (b"y" * 65535 + b"\n") * 1 + \
        b"y" * (100_000 - 65536)


@pytest.fixture
def tiny_disk(tmp_path):
    """A real 1 MiB tmpfs (needs the right to mount: root in the test container)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=True)


def test_real_full_disk_fails_the_run(tiny_disk, monkeypatch):
    monkeypatch.setenv("HIPSCOPE_DATA_DIR", str(tiny_disk / "data"))
    res, rec, _ = run(RunSpec([PY, "-c", WRITER.format(n=64)]))
    _assert_failed_disk_full(res, str(res.folder), rec)
    assert (res.folder / "stdout.log").stat().st_size < 1 << 20
