"""Issue 12 s.1: a trace from a hipscope run folder carries the run's spec
(``meta["run"]``) however it is opened, and the tuner's knob rules use the run's env.

The run folders are real: ``hipscope run --profiler torch --env ...`` with a stand-in
python that writes the Kineto trace of 8 streams serialised onto one connection
(tests/data/runs). Expected values come from the run folder's JSON files.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hipscope.analysis.diff import provenance
from hipscope.parsers import TraceFormatError, open_trace
from tests.data.runs import make_streams_run

CONN = "CUDA_DEVICE_MAX_CONNECTIONS"


@pytest.fixture(scope="module")
def run1(tmp_path_factory) -> Path:
    """A run started with --env CUDA_DEVICE_MAX_CONNECTIONS=1 (and a secret)."""
    return make_streams_run(tmp_path_factory.mktemp("data"), f"{CONN}=1", "HF_TOKEN=abc")


def _trace_file(folder: Path) -> Path:
    (f,) = folder.joinpath("prof").glob("*.pt.trace.json")
    return f


def _raw_streams(folder: Path) -> int:
    doc = json.loads(_trace_file(folder).read_text())
    return len({e["args"]["stream"] for e in doc["traceEvents"] if e.get("cat") == "kernel"})


def hipscope(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hipscope", *args], capture_output=True,
                          text=True, timeout=120, check=check)


def _hw_queues(*args: str) -> dict:
    out = json.loads(hipscope("tune", "--propose", *args, "--json", "--no-probe").stdout)
    return next(p for p in out if p["id"] == "hw-queues")


@pytest.mark.parametrize("how", ["folder", "prof", "file"])
def test_tune_raises_the_connections_from_the_runs_value(run1, how):
    """The recorded bug: run with CUDA_DEVICE_MAX_CONNECTIONS=1, 8 streams -> "Raise
    from 8 to 9"; right: "from 1 to at least 9", however the trace is opened."""
    path = {"folder": run1, "prof": run1 / "prof", "file": _trace_file(run1)}[how]
    spec = json.loads((run1 / "spec.json").read_text())
    assert spec["env"][CONN] == "1"
    streams = _raw_streams(run1)                      # 8 worker streams + the default one
    assert streams == 9
    p = _hw_queues(str(path))
    assert p["title"].startswith(f"Raise {CONN} from 1 to at least {streams}:")
    assert "from the run's environment" in p["title"]
    assert p["evidence"]["figures"][CONN] == 1
    assert p["evidence"]["figures"][f"{CONN}_from"] == f"the environment of run {run1.name}"
    assert p["experiment"]["env"] == {CONN: str(streams)}


def test_without_a_run_the_default_is_used_and_said(run1, tmp_path):
    bare = shutil.copy(_trace_file(run1), tmp_path / "streams.pt.trace.json")
    p = _hw_queues(str(bare))
    assert p["title"].startswith(f"Raise {CONN} from 8 to at least 9:")
    assert p["evidence"]["figures"][f"{CONN}_from"] == "the documented default"


def test_tune_env_states_the_settings_of_a_trace_hipscope_did_not_launch(run1, tmp_path):
    bare = shutil.copy(_trace_file(run1), tmp_path / "streams.pt.trace.json")
    p = _hw_queues(str(bare), "--env", f"{CONN}=1", "--command", "python3 streams.py")
    assert p["title"].startswith(f"Raise {CONN} from 1 to at least 9:")
    assert p["evidence"]["figures"][f"{CONN}_from"] == "stated by the user"
    # stated values win over the run folder's
    p = _hw_queues(str(run1), "--env", f"{CONN}=4")
    assert p["title"].startswith(f"Raise {CONN} from 4 to at least 9:")
    bad = hipscope("tune", "--propose", str(bare), "--env", "NOPE", check=False)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "NOPE" in bad.stderr


def test_report_shows_the_run(run1):
    spec = json.loads((run1 / "spec.json").read_text())
    prov = json.loads((run1 / "provenance.json").read_text())
    rep = json.loads(hipscope("report", str(run1), "--json").stdout)
    run = rep["run"]
    assert run["id"] == run1.name and run["folder"] == str(run1)
    assert run["command"] == spec["command"] == ["streams.py"]
    assert run["cwd"] == spec["cwd"] and run["target"] == "local"
    assert run["profiler"] == spec["profiler"] and run["profiler"]["name"] == "torch"
    assert run["env"] == spec["env"] == {CONN: "1", "HF_TOKEN": "<redacted>"}
    assert run["versions"] == prov["versions"] and run["gpus"] == prov["gpus"]
    assert run["state"] == "finished"
    text = hipscope("report", str(_trace_file(run1))).stdout
    assert f"Run:      {run1.name}  (finished)" in text
    assert f"env:     {CONN}=1 HF_TOKEN=<redacted>" in text
    assert "abc" not in text                              # the secret never shows


def test_a_cached_trace_still_carries_the_current_run(run1, tmp_path):
    """The run's files are not members of the trace: a cache hit gets them fresh."""
    folder = Path(shutil.copytree(run1, tmp_path / run1.name))
    first = open_trace(folder, use_cache=True)
    assert first.meta["run"]["env"][CONN] == "1"
    spec = json.loads((folder / "spec.json").read_text())
    spec["env"][CONN] = "2"
    (folder / "spec.json").write_text(json.dumps(spec))
    again = open_trace(_trace_file(folder), use_cache=True)
    assert again.meta.get("cached")
    assert again.meta["run"]["env"][CONN] == "2"


def test_a_moved_run_folder_still_opens_as_a_folder(run1, tmp_path):
    moved = Path(shutil.copytree(run1, tmp_path / "elsewhere" / run1.name))
    t = open_trace(moved)
    assert t.meta["sources"] == [str(_trace_file(moved))]
    assert t.meta["run"]["folder"] == str(moved.resolve())


def test_a_run_without_a_trace_is_one_sentence(tmp_path):
    folder = make_streams_run(tmp_path / "data", profiler="none")
    with pytest.raises(TraceFormatError) as err:
        open_trace(folder)
    msg = str(err.value)
    assert msg.startswith(f"{folder}: expected a run folder whose run recorded a trace")
    assert "profiler none" in msg and msg.count(".") <= 3


def test_a_damaged_spec_is_a_warning_not_a_failure(run1, tmp_path):
    folder = Path(shutil.copytree(run1, tmp_path / run1.name))
    (folder / "spec.json").write_text("{not json")
    t = open_trace(_trace_file(folder))
    assert "run" not in t.meta
    assert any("is damaged" in w and "spec.json" in w for w in t.warnings)


def test_compare_provenance_lists_the_run(run1):
    prov = provenance(open_trace(run1))
    assert prov["run.id"] == run1.name and prov["run.command"] == "streams.py"
    assert prov[f"run.env.{CONN}"] == "1" and prov["run.profiler"] == "torch"


def test_a_damaged_status_of_an_opened_run_folder_is_one_sentence(run1, tmp_path):
    folder = Path(shutil.copytree(run1, tmp_path / run1.name))
    (folder / "status.json").write_text("[1, 2")
    with pytest.raises(TraceFormatError) as err:
        open_trace(folder)
    assert str(err.value).startswith(f"{folder / 'status.json'}: expected a run's "
                                     "status.json, found status.json cannot be read")
