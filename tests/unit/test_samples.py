"""Run telemetry attached to a run's trace as the ``samples`` table (and drawn)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from hipscope.analysis import lod
from hipscope.launchers.samples import attach_telemetry, clock_pair, run_folder_of
from hipscope.model import Trace, merge_traces
from hipscope.parsers import cache, open_trace
from hipscope.parsers._validate import validate

from ..conftest import DATA, SAMPLES

PROOF = DATA / "gpu" / "proof"
KINETO = SAMPLES / "kineto" / "nvidia-h200-generated" / "h200_torch_kineto_trace.json.gz"


def make_run(tmp_path: Path, trace_file: Path, shift_to_ns: int | None = None,
             provenance: dict | None = None) -> tuple[Path, Path]:
    """A run folder: spec.json, prof/<trace>, the real proof telemetry.csv (its times
    shifted so that the first sample lies at ``shift_to_ns`` epoch ns, when given)."""
    run = tmp_path / "20261129-190335-torch_prog-ab12"
    (run / "prof").mkdir(parents=True)
    (run / "spec.json").write_text(json.dumps({"command": ["python3", "torch_prog.py"]}))
    dest = run / "prof" / trace_file.name
    shutil.copy(trace_file, dest)
    with open(PROOF / "telemetry.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    if shift_to_ns is not None:
        d = shift_to_ns / 1e9 - float(rows[0]["time"])
        for r in rows:
            r["time"] = repr(float(r["time"]) + d)
    with open(run / "telemetry.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    if provenance is not None:
        (run / "provenance.json").write_text(json.dumps(provenance))
    return run, dest


def test_attach_kineto_sample(tmp_path):
    base = open_trace(KINETO)
    t0, t1 = base.time_range()
    run, trace_file = make_run(tmp_path, KINETO, shift_to_ns=t0 - 2_000_000_000)
    assert run_folder_of([trace_file]) == run.resolve()
    tr = attach_telemetry(open_trace(trace_file), run)
    validate(tr)
    s = tr.samples
    n_rows = 51
    assert len(s) == 5 * n_rows                       # every sample has 5 values
    series = set(s.codes("series")[1])
    assert series == {"Power (W)", "Utilisation (%)", "Memory used (MiB)",
                      "Temperature (C)", "Clock (MHz)"}
    t = s.numpy("time")
    assert t.dtype == np.int64
    assert abs(int(t.min()) - (t0 - 2_000_000_000)) < 1_000     # ns, not seconds
    assert int(t.max()) > t1                                    # the run outlasts the trace
    assert set(s.numpy("device").tolist()) == {0}               # GPU 0 is the trace's device
    power = s.numpy("value")[np.array(s.column("series").to_pylist()) == "Power (W)"]
    assert power[0] == pytest.approx(77.51)
    assert not tr.warnings
    # the samples survive merging, and the cache round trip of a trace that has them
    assert len(merge_traces([tr, open_trace(KINETO)]).samples) == len(s)
    cache.store("k", tr)
    assert cache.load("k").samples.data.equals(s.data)


def test_real_run_folder_lines_up(tmp_path):
    """The proof telemetry and the proof trace come from the same run: no shift."""
    trace = PROOF / "torchrun_trace.json.gz"
    run, trace_file = make_run(tmp_path, trace)
    tr = attach_telemetry(open_trace(trace_file), run)
    t0, t1 = tr.time_range()
    t = tr.samples.numpy("time")
    assert ((t >= t0) & (t <= t1)).any() and not tr.warnings


def test_gpu_without_device_row_named_in_series(tmp_path):
    base = open_trace(KINETO)
    run, trace_file = make_run(tmp_path, KINETO, shift_to_ns=base.time_range()[0])
    text = (run / "telemetry.csv").read_text().splitlines()
    text += [ln.replace(",0,", ",3,", 1) for ln in text[1:3]]      # a GPU the trace lacks
    (run / "telemetry.csv").write_text("\n".join(text) + "\n")
    tr = validate(attach_telemetry(open_trace(trace_file), run))
    names = tr.samples.column("series").to_pylist()
    dev = tr.samples.column("device").to_pylist()
    gpu3 = [n for n, d in zip(names, dev) if d is None]
    assert gpu3 and all(n.startswith("GPU 3 ") for n in gpu3)
    assert "GPU 3 Power (W)" in gpu3
    m = lod.build_model(tr)
    labels = {r.label for r in m.rows}
    assert "GPU 3 Power (W)" in labels and "Power (W)" in labels


def _boottime(trace: Trace) -> Trace:
    """The same trace on a CLOCK_BOOTTIME clock that started 1000 s before epoch t0."""
    from dataclasses import replace

    from hipscope.model.table import build_table

    boot0 = 1_000_000_000_000
    t0 = trace.time_range()[0]
    shifted = {}
    for name in ("kernels", "api", "copies", "markers"):
        tab = getattr(trace, name)
        cols = {c: tab.column(c) for c in tab.data.column_names}
        for c in ("start", "end"):
            if c in cols:
                cols[c] = tab.numpy(c) - t0 + boot0
        shifted[name] = build_table(name, cols, n=len(tab))
    return replace(trace, **shifted, meta={**trace.meta, "clock": "CLOCK_BOOTTIME"})


def test_boottime_trace_uses_recorded_offset(tmp_path):
    epoch = open_trace(KINETO)
    t0 = epoch.time_range()[0]
    boot = _boottime(epoch)
    offset = t0 - 1_000_000_000_000                   # epoch - boottime at run start
    run, _ = make_run(tmp_path, KINETO, shift_to_ns=t0,
                      provenance={"clocks": {"realtime_ns": offset + 5, "boottime_ns": 5}})
    tr = validate(attach_telemetry(boot, run))
    assert not tr.warnings
    t = tr.samples.numpy("time")
    assert abs(int(t.min()) - boot.time_range()[0]) < 1_000      # on the trace's clock


def test_boottime_without_offset_warns(tmp_path):
    boot = _boottime(open_trace(KINETO))
    run, _ = make_run(tmp_path, KINETO, provenance={"host": "x"})   # no 'clocks'
    tr = attach_telemetry(boot, run)
    assert len(tr.samples) == 0
    assert any("CLOCK_BOOTTIME" in w for w in tr.warnings)
    other = boot.with_meta(clock="HSA system clock")
    tr = attach_telemetry(other, run)
    assert len(tr.samples) == 0 and any("HSA system clock" in w for w in tr.warnings)


def test_lod_telemetry_rows(tmp_path):
    base = open_trace(KINETO)
    run, trace_file = make_run(tmp_path, KINETO, shift_to_ns=base.time_range()[0] - 10**9)
    tr = attach_telemetry(open_trace(trace_file), run)
    m = lod.build_model(tr)
    (g,) = [i for i, r in enumerate(m.rows) if r.key == "telemetry"]
    assert m.rows[g].label == "Telemetry" and m.rows[g].kind == "group"
    kids = [m.rows[c] for c in m.rows[g].children]
    assert [r.label for r in kids][:2] == ["Power (W)", "Utilisation (%)"]
    assert all(r.kind == "counter" and r.table == "samples" for r in kids)
    power = kids[0].events
    assert len(power) == 51 and np.all(power.end[:-1] == power.start[1:])   # steps
    # colour keys (every mode) and the per-pixel values work on these rows
    for mode in ("name", "duration", "queue_delay", "delta"):
        lod.apply_color_keys(m, lod.color_keys(tr, m, lod.color_scale(tr, m, mode)))
    edges = lod.pixel_edges(m.t_min, m.t_max, 200)
    lo, hi = lod.window(power, m.t_min, m.t_max)
    vals = lod.counter_pixels(power, lo, hi, edges, lod.coverage(power, edges))
    assert np.isfinite(vals).all() and vals.max() < 200     # watts, all across the trace


def test_no_run_folder_no_change(tmp_path):
    assert run_folder_of([KINETO]) is None
    tr = open_trace(KINETO)
    assert attach_telemetry(tr, tmp_path) is tr


def test_clock_pair_records_both():
    c = clock_pair()
    assert c["realtime_ns"] > 1_600_000_000 * 10**9
    assert 0 < c["boottime_ns"] < c["realtime_ns"]
