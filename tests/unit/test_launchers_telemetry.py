"""Telemetry: parsers on recordings of nvidia-smi / amd-smi / rocm-smi output
(tests/data/telemetry, see its README), the CSV round trip, and the poller end to end
with a stand-in ``nvidia-smi`` that prints the recording (no GPU on this machine)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from hipscope.launchers import RunSpec, make_launcher
from hipscope.launchers.base import RunState
from hipscope.launchers.hosts import LocalHost
from hipscope.launchers.telemetry import (
    COMMANDS,
    TelemetryParseError,
    TelemetryPoller,
    find_tools,
    parse_amd_smi,
    parse_nvidia_smi,
    parse_rocm_smi,
    read_samples,
    write_samples,
)
from tests.unit.launcher_fixtures import DATA, Recorder, wait_until

REC = DATA / "telemetry"
NOW = 1_700_000_000.0


def test_nvidia_smi_h200():
    s = parse_nvidia_smi((REC / "nvidia-smi_query_8xH200.csv").read_text(), NOW)
    assert [x.gpu for x in s] == list(range(8))
    g0 = s[0]
    assert (g0.util_pct, g0.mem_used_mib, g0.mem_total_mib, g0.power_w, g0.temp_c,
            g0.sclk_mhz) == (87, 71234, 143771, 612.45, 58, 1980)
    assert g0.tool_time == "2025/03/14 10:21:07.123" and g0.time == NOW
    assert g0.source == "nvidia-smi"


def test_nvidia_smi_not_available_cells_are_none():
    s = parse_nvidia_smi((REC / "nvidia-smi_query_not_supported.csv").read_text(), NOW)
    assert s[0].power_w is None and s[0].util_pct == 3
    assert (s[1].util_pct, s[1].power_w, s[1].temp_c, s[1].sclk_mhz) == (None,) * 4


def test_nvidia_smi_wrong_shape_is_one_sentence():
    with pytest.raises(TelemetryParseError, match="line 1: expected 8"):
        parse_nvidia_smi("2025/03/14 10:21:07.123, 0, 87\n", NOW)


def test_amd_smi_rocm62_list_layout():
    s = parse_amd_smi((REC / "amd-smi_metric_rocm6.2_mi300x.json").read_text(), NOW)
    assert [x.gpu for x in s] == [0, 1]
    g0 = s[0]
    assert (g0.util_pct, g0.mem_used_mib, g0.mem_total_mib, g0.power_w, g0.temp_c,
            g0.sclk_mhz) == (97, 150318, 196592, 689, 71, 2100)   # hotspot: no edge sensor
    assert s[1].sclk_mhz == 132 and s[1].source == "amd-smi"


def test_amd_smi_rocm70_gpu_data_layout_and_na_gpu():
    s = parse_amd_smi((REC / "amd-smi_metric_rocm7.0_mi355x.json").read_text(), NOW)
    assert (s[0].util_pct, s[0].power_w, s[0].temp_c, s[0].mem_total_mib) == \
        (100, 1239, 78, 294896)
    assert s[1].gpu == 1 and (s[1].util_pct, s[1].power_w, s[1].mem_used_mib) == (None,) * 3


def test_rocm_smi_mi250x_and_mi300x():
    s = parse_rocm_smi((REC / "rocm-smi_json_mi250x.json").read_text(), NOW)
    assert [x.gpu for x in s] == [0, 1]                  # "system" is not a GPU
    g0 = s[0]
    assert (g0.util_pct, g0.power_w, g0.temp_c, g0.sclk_mhz) == (94, 412.0, 68.0, 1700)
    assert g0.mem_total_mib == pytest.approx(68702699520 / 2**20)
    assert g0.mem_used_mib == pytest.approx(43285413888 / 2**20)
    assert s[1].power_w is None and s[1].sclk_mhz == 800
    m = parse_rocm_smi((REC / "rocm-smi_json_mi300x.json").read_text(), NOW)[0]
    assert (m.power_w, m.temp_c, m.sclk_mhz) == (402.0, 57.0, 2100)


@pytest.mark.parametrize("fn", [parse_amd_smi, parse_rocm_smi])
def test_json_tools_reject_non_json(fn):
    with pytest.raises(TelemetryParseError, match="not JSON"):
        fn("ERROR: no GPU found\n", NOW)


def test_csv_round_trip(tmp_path):
    s = parse_nvidia_smi((REC / "nvidia-smi_query_not_supported.csv").read_text(), NOW)
    out = tmp_path / "telemetry.csv"
    write_samples(out, s[:1])
    write_samples(out, s[1:])          # appends without a second header
    assert out.read_text().splitlines()[0].startswith("time,gpu,util_pct")
    assert read_samples(out) == s


@pytest.fixture
def fake_nvidia_smi(tmp_path, monkeypatch):
    """STAND-IN nvidia-smi (no NVIDIA GPU here): prints the H200 recording when called
    with exactly hipscope's query, fails otherwise."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "nvidia-smi"
    expected = " ".join(COMMANDS["nvidia-smi"][1:])
    exe.write_text("#!/bin/sh\n"
                   f"[ \"$*\" = '{expected}' ] || {{ echo unexpected args: \"$*\" >&2; exit 9; }}\n"
                   f"cat {REC / 'nvidia-smi_query_8xH200.csv'}\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    return exe


def test_poller_writes_samples_and_reports(tmp_path, fake_nvidia_smi):
    host = LocalHost()
    assert find_tools(host) == ["nvidia-smi"]
    got, msgs = [], []
    poller = TelemetryPoller(host, 0.05, tmp_path / "t.csv", on_samples=got.append,
                             on_message=msgs.append)
    poller.start()
    try:
        wait_until(lambda: len(got) >= 3, 20, "three polls")
    finally:
        poller.stop()
    rows = read_samples(tmp_path / "t.csv")
    assert len(rows) == poller.count and len(rows) % 8 == 0 and len(rows) >= 24
    assert msgs[0].startswith("telemetry from nvidia-smi")


def test_run_with_telemetry_saves_telemetry_csv(tmp_path, monkeypatch, fake_nvidia_smi):
    monkeypatch.setenv("HIPSCOPE_DATA_DIR", str(tmp_path / "data"))
    gate = tmp_path / "gate"
    code = f"import os, time\nwhile not os.path.exists({str(gate)!r}): time.sleep(0.02)\n"
    rec = Recorder()
    launcher = make_launcher(RunSpec([sys.executable, "-c", code], telemetry_interval=0.05),
                             observers=[rec])
    launcher.start()
    try:
        rec.wait_for(lambda r: sum(e.kind == "telemetry" for e in r.events) >= 2, 30,
                     "telemetry events")
    finally:
        gate.touch()
    res = launcher.wait(30)
    assert res.state == RunState.FINISHED
    samples = read_samples(res.folder / "telemetry.csv")
    assert len(samples) >= 16 and {s.gpu for s in samples} == set(range(8))
    ev = next(e for e in rec.events if e.kind == "telemetry")
    assert len(ev.samples) == 8 and ev.samples[0].mem_total_mib == 143771
    assert json.loads((res.folder / "spec.json").read_text())["telemetry_interval"] == 0.05
