"""Local launcher with real processes: streaming, exit status, env, cancel of the whole
process group, run folders, the rocprofv3 stand-in, ``hipscope run`` / ``hipscope runs``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hipscope.launchers import ProfilerSpec, RunSpec, make_launcher
from hipscope.launchers.base import InvalidTransition, RunState
from hipscope.launchers.rundir import list_runs
from hipscope.parsers import open_trace
from tests.conftest import ROOT
from tests.unit.launcher_fixtures import (Recorder, alive, install_rocprofv3_standin,
                                          kill_pids, wait_until)

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
