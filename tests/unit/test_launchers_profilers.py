"""Profiler plug-ins (command lines, outputs), the standalone torch wrapper, detection
parsing, RunSpec/target parsing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from hipscope.launchers.detect import format_detect, parse_detect_output
from hipscope.launchers.profilers import ProfilerError, get_profiler
from hipscope.launchers.spec import ProfilerSpec, RunSpec, Target, parse_env_changes, parse_target

P = "/runs/r1/prof"


def test_rocprofv3_command_line():
    w = get_profiler("rocprofv3").wrap(["./app", "-n", "3"], P,
                                       {"pmc": ["SQ_WAVES", "GRBM_GUI_ACTIVE"], "stats": True,
                                        "output_format": "rocpd,csv"})
    assert w.argv == ["rocprofv3", "--kernel-trace", "--hip-trace", "--memory-copy-trace",
                      "--marker-trace", "--pmc", "SQ_WAVES", "GRBM_GUI_ACTIVE", "--stats",
                      "-d", P, "-o", "%hostname%/%pid%", "--output-format", "rocpd", "csv",
                      "--", "./app", "-n", "3"]
    per_rank = get_profiler("rocprofv3").wrap(["./app"], P, {"traces": ["sys"]}, per_rank=True)
    assert per_rank.argv[per_rank.argv.index("-o") + 1] == "%hostname%/rank%rank%/%pid%"
    assert "--sys-trace" in per_rank.argv


@pytest.mark.parametrize("opts, msg", [({"traces": ["kernal"]}, "no trace"),
                                       ({"output_format": ["xml"]}, "no format"),
                                       ({"bogus": 1}, "no option")])
def test_rocprofv3_bad_options(opts, msg):
    with pytest.raises(ProfilerError, match=msg):
        get_profiler("rocprofv3").wrap(["./app"], P, opts)


def test_rocprofv3_trace_inputs_prefer_rocpd(tmp_path):
    (tmp_path / "h" / "rank0").mkdir(parents=True)
    (tmp_path / "h" / "rank0" / "11_results.db").write_bytes(b"")
    (tmp_path / "h" / "rank0" / "11_kernel_trace.csv").write_text("")
    (tmp_path / "h" / "rank0" / "11_kernel_stats.csv").write_text("")
    prof = get_profiler("rocprofv3")
    assert prof.trace_inputs(tmp_path, {"output_format": ["rocpd", "csv"]}) == \
        [tmp_path / "h" / "rank0" / "11_results.db"]
    assert prof.trace_inputs(tmp_path, {"output_format": ["csv"]}) == [tmp_path / "h" / "rank0"]


def test_legacy_rocprof_command_line_and_pmc_file():
    w = get_profiler("rocprof").wrap(["./app"], P, {"traces": ["hip", "hsa"],
                                                    "pmc": "SQ_WAVES,SQ_INSTS_VALU"})
    assert w.argv == ["rocprof", "--hip-trace", "--hsa-trace", "--timestamp", "on", "-i",
                      f"{P}/input.txt", "-o", f"{P}/results.csv", "./app"]
    assert w.files == {"input.txt": b"pmc: SQ_WAVES SQ_INSTS_VALU\n"}


def test_per_rank_shell_wrapper_passes_words_through(tmp_path):
    """The `sh -c` wrapper for tools without rank templates: user words arrive intact."""
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\nfor a in \"$@\"; do echo \"[$a]\"; done\n")
    fake.chmod(0o755)
    w = get_profiler("ncu").wrap(["./app", "a b", "$(id)"], str(tmp_path / "p d"),
                                 {"executable": str(fake), "launch_count": 5}, per_rank=True)
    out = subprocess.run(w.argv, capture_output=True, text=True, timeout=30,
                         env={**os.environ, "SLURM_PROCID": "3"}).stdout.splitlines()
    assert out == ["[--csv]", "[--page]", "[details]", "[-c]", "[5]", "[--log-file]",
                   f"[{tmp_path / 'p d'}/ncu_details_rank3.csv]", "[./app]", "[a b]",
                   "[$(id)]"]


def test_ncu_and_nsys_command_lines(tmp_path):
    w = get_profiler("ncu").wrap(["./app"], P, {"set": "full", "kernel_regex": "gemm"})
    assert w.argv == ["ncu", "--csv", "--page", "details", "--set", "full", "-k", "regex:gemm",
                      "--log-file", f"{P}/ncu_details.csv", "./app"]
    (tmp_path / "ncu_details.csv").write_text("")
    assert get_profiler("ncu").trace_inputs(tmp_path, {}) == [tmp_path / "ncu_details.csv"]
    n = get_profiler("nsys").wrap(["./app"], P, {})
    assert n.argv == ["nsys", "profile", "--trace", "cuda,nvtx,osrt", "-o", f"{P}/nsys_%h_%p",
                      "--export", "sqlite", "--force-overwrite", "true", "./app"]


def test_torch_wrapper_command_lines():
    prof = get_profiler("torch")
    w = prof.wrap(["python3", "train.py", "--lr", "1"], P, {"wait": 2, "active": 5,
                                                           "record_shapes": True})
    assert w.argv == ["python3", f"{P}/torch_profile.py", "--out", P, "--wait", "2",
                      "--active", "5", "--record-shapes", "--", "train.py", "--lr", "1"]
    assert b"import torch" in w.files["torch_profile.py"]
    assert prof.wrap(["train.py"], P, {"python": "/opt/py/bin/python"}).argv[0] == \
        "/opt/py/bin/python"
    assert prof.wrap(["python", "-m", "pkg.train"], P, {}).argv[-3:] == ["--", "-m", "pkg.train"]
    with pytest.raises(ProfilerError, match="Python programs"):
        prof.wrap(["./app"], P, {})


def test_torch_profile_is_standalone_without_torch(tmp_path):
    """Copied alone to a folder, run by a Python that cannot import hipscope (-I) and has
    no torch: argument errors and the missing torch are reported cleanly."""
    from hipscope.launchers import torch_profile

    script = tmp_path / "torch_profile.py"
    shutil.copy(torch_profile.__file__, script)
    (tmp_path / "prog.py").write_text("print('never')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run([sys.executable, "-I", str(script), "--out", str(tmp_path / "o"), "--",
                        str(tmp_path / "prog.py")], capture_output=True, text=True,
                       timeout=60, cwd=tmp_path, env=env)
    has_torch = subprocess.run([sys.executable, "-I", "-c", "import torch"],
                               capture_output=True, timeout=60).returncode == 0
    if has_torch:
        pytest.skip("torch is installed: covered by test_torch_profile_records_a_trace")
    assert p.returncode == 3 and "torch is not importable" in p.stderr and "never" not in p.stdout
    bad = subprocess.run([sys.executable, "-I", str(script), "--wait", "x", "--", "p.py"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert bad.returncode == 2 and "invalid int value" in bad.stderr


def test_torch_profile_records_a_trace(tmp_path):
    torch = pytest.importorskip("torch", reason="torch is not installed in this venv")
    prog = tmp_path / "train.py"
    prog.write_text("import torch\nm = torch.nn.Linear(4, 4)\n"
                    "opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
                    "for _ in range(6):\n"
                    "    opt.zero_grad(); m(torch.randn(8, 4)).sum().backward(); opt.step()\n"
                    "print('trained')\n")
    from hipscope.launchers import torch_profile
    p = subprocess.run([sys.executable, torch_profile.__file__, "--out", str(tmp_path / "o"),
                        "--wait", "1", "--warmup", "1", "--active", "2", "--", str(prog)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    traces = list((tmp_path / "o").glob("*.pt.trace.json"))
    assert len(traces) == 1 and "trained" in p.stdout
    from hipscope.parsers import open_trace
    assert open_trace(traces).meta["format"] == "kineto"
    del torch


# --------------------------------------------------------------------------- detection

# The shape of the detection script's output on a ROCm 6.2 node (rocminfo lines as
# rocminfo prints them) and on an NVIDIA node (nvidia-smi --query-gpu csv).
DETECT_ROCM = """@@hostname
mi300-node-07
@@uname
Linux 5.15.0-119-generic x86_64
@@os
PRETTY_NAME="Ubuntu 22.04.4 LTS"
@@which rocprofv3 /opt/rocm-6.2.4/bin/rocprofv3
@@which rocprof /opt/rocm-6.2.4/bin/rocprof
@@which rocminfo /opt/rocm-6.2.4/bin/rocminfo
@@which amd-smi /opt/rocm-6.2.4/bin/amd-smi
@@which python3 /usr/bin/python3
@@rocm_info_version
6.2.4-120
@@amdgpu_version
6.8.5
@@v_rocprofv3
rocprofv3 version: 0.5.0
@@v_hipcc
HIP version: 6.2.41134-65d174c3e
AMD clang version 18.0.0git
@@rocminfo
  Name:                    AMD EPYC 9654 96-Core Processor
  Marketing Name:          AMD EPYC 9654 96-Core Processor
  Device Type:             CPU
  Name:                    gfx942
  Marketing Name:          AMD Instinct MI300X
  Device Type:             GPU
  Name:                    gfx942
  Marketing Name:          AMD Instinct MI300X
  Device Type:             GPU
@@env
HIP_VISIBLE_DEVICES=0,1
HOME=/home/u
HSA_XNACK=1
API_TOKEN=secret
"""

DETECT_NVIDIA = """@@hostname
h200-01
@@which ncu /usr/local/cuda/bin/ncu
@@which nvidia-smi /usr/bin/nvidia-smi
@@v_ncu
NVIDIA (R) Nsight Compute Command Line Profiler
Copyright (c) 2018-2025 NVIDIA Corporation
Version 2025.3.0.0 (build 36273991) (public-release)
@@nvidia_gpus
0, NVIDIA H200, 570.133.20, 143771
1, NVIDIA H200, 570.133.20, 143771
@@nvidia_cuda
CUDA Version                              : 12.8
@@env
"""


def test_parse_detect_rocm():
    info = parse_detect_output(DETECT_ROCM)
    assert info["host"] == "mi300-node-07" and info["os"] == "Ubuntu 22.04.4 LTS"
    assert [(g["vendor"], g["index"], g["name"], g["arch"]) for g in info["gpus"]] == \
        [("AMD", 0, "AMD Instinct MI300X", "gfx942"), ("AMD", 1, "AMD Instinct MI300X", "gfx942")]
    assert info["versions"]["rocm"] == "6.2.4-120" and info["versions"]["driver"] == "6.8.5"
    assert info["versions"]["hip"] == "6.2.41134-65d174c3e"
    assert info["profilers"]["rocprofv3"]["version"] == "0.5.0"
    assert set(info["profilers"]) == {"rocprofv3", "rocprof"}
    assert info["env"] == {"HIP_VISIBLE_DEVICES": "0,1", "HSA_XNACK": "1"}   # knobs only
    assert "AMD 1: AMD Instinct MI300X (gfx942)" in format_detect(info)


def test_parse_detect_nvidia():
    info = parse_detect_output(DETECT_NVIDIA)
    assert [(g["name"], g["memory_mib"]) for g in info["gpus"]] == [("NVIDIA H200", 143771.0)] * 2
    assert info["versions"]["cuda"] == "12.8" and info["versions"]["driver"] == "570.133.20"
    assert info["profilers"]["ncu"]["version"] == "2025.3.0.0"
    text = format_detect(info)
    assert "ncu 2025.3.0.0" in text and "Telemetry: nvidia-smi" in text


# --------------------------------------------------------------------------- spec

def test_targets_and_env_parsing():
    assert parse_target("local").kind == "local"
    t = parse_target("alice@gpu-box:2222")
    assert (t.kind, t.user, t.host, t.port) == ("ssh", "alice", "gpu-box", 2222)
    s = parse_target("slurm:login1")
    assert (s.kind, s.host, s.label()) == ("slurm", "login1", "slurm:login1")
    assert parse_target("slurm").host is None
    with pytest.raises(ValueError):
        parse_target("a b")
    assert parse_env_changes(["A=1", "B=", "-C", "D=x=y"]) == \
        {"A": "1", "B": "", "C": None, "D": "x=y"}
    with pytest.raises(ValueError, match="K=V"):
        parse_env_changes(["nope"])


def test_spec_json_round_trip():
    spec = RunSpec(["./a", "b"], cwd="/w", env={"X": "1", "Y": None},
                   profiler=ProfilerSpec("rocprofv3", {"pmc": ["SQ_WAVES"]}),
                   target=parse_target("slurm:login1"), telemetry_interval=0.5, name="n")
    again = RunSpec.from_json(json.loads(json.dumps(spec.to_json())))
    assert again == spec
    with pytest.raises(ValueError, match="non-empty"):
        RunSpec([])
    with pytest.raises(ValueError, match="SSH target needs a host"):
        Target("ssh")


def test_torch_profile_steps_on_optimizer_only_when_a_schedule_is_asked():
    """A program without an optimizer must still yield a trace: without schedule
    options the wrapper records the whole run (found on the H200: a plain script got
    no trace under the old optimizer-step default)."""
    from hipscope.launchers.torch_profile import parse_args

    args, prog = parse_args(["--out", "o", "--", "prog.py", "-x"])
    assert args.step_on == "none" and prog == ["prog.py", "-x"]
    args, _ = parse_args(["--active", "5", "--", "prog.py"])
    assert args.step_on == "optimizer" and (args.wait, args.warmup, args.active) == (1, 1, 5)
    args, _ = parse_args(["--step-on", "none", "--wait", "2", "--", "prog.py"])
    assert args.step_on == "none"
