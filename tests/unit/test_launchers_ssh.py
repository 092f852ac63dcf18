"""SSH launcher against a real OpenSSH sshd on 127.0.0.1 (started by a fixture): run and
stream, artifacts by SFTP, cancel, host-key checks, wrong key, ProxyJump, and a
connection dropped mid-run (the sshd processes serving it killed) resumed losslessly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from hipscope.launchers import ProfilerSpec, RunSpec, Target, make_launcher
from hipscope.launchers.base import RunState
from hipscope.launchers.detect import detect
from hipscope.launchers.ssh import HostKeyChanged, SSHHost, fingerprint
from hipscope.parsers import open_trace
from tests.conftest import ROOT
from tests.unit.launcher_fixtures import (
    Recorder,
    alive,
    install_rocprofv3_standin,
    key_fingerprint,
    kill_pids,
    start_sshd,
    stop_sshd,
    wait_until,
)

PY = sys.executable


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    d = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield d
    stop_sshd(d)


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("HIPSCOPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)   # only the test's keys count


@pytest.fixture
def config(sshd, tmp_path):
    kh = sshd.known_hosts(f"kh-{tmp_path.name}")
    return sshd.ssh_config(f"cfg-{tmp_path.name}", kh)


def ssh_spec(config, tmp_path, command, host="testhost", **kw) -> RunSpec:
    return RunSpec(command, target=Target("ssh", host=host, ssh_config=str(config),
                                          remote_dir=str(tmp_path / "remote")), **kw)


def run(spec, callback=None, timeout=90, launcher_hook=None):
    rec = Recorder()
    launcher = make_launcher(spec, observers=[rec], host_key_callback=callback)
    if launcher_hook:
        launcher_hook(launcher)
    launcher.start()
    res = launcher.wait(timeout)
    assert res is not None, f"the run did not end; events {rec.events[-10:]}"
    return res, rec


def test_run_streams_and_downloads_artifacts(sshd, config, tmp_path):
    bindir = tmp_path / "bin"
    install_rocprofv3_standin(bindir)
    code = ("import os, sys\nfor i in range(20): print('remote', i, flush=True)\n"
            "print('to stderr', os.environ['HS_V'], file=sys.stderr)\nsys.exit(4)\n")
    spec = ssh_spec(config, tmp_path, [PY, "-c", code], env={"HS_V": "x y"},
                    profiler=ProfilerSpec("rocprofv3",
                                          {"executable": str(bindir / "rocprofv3")}))
    res, rec = run(spec)
    assert res.state == RunState.FAILED and res.exit_status == 4, res.reason
    assert rec.lines() == [f"remote {i}" for i in range(20)]
    assert rec.lines("stderr") == ["to stderr x y"]
    assert (res.folder / "stdout.log").read_text() == "".join(f"remote {i}\n" for i in range(20))
    st = json.loads((res.folder / "status.json").read_text())
    assert st["remote_dir"] == str(tmp_path / "remote" / res.folder.name)
    assert st["exit_status"] == 4
    # the artifacts came back by SFTP into the local run folder
    assert res.artifacts and all(p.is_relative_to(res.folder / "prof") for p in res.artifacts)
    assert {p.name.split("_", 1)[1] for p in res.artifacts} == {
        "kernel_trace.csv", "hip_api_trace.csv", "memory_copy_trace.csv",
        "marker_api_trace.csv"}
    trace = open_trace(res.trace_inputs)
    assert len(trace.kernels) == 9
    prov = json.loads((res.folder / "provenance.json").read_text())
    assert prov["host"]
    # the target's epoch and CLOCK_BOOTTIME, read there: aligns telemetry with rocprofv3
    clocks = prov["clocks"]
    assert clocks["boottime_ns"] < clocks["realtime_ns"]


CANCEL_PROGRAM = r"""
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open(sys.argv[1] + ".tmp", "w").write(f"{os.getpid()} {child.pid}")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
print("ready", flush=True)
time.sleep(600)
"""


def test_cancel_kills_the_remote_process_group(sshd, config, tmp_path):
    pidfile = tmp_path / "pids"
    rec = Recorder()
    launcher = make_launcher(ssh_spec(config, tmp_path, [PY, "-c", CANCEL_PROGRAM,
                                                         str(pidfile)]), observers=[rec])
    launcher.start()
    pids: list[int] = []
    try:
        rec.wait_for(lambda r: "ready" in r.lines(), 60, "the remote program to start")
        pids = [int(x) for x in pidfile.read_text().split()]
        assert all(alive(p) for p in pids)
        launcher.cancel()
        res = launcher.wait(60)
        assert res is not None and res.state == RunState.CANCELLED
        wait_until(lambda: not any(alive(p) for p in pids), 15, "remote processes to end")
        assert res.exit_status == 128 + 15     # the watcher recorded the SIGTERM death
    finally:
        kill_pids(pids)
        launcher.cancel()
        launcher.wait(60)


def test_unknown_host_is_asked_about(sshd, tmp_path):
    kh = sshd.known_hosts("empty_kh", key=False)
    cfg = sshd.ssh_config("cfg_unknown", kh)
    asked = []

    def reject(host, key_type, fp):
        asked.append((host, key_type, fp))
        return False
    res, _ = run(ssh_spec(cfg, tmp_path, [PY, "-c", "print(1)"]), callback=reject)
    expected_fp = key_fingerprint(sshd.host_key.with_suffix(".pub"))
    assert asked == [(sshd.label, "ssh-ed25519", expected_fp)]
    assert res.state == RunState.FAILED and "not accepted" in res.reason
    assert expected_fp in res.reason
    assert kh.read_text() == ""

    asked.clear()
    res, rec = run(ssh_spec(cfg, tmp_path, [PY, "-c", "print('in')"]),
                   callback=lambda *a: asked.append(a) or True)
    assert res.state == RunState.FINISHED and rec.lines() == ["in"]
    assert len(asked) == 1 and sshd.label in kh.read_text()
    # now known: not asked again
    res, _ = run(ssh_spec(cfg, tmp_path, [PY, "-c", "pass"]),
                 callback=lambda *a: pytest.fail("asked about a known host"))
    assert res.state == RunState.FINISHED


def test_no_callback_means_unknown_hosts_are_refused(sshd, tmp_path):
    kh = sshd.known_hosts("empty_kh2", key=False)
    res, _ = run(ssh_spec(sshd.ssh_config("cfg_nocb", kh), tmp_path, ["true"]))
    assert res.state == RunState.FAILED and "not accepted" in res.reason


def test_changed_host_key_is_refused(sshd, tmp_path):
    kh = sshd.known_hosts("changed_kh", key=sshd.other_host_key)
    cfg = sshd.ssh_config("cfg_changed", kh)
    res, _ = run(ssh_spec(cfg, tmp_path, [PY, "-c", "print(1)"]),
                 callback=lambda *a: pytest.fail("a changed key must not be asked about"))
    assert res.state == RunState.FAILED
    assert "CHANGED" in res.reason and "ssh-keygen" in res.reason and "-R" in res.reason
    assert key_fingerprint(sshd.other_host_key.with_suffix(".pub")) in res.reason
    with pytest.raises(HostKeyChanged):
        SSHHost.connect(Target("ssh", host="testhost", ssh_config=str(cfg)))


def test_wrong_key_gives_a_clear_error(sshd, tmp_path):
    kh = sshd.known_hosts("kh_wrongkey")
    cfg = sshd.ssh_config("cfg_wrongkey", kh, key=sshd.wrong_key)
    res, _ = run(ssh_spec(cfg, tmp_path, [PY, "-c", "print(1)"]))
    assert res.state == RunState.FAILED
    assert res.reason.startswith(f"authentication to root@{sshd.label} failed")
    assert str(sshd.wrong_key) in res.reason


def test_proxyjump(sshd, config, tmp_path):
    res, rec = run(ssh_spec(config, tmp_path, [PY, "-c", "print('via jump')"], host="jumped"))
    assert res.state == RunState.FINISHED, res.reason
    assert rec.lines() == ["via jump"]


DROP_PROGRAM = r"""
import os, sys, time
gate = sys.argv[1]
for i in range(10):
    print("line", i, flush=True)
while not os.path.exists(gate):
    time.sleep(0.05)
for i in range(10, 20):
    print("line", i, flush=True)
print("bye", file=sys.stderr, flush=True)
sys.exit(3)
"""


def test_dropped_connection_is_resumed_with_nothing_lost(sshd, config, tmp_path):
    gate = tmp_path / "gate"
    rec = Recorder()
    launcher = make_launcher(ssh_spec(config, tmp_path, [PY, "-c", DROP_PROGRAM, str(gate)]),
                             observers=[rec])
    launcher.start()
    try:
        rec.wait_for(lambda r: "line 9" in r.lines(), 60, "the first ten lines")
        killed = sshd.drop_connections()
        assert killed, "no sshd session process to kill"
        rec.wait_for(lambda r: any("lost" in m for m in r.messages()), 60,
                     "the launcher to notice the dropped link")
        gate.touch()
        res = launcher.wait(90)
    finally:
        gate.touch()
        launcher.cancel()
        launcher.wait(60)
    assert res is not None and res.state == RunState.FAILED, res
    assert res.exit_status == 3
    assert rec.lines() == [f"line {i}" for i in range(20)]       # each once, in order
    assert rec.lines("stderr") == ["bye"]
    assert (res.folder / "stdout.log").read_text() == "".join(f"line {i}\n" for i in range(20))
    assert any(m.startswith("reconnected") for m in rec.messages())


def test_hung_link_is_detected_by_timeout_and_resumed(sshd, config, tmp_path):
    """The sshd serving the session is frozen (SIGSTOP): no RST, no answers. The launcher
    must notice after ServerAliveInterval x ServerAliveCountMax (2 s x 3 in the test
    config), reconnect and finish with every line."""
    gate = tmp_path / "gate"
    rec = Recorder()
    launcher = make_launcher(ssh_spec(config, tmp_path, [PY, "-c", DROP_PROGRAM, str(gate)]),
                             observers=[rec])
    launcher.start()
    frozen: list[int] = []
    try:
        rec.wait_for(lambda r: "line 9" in r.lines(), 60, "the first ten lines")
        frozen = sshd.session_pids()
        for p in frozen:
            os.kill(p, signal.SIGSTOP)
        rec.wait_for(lambda r: any(m.startswith("reconnected") for m in r.messages()), 60,
                     "the launcher to give up on the frozen link and reconnect")
        gate.touch()
        res = launcher.wait(90)
    finally:
        gate.touch()
        kill_pids(frozen)
        launcher.cancel()
        launcher.wait(60)
    assert res is not None and res.exit_status == 3
    assert rec.lines() == [f"line {i}" for i in range(20)]


def test_detect_over_ssh(sshd, config):
    host = SSHHost.connect(Target("ssh", host="testhost", ssh_config=str(config)))
    try:
        info = detect(host)
        assert fingerprint(host._client.get_transport().get_remote_server_key()) == \
            key_fingerprint(sshd.host_key.with_suffix(".pub"))
    finally:
        host.close()
    assert info["host"] == os.uname().nodename and "python3" in info["tools"]


def test_cli_run_over_ssh(sshd, config, tmp_path):
    p = subprocess.run([PY, "-m", "hipscope", "run", "--target", "testhost", "--ssh-config",
                        str(config), "--remote-dir", str(tmp_path / "remote"), "--",
                        PY, "-c", "print('cli remote')"], capture_output=True, text=True,
                       cwd=ROOT, timeout=120, stdin=subprocess.DEVNULL,
                       env={k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"})
    assert p.returncode == 0, p.stderr
    assert p.stdout == "cli remote\n" and "run folder:" in p.stderr
