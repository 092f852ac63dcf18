"""tuner.experiment: a proposal's experiment + a program -> an A/B sweep over real
processes (through the launchers), cancellable mid-run."""

from __future__ import annotations

import json
import os
import sys
import threading
import time

import pytest

from hipscope.launchers import RunSpec
from hipscope.tuner.experiment import (
    applied_spec,
    apply_arg_changes,
    experiment_runner,
    experiment_sweep,
    program_for_trace,
    shell_line,
)
from hipscope.tuner.proposals import Confidence, Evidence, Experiment, Proposal
from hipscope.tuner.state import TunerState
from hipscope.tuner.sweep import SweepError, run_sweep

# the program sleeps and reports its own time (HIPSCOPE_RESULT, with a little per-process
# jitter): the A/B verdict must not depend on the machine's load, as process wall time does
FAST = ("import os,time; s = 0.05 if os.environ.get('HIPSCOPE_FAST')=='1' else 0.1; "
        "time.sleep(s); print('HIPSCOPE_RESULT {\"wall_s\": %.6f}' % (s + os.getpid() % 7 * 1e-4))")


def proposal(env=None, args=None, recipe=None) -> Proposal:
    return Proposal(id="fast", rule="fast", title="Go fast", evidence=Evidence(),
                    estimated_gain_fraction=0.5, formula="x / span",
                    confidence=Confidence("medium", "a test"),
                    experiment=Experiment(env=env or {}, args=args or [], recipe=recipe))


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HIPSCOPE_DATA_DIR", str(tmp_path / "data"))


def test_apply_arg_changes_replaces_appends_and_removes():
    cmd = ["prog", "--streams", "4", "-v"]
    assert apply_arg_changes(cmd, [{"old": "--streams 4", "new": "--streams 8"}]) == \
        ["prog", "--streams", "8", "-v"]
    assert apply_arg_changes(["p", "--n=2"], [{"old": "--n=2", "new": "--n=4"}]) == ["p", "--n=4"]
    assert apply_arg_changes(["p"], [{"old": None, "new": "--fast"}]) == ["p", "--fast"]
    assert apply_arg_changes(["p", "-v"], [{"old": "-v", "new": None}]) == ["p"]


def test_experiment_sweep_and_applied_spec():
    prog = RunSpec(["prog", "--streams=4"], env={"A": "1"}, cwd="/tmp")
    p = proposal(env={"GPU_MAX_HW_QUEUES": "8", "X": None},
                 args=[{"old": "--streams=4", "new": "--streams=8"}])
    spec = experiment_sweep(p, prog, repeats=3)
    names = [v.name for v in spec.variants()]
    assert len(names) == 2 and names[0] == "baseline" and "GPU_MAX_HW_QUEUES=8" in names[1]
    assert spec.repeats == 3 and spec.cwd == "/tmp" and spec.command == prog.command
    new = applied_spec(p, prog)
    assert new.command == ["prog", "--streams=8"]
    assert new.env == {"A": "1", "GPU_MAX_HW_QUEUES": "8", "X": None}
    line = shell_line(new)
    assert line == "cd /tmp && env -u X A=1 GPU_MAX_HW_QUEUES=8 prog --streams=8"
    with pytest.raises(ValueError):
        experiment_sweep(proposal(recipe="torch.compile(m)"), prog)


def test_experiment_runs_real_processes_and_finds_the_faster_variant():
    p = proposal(env={"HIPSCOPE_FAST": "1"})
    prog = RunSpec([sys.executable, "-c", FAST])
    spec = experiment_sweep(p, prog, repeats=5)
    res = run_sweep(spec, experiment_runner(p, prog), resamples=2000)
    ab = res.comparisons[res.variants[1].name]
    assert 0 < ab.ratio < 0.8 and ab.ci_high < 1 and ab.verdict == "better"
    # baseline, variant, A/A control: a warm-up round and 5 rounds (decided at the first look)
    assert res.rounds == 5 and len(res.runs) == 3 * 6 and res.stopped == "decided"


def test_cancel_kills_the_running_program(tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    code = (f"import os,time,pathlib; pathlib.Path({str(pids)!r}, str(os.getpid())).touch(); "
            "time.sleep(30)")
    p = proposal(env={"HIPSCOPE_FAST": "1"})
    prog = RunSpec([sys.executable, "-c", code])
    stop = threading.Event()
    out: dict = {}

    def work():
        try:
            run_sweep(experiment_sweep(p, prog), experiment_runner(p, prog, stop.is_set))
        except SweepError as exc:
            out["error"] = str(exc)

    t = threading.Thread(target=work)
    t.start()
    deadline = time.monotonic() + 20
    while not any(pids.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.02)
    stop.set()
    t.join(15)
    assert not t.is_alive() and "cancelled" in out["error"]
    started = [int(f.name) for f in pids.iterdir()]
    assert len(started) == 1
    with pytest.raises(ProcessLookupError):
        os.kill(started[0], 0)


def test_program_for_trace(tmp_path):
    assert program_for_trace({"command": "python train.py --bs 8"}).command == \
        ["python", "train.py", "--bs", "8"]
    assert program_for_trace({}) is None
    run = tmp_path / "run1"
    (run / "prof").mkdir(parents=True)
    (run / "spec.json").write_text(json.dumps(RunSpec(["./app", "-n", "3"]).to_json()))
    got = program_for_trace({"command": "other"}, [run / "prof" / "t.json"])
    assert got.command == ["./app", "-n", "3"]


def test_state_program_is_observable():
    st = TunerState()
    seen = []
    st.subscribe(lambda ev, payload: seen.append(ev))
    st.set_program(RunSpec(["a"]))
    st.set_program(RunSpec(["a"]))     # equal: no event
    assert seen == ["program_changed"] and st.program.command == ["a"]


def test_the_programs_own_result_line_is_the_measurement():
    p = proposal(env={"HIPSCOPE_FAST": "1"})
    code = ("import os; print('HIPSCOPE_RESULT {\"wall_s\": %s}' % "
            "(0.25 if os.environ.get('HIPSCOPE_FAST') == '1' else 0.5))")
    prog = RunSpec([sys.executable, "-c", code])
    m = experiment_runner(p, prog)({"HIPSCOPE_FAST": "1"}, [])
    assert m.wall_s == 0.25 and m.wall_from == "program"
