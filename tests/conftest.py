"""Shared test helpers: where the real samples live, schema validation, a counting
``cancelled`` (:class:`CancelAfter`), and the Hypothesis profiles
(``HYPOTHESIS_PROFILE``: ``ci`` by default, ``fuzz`` for the campaign)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# ci: the same examples on every run and machine (make test, .ci/run); no deadline,
# since wall-clock limits depend on the machine's load.
settings.register_profile(
    "ci", derandomize=True, max_examples=20, deadline=None, database=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture])
# fuzz: randomised and long (make fuzz; tests/fuzz/campaign.py seeds each round itself)
settings.register_profile(
    "fuzz", derandomize=False, max_examples=2000, deadline=None, database=None,
    print_blob=True, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def _samples_dir() -> Path:
    env = os.environ.get("HIPSCOPE_SAMPLES")
    if env:
        return Path(env)
    return (ROOT / ".." / "shared" / "samples").resolve()


SAMPLES = _samples_dir()
if not (SAMPLES / "PROVENANCE.md").exists():  # fail loudly: tests over samples would vanish
    raise pytest.UsageError(
        f"real samples not found at {SAMPLES}; set HIPSCOPE_SAMPLES to ../shared/samples")


def sample_dirs(fmt: str) -> list[Path]:
    """Every sample folder of one format family (a new sample is a new test case)."""
    base = SAMPLES / fmt
    dirs = sorted(p for p in base.iterdir() if p.is_dir())
    assert dirs, f"no samples under {base}"
    return dirs


def ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


class CancelAfter:
    """cancelled() that turns true on its ``n``-th call (counts the calls)."""

    def __init__(self, n: int):
        self.n, self.calls = n, 0

    def __call__(self) -> bool:
        self.calls += 1
        return self.calls >= self.n


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Never touch the user's real cache from tests; no store a test began (held for a
    first frame, or written behind) lands in the next test's cache."""
    monkeypatch.setenv("HIPSCOPE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    yield
    from hipscope.analysis import persist
    from hipscope.parsers import cache_jobs

    cache_jobs.release_all()
    cache_jobs.flush()
    persist.flush()
