"""A results folder: its richest trace file (results.db > results.json > results.csv)."""

from __future__ import annotations

from pathlib import Path

from ...model import Trace
from ..base import CancelledFn, ProgressFn
from .results_csv import LegacyRocprofCsvReader, stats_only_error
from .results_db import LegacyRocprofDbReader
from .results_json import LegacyRocprofJsonReader
from .sniff import sniff_folder  # noqa: F401 - its name here before sniff.py



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
