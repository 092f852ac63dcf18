"""Fuzz every reader: whatever bytes it is given, only TraceFormatError escapes (or
it returns a trace that passes the schema check), ``open_trace`` sniffs and reads it
the same way, ``hipscope report --json`` exits 0 with JSON or 2 with one sentence,
and nothing hangs (tests/fuzz/check.py).

This is the short derandomised run (Hypothesis profile ``ci``) over the campaign's
seeds and mutations (tests/fuzz/); ``make fuzz`` runs the long randomised campaign.
Every failure the campaign saved under tests/data/fuzz-regressions is replayed here.
"""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hipscope.parsers import TraceFormatError
from hipscope.parsers import base as parsers_base
from hipscope.parsers.base import get_reader, readers
from tests.conftest import DATA, SAMPLES
from tests.fuzz import regressions
from tests.fuzz.check import checks_with_limit, run_checks
from tests.fuzz.mutations import mutate
from tests.fuzz.seeds import all_seeds, by_reader, seed_bytes

CASE_SECONDS = 60

# one file per reader for the wrong-format and empty-file tests
FORMAT_FILES = {
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
    "nsys": ("nsys", DATA / "nsys/nsys_2025_schema.sqlite"),
    "jax": ("jax", DATA / "jax/gpu/gpu2.trace.json.gz"),
    "xplane": ("xplane", DATA / "jax/cpu/vm.xplane.pb"),
}


def reader_names() -> list[str]:
    return sorted(r.name for r in readers())


def test_every_reader_has_seeds():
    """A new reader gets fuzzed: some real sample or fixture must sniff as it."""
    assert set(reader_names()) <= set(by_reader()), "add a sample or fixture for the reader"
    assert set(reader_names()) <= {r for r, _ in FORMAT_FILES.values()}


@pytest.mark.parametrize("reader", reader_names())
@given(data=st.data())
def test_mutated_seeds(reader, data, tmp_path_factory):
    """Mutations of the reader's seeds (derandomised: the same cases every run), read
    with the reader forced, directly and through the CLI's ``--reader``. Sniffing the
    mutated files (``open_trace``, plain ``hipscope report``) is the campaign's part;
    what it finds comes back here as saved regressions."""
    seed = data.draw(st.sampled_from(by_reader()[reader]))
    out, what = mutate(data.draw, seed_bytes(seed))
    target = seed.materialise(tmp_path_factory.mktemp(reader), out)
    failures = checks_with_limit(target, seed.reader, CASE_SECONDS, sniff=False)
    assert not failures, f"{seed.id}, {what}: {json.dumps(failures, indent=1)}"


@pytest.mark.parametrize("case", regressions.saved(),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_saved_fuzz_regressions(case, tmp_path):
    """Every case the campaign saved still keeps the contract."""
    seed, data = regressions.load(case)
    assert seed.source.is_dir(), f"{case}: its seed folder {seed.source} is gone"
    target = seed.materialise(tmp_path, data)
    failures = checks_with_limit(target, seed.reader, CASE_SECONDS)
    assert not failures, f"{case}: {json.dumps(failures, indent=1)}"


def test_seed_replay_writes_the_bytes_where_the_seed_was(tmp_path):
    """A saved case replays inside a copy of its seed's folder, under the seed's name."""
    seed = next(s for s in all_seeds() if s.target == "folder" and "/" not in s.member)
    saved = regressions.save(tmp_path / "out", seed, b"not a trace", {"case": "x"})
    assert saved.parent.name == seed.reader and saved.name.endswith(
        regressions.extension(seed.member))
    again, data = regressions.load(saved)
    assert again == seed and data == b"not a trace"
    target = again.materialise(tmp_path / "replay", data)
    assert target.is_dir() and (target / seed.member).read_bytes() == b"not a trace"
    pristine = sorted(p.name for p in seed.source.iterdir())
    assert sorted(p.name for p in target.iterdir()) == pristine


class _BrokenReader:
    """A reader that claims ``*.fuzzselftest`` files and then breaks the contract in the
    ways the checks must catch: a traceback, or a message that names no file."""
    name, description, patterns, priority, directories = (
        "fuzz-selftest", "checker self-test", ("*.fuzzselftest",), 1000, False)

    def sniff(self, path):
        return 1.0 if path.name.endswith(".fuzzselftest") else 0.0

    def read(self, path, progress, cancelled):
        if path.read_bytes().startswith(b"anonymous"):
            raise TraceFormatError("somewhere-else", None, "a trace")
        raise ZeroDivisionError("boom")


@pytest.fixture
def broken_reader(monkeypatch):
    readers()
    monkeypatch.setitem(parsers_base._REGISTRY, _BrokenReader.name, _BrokenReader())
    return _BrokenReader.name


def test_the_checks_catch_a_traceback_and_an_unnamed_file(broken_reader, tmp_path):
    crash, anonymous = tmp_path / "a.fuzzselftest", tmp_path / "b.fuzzselftest"
    crash.write_bytes(b"crash")
    anonymous.write_bytes(b"anonymous")
    got = {f["signature"].split("@")[0] for f in run_checks(crash, broken_reader)}
    assert got == {"reader:ZeroDivisionError", "open_trace:ZeroDivisionError",
                   "cli:ZeroDivisionError"}
    got = {f["signature"] for f in run_checks(anonymous, broken_reader)}
    assert got == {"reader:message-does-not-name-the-file",
                   "open_trace:message-does-not-name-the-file",
                   "cli:message-does-not-name-the-file"}


@pytest.mark.parametrize("name", sorted(FORMAT_FILES))
@pytest.mark.parametrize("other", sorted(FORMAT_FILES))
def test_wrong_format_files(name, other, tmp_path):
    """Every reader, forced, fed every other format's file under its own name."""
    reader, seed = FORMAT_FILES[name]
    other_reader, other_seed = FORMAT_FILES[other]
    if reader == other_reader:
        pytest.skip("same format")
    dst = tmp_path / seed.name
    shutil.copyfile(other_seed, dst)
    failures = checks_with_limit(dst, reader, CASE_SECONDS)
    assert not failures, json.dumps(failures, indent=1)


@pytest.mark.parametrize("name", sorted(FORMAT_FILES))
def test_empty_file(name, tmp_path):
    p = tmp_path / FORMAT_FILES[name][1].name
    p.write_bytes(b"")
    with pytest.raises(TraceFormatError) as exc:
        get_reader(FORMAT_FILES[name][0]).read(p, lambda f: None, lambda: False)
    assert str(p) in str(exc.value)
