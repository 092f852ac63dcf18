"""The SSH launcher cannot be abused (RELIABILITY.md section 3), against a real OpenSSH
sshd on 127.0.0.1: hostile SFTP names and artifact caps (M1), login shells bash, dash,
fish and tcsh (M2), secrets (M3), the ssh_config host-key policy (M4), odd known_hosts
lines (M5), hashed known_hosts and private remote run folders (M6).

The shell tests create throwaway users (``useradd``; the tests run as root, as the sshd
fixture needs) and delete them afterwards. Expected values come from the raw files
(json, stat, ``ssh-keygen -F``), never from hipscope's own readers.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import paramiko
import pytest

from hipscope.launchers import RunSpec, Target, make_launcher
from hipscope.launchers.base import RunState
from hipscope.launchers.ssh import SSHError, SSHHost
from tests.conftest import ROOT
from tests.unit.launcher_fixtures import Recorder, start_sshd, stop_sshd

PY = sys.executable
SHELLS = {"bash": "/bin/bash", "dash": "/bin/sh", "fish": "/usr/bin/fish",
          "tcsh": "/usr/bin/tcsh"}
SECRET_ENV = "ngc-remote-secret-4711"


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    d = start_sshd(tmp_path_factory.mktemp("sshd"), [
        f"SetEnv NVIDIA_API_KEY={SECRET_ENV} NVIDIA_DRIVER_CAPABILITIES=compute HS_GONE=1"])
    yield d
    stop_sshd(d)


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("HIPSCOPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)   # only the test's keys count


@pytest.fixture
def config(sshd, tmp_path):
    return sshd.ssh_config(f"cfg-{tmp_path.name}", sshd.known_hosts(f"kh-{tmp_path.name}"))


@pytest.fixture
def shared_dir():
    """A folder every throwaway user may write to (hostile scripts would touch it)."""
    d = Path(tempfile.mkdtemp(prefix="hs-ssh-"))
    d.chmod(0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def run(spec, callback=None, timeout=90):
    rec = Recorder()
    launcher = make_launcher(spec, observers=[rec], host_key_callback=callback)
    launcher.start()
    res = launcher.wait(timeout)
    assert res is not None, f"the run did not end; events {rec.events[-10:]}"
    return res, rec


def connect(cfg, callback=None, host="testhost", **kw) -> SSHHost:
    return SSHHost.connect(Target("ssh", host=host, ssh_config=str(cfg), **kw), callback)


# --------------------------------------------------------------------------- M1 downloads

class HostileSFTP:
    """A real SFTP client whose listing of ``prof`` also names ``hostile`` (no real
    sftp-server can produce such names; the protocol carries any string)."""

    def __init__(self, real: paramiko.SFTPClient, hostile: str | None,
                 size: int | None = None):
        self.real, self.hostile, self.size = real, hostile, size

    def listdir_attr(self, path):
        out = self.real.listdir_attr(path)
        if path.endswith("/prof") and self.hostile is not None:
            a = paramiko.SFTPAttributes()
            a.filename, a.st_mode, a.st_size = self.hostile, stat.S_IFREG | 0o644, 5
            out.append(a)
        if self.size is not None:
            for a in out:
                a.st_size = self.size
        return out

    def __getattr__(self, name):
        return getattr(self.real, name)


@pytest.mark.parametrize("name", ["../../escaped.txt", "sub/../../../escaped.txt", "..",
                                  ".", "", "esc\0aped.txt"])
def test_hostile_sftp_names_are_refused(sshd, config, tmp_path, name):
    remote, local = tmp_path / "r" / "run" / "prof", tmp_path / "l" / "run" / "prof"
    remote.mkdir(parents=True)
    local.mkdir(parents=True)
    (remote / "ok.txt").write_text("fine")
    (tmp_path / "r" / "escaped.txt").write_text("pwned")   # what the server would serve
    before = sorted(p for p in tmp_path.rglob("*") if not p.is_relative_to(tmp_path / "r"))
    host = connect(config)
    try:
        host._sftp = HostileSFTP(host.sftp(), name)
        with pytest.raises(Exception) as exc:
            host.download_tree(str(remote), local)
    finally:
        host.close()
    assert "unsafe file name" in str(exc.value) and repr(name) in str(exc.value)
    after = sorted(p for p in tmp_path.rglob("*") if not p.is_relative_to(tmp_path / "r"))
    assert [p for p in after if p not in before and not p.is_relative_to(local)] == []


def test_listed_size_that_lies_is_still_capped(sshd, config, tmp_path):
    from hipscope.launchers.downloads import ArtifactLimits, ArtifactRefused

    remote = tmp_path / "r" / "prof"
    remote.mkdir(parents=True)
    (remote / "big.bin").write_bytes(b"x" * 5000)
    host = connect(config)
    try:
        host._sftp = HostileSFTP(host.sftp(), None, size=10)
        with pytest.raises(ArtifactRefused, match="per-file limit of 1,000 bytes"):
            host.download_tree(str(remote), tmp_path / "l",
                               ArtifactLimits(max_file_bytes=1000))
    finally:
        host.close()
    assert not (tmp_path / "l" / "big.bin").exists()   # no partial file left behind


def test_real_tree_with_odd_names_downloads_and_links_stay_behind(sshd, config, tmp_path):
    remote = tmp_path / "r" / "prof"
    files = {"a b.csv": b"1", "...": b"2", ".hidden": b"3", "-n": b"4", "\u00fc.txt": b"5",
             "sub/deeper/x.json": b"{}"}
    for rel, data in files.items():
        (remote / rel).parent.mkdir(parents=True, exist_ok=True)
        (remote / rel).write_bytes(data)
    (remote / "link").symlink_to("/etc/hostname")
    local = tmp_path / "l" / "prof"
    host = connect(config)
    try:
        got = host.download_tree(str(remote), local)
    finally:
        host.close()
    assert sorted(str(p.relative_to(local)) for p in got) == sorted(files)
    assert all((local / rel).read_bytes() == data for rel, data in files.items())
    assert not (local / "link").exists()


def test_artifact_caps_fail_the_run_with_a_sentence(sshd, config, tmp_path):
    code = "for i in range(3): open(PROF + f'/part{i}.bin', 'wb').write(b'x' * 600)\n"
    for limits, words in (({"max_file_bytes": 500}, "per-file limit of 500 bytes"),
                          ({"max_total_bytes": 1000}, "limit of 1,000 bytes in all"),
                          ({"max_files": 2}, "more than 2 artifacts")):
        rd = str(tmp_path / "remote")
        spec = RunSpec([PY, "-c", "print(1)"], target=Target(
            "ssh", host="testhost", ssh_config=str(config), remote_dir=rd, **limits))
        rec = Recorder()
        launcher = make_launcher(spec, observers=[rec])
        prof = Path(rd) / launcher.folder.run_id / "prof"
        spec.command[2] = f"PROF = {str(prof)!r}\n" + code
        launcher.start()
        res = launcher.wait(90)
        assert res is not None and res.state == RunState.FAILED, res
        assert words in res.reason and res.reason.count(". ") == 0, res.reason


# --------------------------------------------------------------------------- M2 shells

@pytest.fixture(scope="module")
def users(sshd):
    """Throwaway login users, one per shell, with the test key; deleted afterwards."""
    made: dict[str, str] = {}
    try:
        for name, shell in SHELLS.items():
            if not os.path.exists(shell):
                continue
            made[name] = sshd.add_user(f"hs{os.getpid() % 100000}{name}", shell)
        yield made
    finally:
        for user in made.values():
            sshd.del_user(user)


def user_of(users, shell: str) -> str:
    if shell not in users:
        pytest.skip(f"{SHELLS[shell]} is not installed (Debian: apt-get install {shell})")
    return users[shell]


def hostile_args(pw: Path) -> list[str]:
    return ["a b", "it's", 'say "hi"', f"$(touch {pw}/p1)", f"`touch {pw}/p2`",
            f"x; touch {pw}/p3; #", "a && b", "a | b", "> out", "line1\nline2", "tab\there",
            "\\", "x\\", "*", "~", "$HOME", "${IFS}", "-n", "", "--", "!", "!!", "#",
            "\u00fcnic\u00f8de \u2713", "'x\\'", f"'; touch {pw}/p4; '", "%s %d", "{a,b}"]


ECHO = ("import json, os, sys\nprint(json.dumps({'argv': sys.argv[1:], 'cwd': os.getcwd(), "
        "'env': {k: os.environ.get(k) for k in sorted(os.environ) if k.startswith('HS_')}}))\n")


@pytest.mark.parametrize("shell", list(SHELLS))
def test_hostile_arguments_arrive_verbatim_under_every_login_shell(sshd, config, users,
                                                                   shell, shared_dir):
    user = user_of(users, shell)
    args = hostile_args(shared_dir)
    assert len(args) == 28
    args.append(os.fsdecode(b"not utf-8: \xff\xfe"))   # bytes pass through as they are
    env = {"HS_A": "x\\", "HS_B": f"$(touch {shared_dir}/e1)", "HS_C": "it's\nnew",
           "HS_D": "!", "HS_E": "", "HS_F": "a b  c", "HS_G": "`id`"}
    cwd = shared_dir / "the cwd's $(x) !"
    cwd.mkdir()
    cwd.chmod(0o777)
    remote_dir = f"hs runs/it's \"odd\" $(touch {shared_dir}/rd) !x"
    # HS_GONE is set by the sshd (SetEnv); unset for the program
    spec = RunSpec(["/usr/bin/python3", "-c", ECHO, *args], cwd=str(cwd),
                   env={**env, "HS_GONE": None},
                   telemetry_interval=0.5, target=Target(
                       "ssh", host="testhost", user=user, ssh_config=str(config),
                       remote_dir=remote_dir))
    res, rec = run(spec)
    assert res.state == RunState.FINISHED, (res.reason, rec.lines("stderr"))
    assert [json.loads(ln) for ln in rec.lines()] == [
        {"argv": args, "cwd": str(cwd), "env": env}]
    st = json.loads((res.folder / "status.json").read_text())
    home = os.path.expanduser(f"~{user}")
    assert st["remote_dir"] == f"{home}/{remote_dir}/{res.folder.name}"
    assert sorted(p.name for p in shared_dir.iterdir()) == [cwd.name]   # nothing touched


@pytest.mark.parametrize("shell", list(SHELLS))
def test_detect_and_cancel_under_every_login_shell(sshd, config, users, shell, tmp_path):
    user = user_of(users, shell)
    p = subprocess.run([PY, "-m", "hipscope", "run", "--detect", "--json", "--target",
                        f"{user}@testhost", "--ssh-config", str(config)],
                       capture_output=True, text=True, cwd=ROOT, timeout=120,
                       stdin=subprocess.DEVNULL, env={**os.environ, "HIPSCOPE_DATA_DIR":
                                                      str(tmp_path / "data")})
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert info["host"] == os.uname().nodename and "python3" in info["tools"]
    rec = Recorder()
    launcher = make_launcher(RunSpec(
        ["/usr/bin/python3", "-c", "import time; print('ready', flush=True); time.sleep(600)"],
        target=Target("ssh", host="testhost", user=user, ssh_config=str(config))),
        observers=[rec])
    launcher.start()
    try:
        rec.wait_for(lambda r: "ready" in r.lines(), 60, "the remote program to start")
        launcher.cancel()
        res = launcher.wait(60)
    finally:
        launcher.cancel()
        launcher.wait(60)
    assert res is not None and res.state == RunState.CANCELLED
    assert res.exit_status == 128 + 15, rec.messages()


# --------------------------------------------------------------------------- M3 secrets

SCAN = r"""
import hashlib, os, sys
needles = [bytes.fromhex(h) for h in sys.argv[1:]]
seen = []
for pid in os.listdir("/proc"):
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        continue
    seen += [pid for n in needles if n in cmd]
print("argv holding a secret:", sorted(set(seen)))
print(hashlib.sha256(os.environ["HF_TOKEN"].encode()).hexdigest())
print(os.environ["HS_PLAIN"])
"""


def test_secrets_stay_off_disk_and_argv_and_a_rerun_asks_for_them(sshd, config, tmp_path):
    token, wandb = "hf_" + os.urandom(8).hex(), "wk_" + os.urandom(8).hex()
    # the program gets the secrets in hex, reversed: its own argv holds no secret
    needles = [token.encode()[::-1].hex(), wandb.encode()[::-1].hex()]
    code = SCAN.replace("bytes.fromhex(h)", "bytes.fromhex(h)[::-1]")
    spec = RunSpec([PY, "-c", code, *needles],
                   env={"HF_TOKEN": token, "WANDB_API_KEY": wandb, "HS_PLAIN": "plain"},
                   target=Target("ssh", host="testhost", ssh_config=str(config),
                                 remote_dir=str(tmp_path / "remote")))
    res, rec = run(spec)
    assert res.state == RunState.FINISHED, res.reason
    assert rec.lines() == ["argv holding a secret: []",
                           hashlib.sha256(token.encode()).hexdigest(), "plain"]
    for name in ("spec.json", "provenance.json"):
        path = res.folder / name
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, name
    saved = json.loads((res.folder / "spec.json").read_text())["env"]
    assert saved == {"HF_TOKEN": "<redacted>", "WANDB_API_KEY": "<redacted>",
                     "HS_PLAIN": "plain"}
    prov = json.loads((res.folder / "provenance.json").read_text())
    assert prov["env_changes"] == saved
    assert prov["env"].get("NVIDIA_DRIVER_CAPABILITIES") == "compute"   # sshd SetEnv
    assert "NVIDIA_API_KEY" not in prov["env"]
    for root in (res.folder, tmp_path / "remote"):
        for f in Path(root).rglob("*"):
            if f.is_file():
                data = f.read_bytes()
                assert token.encode() not in data and wandb.encode() not in data, f
                assert SECRET_ENV.encode() not in data, f
    again = RunSpec.from_json(json.loads((res.folder / "spec.json").read_text()))
    res2, _ = run(again)
    assert res2.state == RunState.FAILED
    assert res2.reason.startswith("the value of HF_TOKEN, WANDB_API_KEY was not saved")
    assert "--env HF_TOKEN=VALUE" in res2.reason


# --------------------------------------------------------------------------- M6 modes

def test_remote_run_folder_is_private(sshd, config, tmp_path):
    rd = tmp_path / "remote"
    spec = RunSpec([PY, "-c", "import os; open('made', 'w'); print(oct(os.umask(0)))"],
                   cwd=str(tmp_path), target=Target("ssh", host="testhost",
                                                    ssh_config=str(config), remote_dir=str(rd)))
    res, rec = run(spec)
    assert res.state == RunState.FINISHED, res.reason
    run_dir = rd / res.folder.name
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((run_dir / "prof").stat().st_mode) == 0o700
    for name in ("stdout.log", "stderr.log", "exit_status", "pgid"):
        assert stat.S_IMODE((run_dir / name).stat().st_mode) == 0o600, name
    # the program itself runs under the login umask, not hipscope's 077
    login_umask = rec.lines()[0]
    assert login_umask != "0o77"
    assert stat.S_IMODE((tmp_path / "made").stat().st_mode) == 0o666 & ~int(login_umask, 8)


# --------------------------------------------------------------------------- M4 policy

def policy_config(sshd, tmp_path, name: str, options: str, kh: str | None = None) -> Path:
    """An ssh config for ``testhost`` with ``options`` (lines) and no known_hosts line
    unless ``kh`` is given (a UserKnownHostsFile value)."""
    p = tmp_path / name
    p.write_text(f"Host testhost\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User root\n"
                 f"  IdentityFile {sshd.user_key}\n"
                 f"  GlobalKnownHostsFile {tmp_path / 'no-global'}\n"
                 + (f"  UserKnownHostsFile {kh}\n" if kh else "") + options)
    return p


def host_line(sshd, name: str | None = None, key: Path | None = None) -> str:
    return f"{name or sshd.label} {(key or sshd.host_key).with_suffix('.pub').read_text()}"


def refuse_asking(*a):
    pytest.fail(f"asked about a host key: {a}")


def test_strict_yes_refuses_unknown_hosts_without_asking(sshd, tmp_path):
    kh = tmp_path / "kh"
    kh.write_text("")
    cfg = policy_config(sshd, tmp_path, "cfg", "  StrictHostKeyChecking yes\n", kh)
    with pytest.raises(SSHError, match="StrictHostKeyChecking is yes: refused"):
        connect(cfg, lambda *a: True)
    assert kh.read_text() == ""


def test_accept_new_adds_unknown_and_refuses_changed(sshd, tmp_path):
    kh = tmp_path / "kh"
    kh.write_text("")
    cfg = policy_config(sshd, tmp_path, "cfg", "  StrictHostKeyChecking accept-new\n", kh)
    connect(cfg, refuse_asking).close()
    assert kh.read_text() == host_line(sshd).rsplit(" ", 1)[0] + "\n"   # no comment
    kh.write_text(host_line(sshd, key=sshd.other_host_key))
    with pytest.raises(SSHError, match="CHANGED"):
        connect(cfg, refuse_asking)


def test_strict_no_adds_unknown_and_connects_despite_a_changed_key(sshd, tmp_path):
    kh = tmp_path / "kh"
    kh.write_text("")
    cfg = policy_config(sshd, tmp_path, "cfg", "  StrictHostKeyChecking no\n", kh)
    connect(cfg, refuse_asking).close()
    assert sshd.label in kh.read_text()
    changed = host_line(sshd, key=sshd.other_host_key)
    kh.write_text(changed)
    host = connect(cfg, refuse_asking)
    try:
        assert host.run(["echo", "in"]).stdout == "in\n"
    finally:
        host.close()
    assert kh.read_text() == changed    # OpenSSH does not replace the known key


def test_host_key_alias_names_the_key(sshd, tmp_path):
    kh = tmp_path / "kh"
    kh.write_text(host_line(sshd, "mycluster"))
    cfg = policy_config(sshd, tmp_path, "cfg", "  HostKeyAlias mycluster\n", kh)
    connect(cfg, refuse_asking).close()
    kh.write_text("")
    asked = []
    connect(cfg, lambda *a: asked.append(a) or True).close()
    assert [a[0] for a in asked] == ["mycluster"]
    assert kh.read_text().split()[0] == "mycluster"
    subprocess.run(["ssh-keygen", "-F", "mycluster", "-f", str(kh)], check=True,
                   capture_output=True, timeout=30)


def test_every_user_known_hosts_file_and_the_global_one_count(sshd, tmp_path):
    empty, second, glob = tmp_path / "kh1", tmp_path / "kh2", tmp_path / "global"
    empty.write_text("")
    second.write_text(host_line(sshd))
    cfg = policy_config(sshd, tmp_path, "cfg", "", f"{empty} {second}")
    connect(cfg, refuse_asking).close()
    glob.write_text(host_line(sshd))
    cfg2 = policy_config(sshd, tmp_path, "cfg2", f"  GlobalKnownHostsFile {glob}\n", empty)
    cfg2.write_text(cfg2.read_text().replace(f"GlobalKnownHostsFile {tmp_path / 'no-global'}\n",
                                             ""))
    connect(cfg2, refuse_asking).close()
    assert empty.read_text() == ""
    glob.write_text(host_line(sshd, key=sshd.other_host_key))   # the advice names the file
    with pytest.raises(SSHError, match=f"CHANGED: {glob} has .* -f {glob} -R"):
        connect(cfg2, refuse_asking)


def test_system_config_is_read_after_the_users(sshd, tmp_path, monkeypatch):
    from hipscope.launchers import sshconfig

    kh = tmp_path / "kh"
    kh.write_text(host_line(sshd))
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text(
        f"Host testhost\n  Port {sshd.port}\n  IdentityFile {sshd.user_key}\n")
    system = tmp_path / "ssh_config"
    system.write_text(f"Include ssh_config.d/*.conf\nHost *\n  Port 1\n  HostName 127.0.0.1\n"
                      f"  User root\n  UserKnownHostsFile {kh}\n")
    (tmp_path / "ssh_config.d").mkdir()      # as Debian's: settings in included files
    (tmp_path / "ssh_config.d" / "strict.conf").write_text("StrictHostKeyChecking yes\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(sshconfig, "SYSTEM_CONFIG", str(system))
    host = SSHHost.connect(Target("ssh", host="testhost"), refuse_asking)
    try:   # Port from the user's file (first obtained), the rest from the system file
        assert host.run(["echo", "ok"]).stdout == "ok\n"
    finally:
        host.close()
    kh.write_text("")     # StrictHostKeyChecking yes from the system's Include applies
    with pytest.raises(SSHError, match="StrictHostKeyChecking is yes"):
        SSHHost.connect(Target("ssh", host="testhost"), lambda *a: True)
    # an explicit config is read alone, as ssh -F: no system file, so asked
    asked = []
    explicit = home / ".ssh" / "config"
    explicit.write_text(explicit.read_text() + f"  HostName 127.0.0.1\n  User root\n"
                        f"  UserKnownHostsFile {kh}\n")
    SSHHost.connect(Target("ssh", host="testhost", ssh_config=str(explicit)),
                    lambda *a: asked.append(a) or True).close()
    assert len(asked) == 1


# --------------------------------------------------------------------------- M5 lines

def test_odd_known_hosts_lines_are_skipped_and_revoked_keys_refused(sshd, tmp_path):
    kh = tmp_path / "kh"
    other = sshd.other_host_key.with_suffix(".pub").read_text().split()
    kh.write_text("\n".join([
        "# a comment", "", f"{sshd.label} ssh-ed25519 AAAA!!not-base64!!",
        f"@cert-authority *.example.com {other[0]} {other[1]}",
        f"{sshd.label} ssh-ed25519", "lonely-host", f"{sshd.label} ssh-unknown-type AAAAB3Nz",
        host_line(sshd).rstrip("\n"), ""]))
    cfg = policy_config(sshd, tmp_path, "cfg", "", kh)
    connect(cfg, refuse_asking).close()
    kh.write_text(kh.read_text() + f"@revoked * {host_line(sshd).split(' ', 1)[1]}")
    with pytest.raises(SSHError, match="marked @revoked"):
        connect(cfg, refuse_asking)
    kh.write_text(f"@revoked {host_line(sshd)}")      # revoked and nothing else known
    with pytest.raises(SSHError, match="marked @revoked"):
        connect(cfg, refuse_asking)


# --------------------------------------------------------------------------- M6 hashed

def test_accepted_keys_are_hashed_under_hash_known_hosts(sshd, tmp_path):
    kh = tmp_path / "kh"
    kh.write_text("")
    cfg = policy_config(sshd, tmp_path, "cfg", "  HashKnownHosts yes\n", kh)
    connect(cfg, lambda *a: True).close()
    text = kh.read_text()
    assert text.startswith("|1|") and sshd.label not in text and "127.0.0.1" not in text
    found = subprocess.run(["ssh-keygen", "-F", sshd.label, "-f", str(kh)],
                           capture_output=True, text=True, timeout=30)
    assert found.returncode == 0 and "ssh-ed25519" in found.stdout
    connect(cfg, refuse_asking).close()       # and it is found again
    assert kh.read_text() == text


def test_known_hosts_patterns_match_as_in_openssh(sshd, tmp_path):
    kh = tmp_path / "kh"
    key = sshd.host_key.with_suffix(".pub").read_text()
    kh.write_text(f"other.example,[127.0.0.?]:{sshd.port} {key}")   # '[' is no class
    cfg = policy_config(sshd, tmp_path, "cfg", "  StrictHostKeyChecking yes\n", kh)
    connect(cfg, refuse_asking).close()
    kh.write_text(f"*,!{sshd.label} {key}")                          # negated: not known
    with pytest.raises(SSHError, match="StrictHostKeyChecking is yes"):
        connect(cfg, refuse_asking)
