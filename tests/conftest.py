"""Shared test helpers: where the real samples live, schema validation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Never touch the user's real cache from tests."""
    monkeypatch.setenv("HIPSCOPE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
