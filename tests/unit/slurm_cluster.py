"""The one-node Slurm cluster of the tests (munged + slurmctld + slurmd from Debian's
slurm-wlm, started in a temporary folder): a module-scoped fixture shared by the
launcher tests and the rank engine's dask-jobqueue test."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess

import pytest

from tests.unit.launcher_fixtures import free_port, wait_until

SLURM_BINS = [shutil.which(b, path="/usr/sbin:/usr/bin:" + os.environ.get("PATH", ""))
              for b in ("munged", "slurmctld", "slurmd", "sbatch")]


def one_node_cluster(tmp_path_factory):
    """Start the cluster, yield its folder (``SLURM_CONF`` set), stop it: the body of
    a module-scoped ``slurm`` fixture."""
    if not all(SLURM_BINS):
        pytest.skip("Slurm is not installed (Debian: slurm-wlm munge)")
    if os.geteuid() != 0:
        pytest.skip("the test cluster's daemons run as root")
    munged, slurmctld, slurmd, _ = SLURM_BINS
    d = tmp_path_factory.mktemp("slurm")
    for sub in ("state", "spool", "munge"):
        (d / sub).mkdir()
    key = d / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    sock = d / "munge" / "sock"
    host = socket.gethostname()
    conf = d / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=hipscopetest", f"SlurmctldHost={host}",
        f"SlurmctldPort={free_port()}", f"SlurmdPort={free_port()}",
        "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge", "CredType=cred/munge",
        f"AuthInfo=socket={sock}", f"StateSaveLocation={d / 'state'}",
        f"SlurmdSpoolDir={d / 'spool'}", f"SlurmctldPidFile={d / 'slurmctld.pid'}",
        f"SlurmdPidFile={d / 'slurmd.pid'}", f"SlurmctldLogFile={d / 'slurmctld.log'}",
        f"SlurmdLogFile={d / 'slurmd.log'}", "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none", "SchedulerType=sched/builtin",
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core", "MpiDefault=none",
        "ReturnToService=2", "SwitchType=switch/none", "MinJobAge=600",
        f"NodeName={host} CPUs={max(2, os.cpu_count() or 2)} RealMemory=2048 State=UNKNOWN",
        f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP", ""]))
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(conf)
    procs = [subprocess.Popen([munged, "-F", "--force", "-S", str(sock), "--key-file", str(key),
                               "--pid-file", str(d / "munge" / "pid"), "--log-file",
                               str(d / "munge" / "log"), "--seed-file", str(d / "munge" / "seed")],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    wait_until(lambda: sock.exists(), 20, "munged's socket")
    for exe in (slurmctld, slurmd):
        procs.append(subprocess.Popen([exe, "-D"], stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def idle() -> bool:
        for p in procs:
            if p.poll() is not None:
                logs = "".join(f.read_text()[-2000:] for f in d.glob("*.log"))
                pytest.fail(f"a Slurm daemon exited ({p.args[0]}: {p.returncode}):\n{logs}")
        r = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True,
                           timeout=30)
        return r.returncode == 0 and r.stdout.strip() == "idle"
    try:
        wait_until(idle, 60, "the Slurm node to be idle", step=0.2)
        yield d
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(20)
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old
