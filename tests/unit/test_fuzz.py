"""Fuzz every reader: whatever bytes it is given, only TraceFormatError escapes
(or it returns a trace that passes the schema check), and nothing hangs.

Inputs are real samples cut short, with bytes flipped, with garbage spliced in, and
plain random bytes; every reader is also fed every other format's files.
"""

from __future__ import annotations

import shutil
import signal
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hipscope.parsers import TraceFormatError
from hipscope.parsers._validate import validate
from hipscope.parsers.base import get_reader, readers
from tests.conftest import DATA, SAMPLES

# seed case id -> (reader, real file to mutate; it is written under its own name)
SEEDS = {
    "rocprofv3-csv": ("rocprofv3-csv",
                      SAMPLES / "rocprofv3-csv/sdk-docs-2025-08-rocm7.0/kernel_trace.csv"),
    "rocprofv3-json": ("rocprofv3-json",
                       SAMPLES / "rocprofv3-json/tracelens-908-mi350/908_results.json.gz"),
    "rocpd": ("rocpd", DATA / "rocpd/4242_results.db"),
    "pftrace": ("pftrace", DATA / "pftrace/4242_results.pftrace"),
    "legacy-csv": ("legacy-rocprof",
                   SAMPLES / "legacy-rocprof/spatter-kernel-stats/results.csv"),
    "legacy-json": ("legacy-rocprof", SAMPLES / "legacy-rocprof/rocm-blogs-hip-trace/results.json"),
    "legacy-db": ("legacy-rocprof", SAMPLES / "legacy-rocprof/rocm-blogs-hip-trace/results.db"),
    "kineto": ("kineto",
               SAMPLES / "kineto/nvidia-h200-generated/h200_torch_kineto_trace.json.gz"),
    "rocprof-compute": ("rocprof-compute",
                        SAMPLES / "rocprof-compute/vcopy-MI200-rocprofv1/pmc_perf.csv"),
    "ncu-csv": ("ncu-csv", SAMPLES / "ncu-csv/h200-generated/ncu_raw_metrics.csv"),
    "jax": ("jax", DATA / "jax/gpu/gpu2.trace.json.gz"),
    "xplane": ("xplane", DATA / "jax/cpu/vm.xplane.pb"),
}
MAX_SEED = 256 * 1024   # fuzz the head of big seeds: mutations there exercise the parser


def reader_names() -> list[str]:
    return sorted(r.name for r in readers())


@contextmanager
def time_limit(seconds: int):
    def boom(*_):
        raise TimeoutError(f"reader ran longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def check(reader_name: str, path: Path) -> None:
    r = get_reader(reader_name)
    with time_limit(30):
        try:
            trace = r.read(path, lambda f: None, lambda: False)
        except TraceFormatError as exc:
            msg = str(exc)
            assert str(path) in msg, f"error does not name the file: {msg}"
            assert "\n" not in msg.strip() and "Traceback" not in msg
            return
        validate(trace)
        try:
            r.sniff(path)
        except (OSError, ValueError, EOFError):
            pass


def seed_bytes(name: str) -> bytes:
    p = SEEDS[name][1]
    if not p.exists():
        pytest.skip(f"seed {p} not generated")
    raw = p.read_bytes()
    if p.suffix == ".gz":
        return raw   # gzip container: mutations exercise the tolerant un-gzip path
    return raw[:MAX_SEED]


def write_case(tmp: Path, name: str, data: bytes) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    dst = tmp / SEEDS[name][1].name
    dst.write_bytes(data)
    return dst


FUZZ = settings(max_examples=25, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large])


def test_every_reader_has_a_seed():
    assert set(reader_names()) <= {r for r, _ in SEEDS.values()}, "add a fuzz seed"


@pytest.mark.parametrize("name", sorted(SEEDS))
@FUZZ
@given(data=st.data())
def test_mutated_samples(name, data, tmp_path_factory):
    raw = seed_bytes(name)
    kind = data.draw(st.sampled_from(["truncate", "flip", "splice", "random"]))
    if kind == "truncate":
        cut = data.draw(st.integers(0, len(raw)))
        out = raw[:cut]
    elif kind == "flip":
        out = bytearray(raw)
        for _ in range(data.draw(st.integers(1, 8))):
            i = data.draw(st.integers(0, max(0, len(out) - 1)))
            if out:
                out[i] = data.draw(st.integers(0, 255))
        out = bytes(out)
    elif kind == "splice":
        i = data.draw(st.integers(0, len(raw)))
        out = raw[:i] + data.draw(st.binary(min_size=1, max_size=64)) + raw[i:]
    else:
        out = data.draw(st.binary(max_size=2048))
    check(SEEDS[name][0], write_case(tmp_path_factory.mktemp(name), name, out))


@pytest.mark.parametrize("name", sorted(SEEDS))
@pytest.mark.parametrize("other", sorted(SEEDS))
def test_wrong_format_files(name, other, tmp_path):
    reader, seed = SEEDS[name]
    other_reader, other_seed = SEEDS[other]
    if reader == other_reader:
        pytest.skip("same format")
    dst = tmp_path / seed.name
    shutil.copyfile(other_seed, dst)
    check(reader, dst)


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_empty_file(name, tmp_path):
    p = write_case(tmp_path, name, b"")
    with pytest.raises(TraceFormatError) as exc:
        get_reader(SEEDS[name][0]).read(p, lambda f: None, lambda: False)
    assert str(p) in str(exc.value)
