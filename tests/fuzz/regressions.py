"""Saved fuzz failures: ``tests/data/fuzz-regressions/<reader>/<sha>.<ext>`` holds the
mutated bytes, ``<sha>.note.json`` beside it says which seed they replace (folder,
member, what is opened), the mutation, the campaign seed and case, and what failed.
The normal suite replays every saved file through the same checks (test_fuzz.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.conftest import DATA
from tests.fuzz.seeds import Seed

REGRESSIONS = DATA / "fuzz-regressions"
NOTE = ".note.json"


def extension(member: str) -> str:
    """The member's suffixes (``.json.gz``, ``.csv``, ``.db``), so the file keeps them."""
    return "".join(Path(member).suffixes)


def save(out: Path, seed: Seed, data: bytes, info: dict) -> Path:
    """Write one failing case; ``info`` holds mutation, campaign seed, case, failures."""
    sha = hashlib.sha256(data).hexdigest()[:16]
    folder = out / seed.reader
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sha}{extension(seed.member)}"
    path.write_bytes(data)
    note = {"seed": {"root": seed.root, "folder": seed.folder, "member": seed.member,
                     "target": seed.target, "reader": seed.reader}, **info}
    (folder / f"{sha}{NOTE}").write_text(json.dumps(note, indent=1) + "\n")
    return path


def saved(out: Path = REGRESSIONS) -> list[Path]:
    """Every saved case (not the notes), sorted."""
    if not out.is_dir():
        return []
    return sorted(p for p in out.glob("*/*") if p.is_file() and not p.name.endswith(NOTE)
                  and p.name != "README.md")


def note_of(case: Path) -> Path:
    return case.with_name(case.name[:16] + NOTE)


def load(case: Path) -> tuple[Seed, bytes]:
    """The seed a saved case replaces, and its bytes."""
    s = json.loads(note_of(case).read_text())["seed"]
    return Seed(s["root"], s["folder"], s["member"], s["target"], s["reader"]), case.read_bytes()
