"""Listing run folders: damaged folders are listed as damaged (never a crash, never
dropped), and a run whose hipscope process is gone is not shown as running forever
(pid liveness and identity: the process start time from /proc/<pid>/stat)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hipscope.launchers import RunSpec, make_launcher
from hipscope.launchers.rundir import list_runs
from tests.conftest import ROOT

PY = sys.executable


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    d = tmp_path / "data"
    monkeypatch.setenv("HIPSCOPE_DATA_DIR", str(d))
    return d


def _good_run(code: str = "print('ok')") -> Path:
    return make_launcher(RunSpec([PY, "-c", code])).run().folder


def _stat_fields(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def _cli_runs(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "hipscope", "runs", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120, env=dict(os.environ))


DAMAGE = {
    "status_list": ("status.json", b"[]", "status.json holds a list, not a JSON object"),
    "timings_null": ("status.json", b'{"timings": null}',
                     "status.json: 'timings' is null, not an object of times"),
    "status_truncated": ("status.json", b'{"state": "fini', "status.json is not valid JSON"),
    "spec_list": ("spec.json", b"[]", "spec.json holds a list, not a JSON object"),
    "target_string": ("spec.json", None, "spec.json: 'target' is a string, not an object"),
    "spec_not_utf8": ("spec.json", b'{"command": ["caf\xe9"]}', "spec.json is not UTF-8 text"),
    "status_missing": ("status.json", "", "status.json is missing"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_damaged_run_folder_is_listed_as_damaged(case, data_dir):
    before = _good_run("print('before')")
    damaged = _good_run("print('damaged')")
    after = _good_run("print('after')")
    name, data, why = DAMAGE[case]
    path = damaged / name
    if data == "":
        path.unlink()
    elif data is None:           # "target": "local" instead of an object
        spec = json.loads(path.read_text())
        spec["target"] = "local"
        path.write_text(json.dumps(spec))
    else:
        path.write_bytes(data)

    p = _cli_runs("--json")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    runs = {r["id"]: r for r in json.loads(p.stdout)}
    assert set(runs) == {before.name, damaged.name, after.name}
    assert runs[before.name]["state"] == runs[after.name]["state"] == "finished"
    bad = runs[damaged.name]
    assert bad["state"] == "unknown"
    assert bad["reason"].startswith("damaged: " + why), bad["reason"]

    text = _cli_runs()
    assert text.returncode == 0 and text.stderr == "", text.stderr
    lines = text.stdout.splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.startswith(damaged.name))
    assert lines[row].split()[1] == "unknown"
    assert lines[row + 1].strip().startswith("damaged: " + why)
    assert sum(ln.split()[1] == "finished" for ln in lines[1:] if ln.split()[0] in
               (before.name, after.name)) == 2


def _live_status(folder: Path, owner: dict) -> None:
    st = json.loads((folder / "status.json").read_text())
    st.update(state="running", owner=owner, exit_status=None, reason=None)
    (folder / "status.json").write_text(json.dumps(st))


def test_a_running_run_whose_process_lives_stays_running():
    folder = _good_run()
    st = json.loads((folder / "status.json").read_text())
    me = os.getpid()
    assert st["owner"] == {"pid": me, "start": int(_stat_fields(me)[19]), "boot": _boot_id(),
                           "host": os.uname().nodename}          # recorded by the launcher
    _live_status(folder, st["owner"])
    [r] = list_runs()
    assert r.state == "running" and r.reason is None


def test_a_reused_pid_does_not_keep_a_run_running():
    """The pid is alive (this test's own), but it started at another time: the
    process that ran the run is gone."""
    folder = _good_run()
    me = os.getpid()
    _live_status(folder, {"pid": me, "start": int(_stat_fields(me)[19]) - 1,
                          "boot": _boot_id(), "host": os.uname().nodename})
    [r] = list_runs()
    assert r.state == "unknown"
    assert r.reason == f"the hipscope process that ran it is gone (pid {me})"


def test_a_run_from_another_host_or_boot():
    folder = _good_run()
    me = os.getpid()
    start = int(_stat_fields(me)[19])
    _live_status(folder, {"pid": me, "start": start, "boot": _boot_id(), "host": "elsewhere"})
    assert list_runs()[0].state == "running"                      # cannot tell: as written
    _live_status(folder, {"pid": me, "start": start, "boot": "another-boot",
                          "host": os.uname().nodename})
    assert list_runs()[0].state == "unknown"                      # rebooted since
