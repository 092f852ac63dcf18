"""Fuzz seeds: every real sample in ``../shared/samples`` and every trace fixture in
``tests/data``. A seed is one file to mutate inside its folder (the folder is copied
with it, since readers open a file's siblings of the same set) and what to open
afterwards: the file itself or the whole folder. The reader is the one that sniffs
the pristine target, so the mutated file keeps its name and extension."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tests.conftest import DATA, SAMPLES

# trace fixtures in tests/data (the rest is Python, docs and ground truth)
DATA_DIRS = ("rocpd", "pftrace", "rocprofv3-csv-twin/node01", "telemetry", "gpu", "gpu/proof",
             "nsys", "jax/cpu", "jax/gpu", "ncu", "kineto-2021")
SKIP_SUFFIXES = (".py", ".md", ".cu", ".sh", ".pyc")


@dataclass(frozen=True)
class Seed:
    root: str        # "samples" or "data"
    folder: str      # the sample folder, relative to its root
    member: str      # the file to mutate, relative to the folder
    target: str      # "file": open the member; "folder": open the folder
    reader: str      # the reader that sniffs the pristine target

    @property
    def id(self) -> str:
        return f"{self.root}/{self.folder}/{self.member}@{self.target}"

    @property
    def source(self) -> Path:
        return root_path(self.root) / self.folder

    def materialise(self, dst: Path, data: bytes) -> Path:
        """Copy the seed's folder under ``dst``, write ``data`` as the member; the path
        to open."""
        case = dst / Path(self.folder).name
        shutil.copytree(self.source, case, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.py", "*.pyc"))
        (case / self.member).write_bytes(data)
        return case / self.member if self.target == "file" else case


def root_path(root: str) -> Path:
    return {"samples": SAMPLES, "data": DATA}[root]


def _folders() -> list[tuple[str, Path, bool]]:
    """(root, folder, recursive): sample folders are samples/<format>/<name>."""
    out = [("samples", d, True) for d in sorted(SAMPLES.glob("*/*")) if d.is_dir()]
    return out + [("data", DATA / d, False) for d in DATA_DIRS if (DATA / d).is_dir()]


def _sniff(path: Path) -> str | None:
    from hipscope.parsers import TraceFormatError, find_reader

    try:
        return find_reader(path).name
    except (TraceFormatError, OSError, ValueError):
        return None


@lru_cache(maxsize=1)
def all_seeds() -> tuple[Seed, ...]:
    seeds = []
    for root, folder, recursive in _folders():
        rel = str(folder.relative_to(root_path(root)))
        members = sorted(p for p in (folder.rglob("*") if recursive else folder.iterdir())
                         if p.is_file() and not p.name.endswith(SKIP_SUFFIXES))
        folder_reader = _sniff(folder)
        for m in members:
            name = str(m.relative_to(folder))
            file_reader = _sniff(m)
            if file_reader:
                seeds.append(Seed(root, rel, name, "file", file_reader))
            if folder_reader:
                seeds.append(Seed(root, rel, name, "folder", folder_reader))
    return tuple(seeds)


def by_reader() -> dict[str, list[Seed]]:
    out: dict[str, list[Seed]] = {}
    for s in all_seeds():
        out.setdefault(s.reader, []).append(s)
    return out


@lru_cache(maxsize=64)
def seed_bytes(seed: Seed) -> bytes:
    return (seed.source / seed.member).read_bytes()
