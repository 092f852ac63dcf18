"""The launch-bound workload (hipscope/resources/workloads/launch_bound.py) and its
sweep: arguments, the HIPSCOPE_RESULT line and how sweeps read it, the sweep specs.

torch is not installed in the development environment, so the workload's loop runs
here over a tiny stand-in ``torch`` (CPU path only: it checks the control flow and
the output contract, not GPU behaviour); the real run is on the H200
(tests/data/gpu/run_tuner_proof.sh) and in the torch test below when torch exists.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
import types
from importlib.resources import files
from pathlib import Path

import pytest

from hipscope.tuner.sweep import (
    SweepSpec,
    launcher_runner,
    program_wall_s,
    run_sweep,
    subprocess_runner,
)

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ROOT / "hipscope" / "resources" / "workloads"


def _load_workload():
    spec = importlib.util.spec_from_file_location("launch_bound", WORKLOADS / "launch_bound.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


lb = _load_workload()


# ====================================================================== arguments, output
def test_arguments_and_defaults():
    a = lb.parse_args([])
    assert (a.streams, a.graph, a.steps, a.kernels_per_step, a.size, a.device) == \
        (1, "off", 100, 256, 4096, "cuda")
    assert lb.parse_args(["--graph"]).graph == "on"            # bare flag
    assert lb.parse_args(["--graph=off", "--streams=8"]).streams == 8
    assert lb.parse_args(["--graph", "on"]).graph == "on"
    for bad in (["--streams", "0"], ["--graph", "maybe"], ["--kernels-per-step", "2",
                                                              "--streams", "4"]):
        with pytest.raises(SystemExit):
            lb.parse_args(bad)


def test_chains_split_the_kernels_evenly():
    assert lb.chain_lengths(256, 1) == [256]
    assert lb.chain_lengths(10, 4) == [3, 3, 2, 2]
    assert sum(lb.chain_lengths(257, 8)) == 257


def test_the_result_line_is_what_sweeps_read():
    res = lb.summarise(lb.parse_args(["--streams", "2"]), 0.125, [1.0, 3.0, 2.0], "cuda")
    line = lb.result_line(res)
    assert line.startswith("HIPSCOPE_RESULT {") and "\n" not in line
    assert res["step_ms_median"] == 2.0 and res["streams"] == 2 and res["graph"] is False
    assert program_wall_s("noise\n" + line + "\n") == 0.125


def test_program_wall_s_takes_the_last_valid_result_line():
    assert program_wall_s('HIPSCOPE_RESULT {"wall_s": 1}\nHIPSCOPE_RESULT {"wall_s": 2.5}\n') \
        == 2.5
    assert program_wall_s(b'HIPSCOPE_RESULT {"wall_s": 0.5}') == 0.5
    for text in ("", None, "wall_s 3", 'HIPSCOPE_RESULT {"wall_s": -1}',
                 "HIPSCOPE_RESULT not json", 'HIPSCOPE_RESULT {"step_ms_median": 1}',
                 'HIPSCOPE_RESULT {"wall_s": true}'):
        assert program_wall_s(text) is None


# ====================================================================== the loop, stand-in torch
class _Tensor:
    adds = 0

    def add_(self, v):
        _Tensor.adds += 1
        return self


def _stand_in_torch() -> types.ModuleType:
    t = types.ModuleType("torch")
    t.device = lambda name: name
    t.zeros = lambda *a, **k: _Tensor()
    t.version = types.SimpleNamespace(hip=None, cuda=None)
    t.cuda = types.SimpleNamespace(is_available=lambda: False)
    t.profiler = types.SimpleNamespace(record_function=lambda name: contextlib.nullcontext())
    steps = []
    t.optim = types.SimpleNamespace(SGD=lambda params, lr: types.SimpleNamespace(
        step=lambda: steps.append(1)))
    t.optimizer_steps = steps
    return t


def test_cpu_loop_over_a_stand_in_torch(monkeypatch, capsys):
    fake = _stand_in_torch()
    monkeypatch.setitem(sys.modules, "torch", fake)
    _Tensor.adds = 0
    assert lb.main(["--device", "cpu", "--steps", "4", "--warmup", "2",
                    "--kernels-per-step", "8", "--streams", "4"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    res = json.loads(out[-1][len("HIPSCOPE_RESULT "):])
    assert _Tensor.adds == 6 * 8                 # (warm-up + timed steps) x kernels
    assert len(fake.optimizer_steps) == 6        # one optimizer step per step
    assert res["backend"] == "cpu" and res["steps"] == 4 and res["wall_s"] > 0
    assert program_wall_s("\n".join(out)) == res["wall_s"]


def test_gpu_requests_fail_with_one_sentence_without_a_gpu(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", _stand_in_torch())
    with pytest.raises(SystemExit, match="no GPU"):
        lb.main(["--steps", "1"])
    with pytest.raises(SystemExit, match="--graph needs a GPU"):
        lb.main(["--device", "cpu", "--graph"])
    monkeypatch.setitem(sys.modules, "torch", None)          # import torch -> ImportError
    with pytest.raises(SystemExit, match="torch is not importable"):
        lb.main(["--device", "cpu"])


def test_real_torch_cpu_run(tmp_path):
    pytest.importorskip("torch", reason="torch is not installed here; the workload's GPU "
                                        "runs are checked on the H200 by run_tuner_proof.sh")
    import subprocess

    out = subprocess.run([sys.executable, str(WORKLOADS / "launch_bound.py"), "--device",
                          "cpu", "--steps", "3", "--kernels-per-step", "16"],
                         capture_output=True, text=True, timeout=300, check=True)
    assert program_wall_s(out.stdout) > 0


# ====================================================================== sweeps read it
PRINTER = [sys.executable, "-c",
           "import time; time.sleep(0.2); print('HIPSCOPE_RESULT {\"wall_s\": 0.0125}')"]


def test_subprocess_runner_prefers_the_programs_own_wall_time():
    m = subprocess_runner(PRINTER, timeout=60)({}, [])
    assert m.wall_s == 0.0125 and m.wall_from == "program"
    plain = subprocess_runner([sys.executable, "-c", "print('hello')"], timeout=60)({}, [])
    assert plain.wall_from == "process" and plain.wall_s > 0


def test_launcher_runner_reads_the_result_line_from_the_run_log(tmp_path, monkeypatch):
    monkeypatch.setenv("HIPSCOPE_DATA_DIR", str(tmp_path))
    m = launcher_runner(SweepSpec(command=PRINTER, repeats=2))({}, [])
    assert m.wall_s == 0.0125 and m.wall_from == "program" and m.exit_status == 0


def test_sweep_compares_program_times():
    prog = [sys.executable, "-c",
            "import sys; w = 0.2 if '--slow' in sys.argv else 0.1; "
            "print('HIPSCOPE_RESULT {\"wall_s\": %s}' % w)"]
    spec = SweepSpec(command=prog, repeats=3,
                     knobs=[_knob("slow", ["1"], "--slow")])
    res = run_sweep(spec, subprocess_runner(prog, timeout=60), resamples=500)
    assert res.walls(0) == [0.1] * 3 and res.walls(1) == [0.2] * 3
    assert res.comparisons["slow=1"].ratio == pytest.approx(2.0)


def _knob(name, values, template):
    from hipscope.tuner.sweep import Knob

    return Knob(name, values, kind="arg", template=template)


# ====================================================================== the bundled specs
def test_bundled_sweep_specs_are_the_streams_by_graph_sweep():
    js = SweepSpec.load(WORKLOADS / "sweep.json")
    tm = SweepSpec.load(WORKLOADS / "sweep.toml")
    assert js.variants() == tm.variants() and js.command == tm.command
    names = [v.name for v in js.variants()]
    assert len(names) == 1 + 2 * 2 and names[0] == "baseline"
    assert "streams=4, graph=on" in names
    assert js.repeats == 5 and js.order in ("abab", "rotate", "shuffle")
    assert js.target == "local" and js.profiler == "none"
    script = js.command[1]
    assert (ROOT / script).resolve() == (WORKLOADS / "launch_bound.py").resolve()
    by = {v.name: v.args for v in js.variants()}
    # every variant's arguments parse
    for args in by.values():
        lb.parse_args(js.command[2:] + args)
    assert by["streams=4, graph=on"] == ["--streams=4", "--graph=on"]


def test_workloads_are_package_data():
    res = files("hipscope.resources") / "workloads"
    for name in ("launch_bound.py", "sweep.json", "sweep.toml"):
        assert (res / name).is_file()
    text = (ROOT / "pyproject.toml").read_text()
    assert '"workloads/*"' in text
