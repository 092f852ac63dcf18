"""A results folder: its richest trace file (results.db > results.json > results.csv)."""

from __future__ import annotations

from pathlib import Path

from ...model import Trace
from ..base import CancelledFn, ProgressFn
from .results_csv import LegacyRocprofCsvReader, stats_only_error
from .results_db import LegacyRocprofDbReader
from .results_json import LegacyRocprofJsonReader

def sniff_folder(path: Path) -> float:
    names = {p.name for p in path.iterdir() if p.is_file()}
    if names & {"results.db", "results.json", "results.csv"}:
        return 0.9
    if any(n.startswith("results") and n.endswith("stats.csv") for n in names):
        return 0.5
    return 0.0


def read_folder(path: Path, progress: ProgressFn, cancelled: CancelledFn) -> Trace:
    for name, reader in (("results.db", LegacyRocprofDbReader),
                         ("results.json", LegacyRocprofJsonReader),
                         ("results.csv", LegacyRocprofCsvReader)):
        f = path / name
        if f.is_file():
            tr = reader().read(f, progress, cancelled)
            others = [str(path / n) for n in ("results.db", "results.json", "results.csv")
                      if (path / n).is_file() and n != name]
            if others:
                tr = tr.with_meta(folder=str(path), also_in_folder=others)
            return tr
    raise stats_only_error(path)
