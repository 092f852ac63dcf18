"""Slurm: a real single-node cluster (munged + slurmctld + slurmd from Debian's
slurm-wlm 22.05, started by a fixture in a temporary folder) runs two-task jobs end to
end, locally and through an SSH login node (the real sshd); plus command building and
state parsing on output recorded from that cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hipscope.launchers import ProfilerSpec, RunSpec, SlurmOptions, Target, make_launcher
from hipscope.launchers.base import RunState
from hipscope.launchers.slurm import (
    JobInfo,
    job_script,
    parse_sacct,
    parse_sbatch,
    parse_scontrol,
    parse_squeue,
    sbatch_argv,
)
from hipscope.parsers import open_trace
from tests.unit import slurm_cluster
from tests.unit.launcher_fixtures import (
    Recorder,
    alive,
    install_rocprofv3_standin,
    kill_pids,
    start_sshd,
    stop_sshd,
    wait_until,
)

PY = sys.executable

# --------------------------------------------------------------------------- recorded output
# Recorded from the fixture's slurm-wlm 22.05.8 cluster (Debian 12) on this machine.
SCONTROL_COMPLETED = (
    "JobId=2 JobName=job.sh UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901758 "
    "Nice=0 Account=(null) QOS=(null) JobState=COMPLETED Reason=None Dependency=(null) "
    "Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 "
    "TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-11-29T18:18:41 "
    "EligibleTime=2026-11-29T18:18:41 AccrueTime=2026-11-29T18:18:41 "
    "StartTime=2026-11-29T18:18:43 EndTime=2026-11-29T18:18:43 Deadline=N/A "
    "SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-29T18:18:43 Scheduler=Main "
    "Partition=debug AllocNode:Sid=localhost:17631 ReqNodeList=(null) ExcNodeList=(null) "
    "NodeList=vm BatchHost=vm NumNodes=1 NumCPUs=2 NumTasks=2 CPUs/Task=1 ReqB:S:C:T=0:0:*:* "
    "TRES=cpu=2,node=1,billing=2 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* "
    "MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 "
    "OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) "
    "Command=/tmp/slurmtry/job.sh WorkDir=/tmp/slurmtry StdErr=/tmp/slurmtry/out.log "
    "StdIn=/dev/null StdOut=/tmp/slurmtry/out.log Power= \n")


def test_parse_recorded_outputs():
    assert parse_sbatch("2\n") == "2"
    assert parse_sbatch("1234;cluster-a\n") == "1234"
    with pytest.raises(ValueError, match="did not print a job id"):
        parse_sbatch("sbatch: error: Batch job submission failed: Invalid partition name\n")
    assert parse_squeue("PENDING|None\n") == JobInfo("PENDING", None)
    assert parse_squeue("PENDING|Resources\n") == JobInfo("PENDING", "Resources")
    assert parse_squeue("RUNNING|None\n").state == "RUNNING"
    assert parse_squeue("") is None
    assert parse_scontrol(SCONTROL_COMPLETED) == JobInfo("COMPLETED", None, 0, 0)
    assert parse_scontrol("slurm_load_jobs error: Invalid job id specified\n") is None
    assert parse_scontrol(SCONTROL_COMPLETED.replace("JobState=COMPLETED Reason=None",
                                                     "JobState=TIMEOUT Reason=TimeLimit")
                          .replace("ExitCode=0:0", "ExitCode=0:15")) == \
        JobInfo("TIMEOUT", "TimeLimit", 0, 15)
    # sacct -X -n -P -o State,ExitCode (accounting enabled clusters)
    assert parse_sacct("CANCELLED by 0|0:15\n") == JobInfo("CANCELLED", "CANCELLED by 0", 0, 15)
    assert parse_sacct("COMPLETED|0:0\n") == JobInfo("COMPLETED", None, 0, 0)
    assert parse_sacct("Slurm accounting storage is disabled\n") is None


def test_command_building_quotes_everything(tmp_path):
    spec = RunSpec(["./app", "a b", "$(rm -rf ~)", "it's"], env={"K": "v w", "DROP": None},
                   target=Target("slurm", slurm=SlurmOptions(ntasks=2, partition="gpu",
                                                             time="00:10:00",
                                                             srun_args=["--label"])))
    argv = sbatch_argv(spec, "/r d", "hipscope-x", "/w d")
    assert argv == ["sbatch", "--parsable", "--job-name=hipscope-x", "--output=/r d/stdout.log",
                    "--error=/r d/stderr.log", "--chdir=/w d", "--ntasks=2",
                    "--partition=gpu", "--time=00:10:00", "/r d/job.sh"]
    script = job_script(spec, spec.command, {}, "/r d")
    assert "export K='v w'" in script and "unset DROP" in script
    assert "srun --label ./app 'a b' '$(rm -rf ~)' 'it'\"'\"'s'" in script
    # the script really passes those words through unchanged
    (tmp_path / "srun").write_text("#!/bin/sh\nfor a in \"$@\"; do echo \"[$a]\"; done\n")
    (tmp_path / "srun").chmod(0o755)
    out = subprocess.run(["sh", "-c", script.replace("/r d", str(tmp_path))],
                         capture_output=True, text=True, timeout=30,
                         env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"})
    assert out.stdout.splitlines() == ["[--label]", "[./app]", "[a b]", "[$(rm -rf ~)]",
                                       "[it's]"]
    assert (tmp_path / "exit_status").read_text().strip() == "0"


# --------------------------------------------------------------------------- real cluster

@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    yield from slurm_cluster.one_node_cluster(tmp_path_factory)


@pytest.fixture(autouse=True)
def _data(tmp_path, monkeypatch):
    monkeypatch.setenv("HIPSCOPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


RANK_PROGRAM = ("import os, sys; r = os.environ['SLURM_PROCID']; "
                "print('rank', r, 'of', os.environ['SLURM_NTASKS'], os.environ['HS_TAG'], "
                "flush=True); sys.exit(0)")


def check_two_rank_run(res, rec):
    assert res.state == RunState.FINISHED, (res.reason, rec.events[-5:])
    assert res.exit_status == 0
    assert sorted(rec.lines()) == ["rank 0 of 2 tag", "rank 1 of 2 tag"]
    assert "running" in rec.states()
    # one rocprofv3 output per rank, merged into one trace
    assert sorted(p.name for p in res.trace_inputs) == ["rank0", "rank1"]
    trace = open_trace(res.trace_inputs)
    assert len(trace.kernels) == 2 * 9
    assert len(set(trace.kernels.column("pid").to_pylist())) == 2


def test_two_task_job_end_to_end(slurm, tmp_path):
    bindir = tmp_path / "bin"
    install_rocprofv3_standin(bindir)
    spec = RunSpec([PY, "-c", RANK_PROGRAM], env={"HS_TAG": "tag"},
                   profiler=ProfilerSpec("rocprofv3", {"executable": str(bindir / "rocprofv3")}),
                   target=Target("slurm", slurm=SlurmOptions(ntasks=2)))
    rec = Recorder()
    launcher = make_launcher(spec, observers=[rec])
    launcher.start()
    res = launcher.wait(120)
    assert res is not None, rec.events[-5:]
    check_two_rank_run(res, rec)
    assert any(e.kind == "progress" and "COMPLETED" in (e.text or "") for e in rec.events)
    argv = launcher.folder.status()["argv"]
    assert argv[argv.index("-o") + 1] == "%hostname%/rank%rank%/%pid%"


def test_cancel_scancels_the_job(slurm, tmp_path):
    pidfile = tmp_path / "pid"
    code = (f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); "
            "print('started', flush=True); time.sleep(600)")
    rec = Recorder()
    launcher = make_launcher(RunSpec([PY, "-c", code],
                                     target=Target("slurm", slurm=SlurmOptions(ntasks=1))),
                             observers=[rec])
    launcher.start()
    pid = None
    try:
        rec.wait_for(lambda r: "started" in r.lines(), 120, "the job to start")
        pid = int(pidfile.read_text())
        launcher.cancel()
        res = launcher.wait(120)
        assert res is not None and res.state == RunState.CANCELLED
        wait_until(lambda: not alive(pid), 30, "the job's process to end")
        job = launcher.job_info()
        assert job.state == "CANCELLED"
    finally:
        if pid:
            kill_pids([pid])
        launcher.cancel()
        launcher.wait(60)


@pytest.fixture(scope="module")
def login_node(slurm, tmp_path_factory):
    """The real sshd as a login node whose sessions see the test cluster's SLURM_CONF."""
    d = start_sshd(tmp_path_factory.mktemp("login"),
                   extra_config=[f"SetEnv SLURM_CONF={os.environ['SLURM_CONF']}"])
    yield d
    stop_sshd(d)


def test_two_task_job_through_an_ssh_login_node(login_node, tmp_path):
    cfg = login_node.ssh_config("cfg", login_node.known_hosts("kh"))
    bindir = tmp_path / "bin"
    install_rocprofv3_standin(bindir)
    spec = RunSpec([PY, "-c", RANK_PROGRAM], env={"HS_TAG": "tag"},
                   profiler=ProfilerSpec("rocprofv3", {"executable": str(bindir / "rocprofv3")}),
                   target=Target("slurm", host="testhost", ssh_config=str(cfg),
                                 remote_dir=str(tmp_path / "remote"),
                                 slurm=SlurmOptions(ntasks=2)))
    rec = Recorder()
    launcher = make_launcher(spec, observers=[rec])
    launcher.start()
    res = launcher.wait(120)
    assert res is not None, rec.events[-5:]
    check_two_rank_run(res, rec)
    # the outputs were fetched from the login node's run folder into the local one
    assert all(p.is_relative_to(res.folder / "prof") for p in res.trace_inputs)
    assert (tmp_path / "remote" / res.folder.name / "job.sh").is_file()
    assert Path(launcher.folder.status()["remote_dir"]) == tmp_path / "remote" / res.folder.name
