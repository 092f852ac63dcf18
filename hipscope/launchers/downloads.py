"""Downloading a run's artifacts by SFTP without trusting the server.

A compromised target can answer a listing with any string (the class of scp's
CVE-2019-6111), so every name is checked before anything is written, the local path
must stay under the run folder, and the size (per file and in all), count and depth of
what arrives are capped; a breach stops the download with one sentence.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import paramiko


@dataclass(frozen=True)
class ArtifactLimits:
    """Caps on what a download may bring (``Target`` fields set them per run)."""

    max_file_bytes: int = 16 << 30
    max_total_bytes: int = 64 << 30
    max_files: int = 100_000
    max_depth: int = 32


class ArtifactRefused(Exception):
    """The target's artifacts broke a rule or a limit; ``str()`` is a sentence."""


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.3g} GiB" if n >= 1 << 30 else f"{n:,} bytes"


class Download:
    """One ``download_tree``: checks names, paths and limits while it copies."""

    chunk = 1 << 20

    def __init__(self, sftp: paramiko.SFTPClient, local: Path, limits: ArtifactLimits):
        self.s, self.local, self.lim = sftp, local, limits
        self.root = local.resolve()
        self.remote = ""
        self.total = 0
        self.got: list[Path] = []

    def run(self, remote: str) -> list[Path]:
        self.remote = remote
        self.walk(remote, self.local, 0)
        return sorted(self.got)

    def _target(self, rdir: str, ldir: Path, name: str) -> Path:
        if name in ("", ".", "..") or "/" in name or "\0" in name:
            raise ArtifactRefused(
                f"the target listed an unsafe file name {name!r} in {rdir}; hipscope refuses "
                f"to write it (nothing was written outside the run folder)")
        lp = ldir / name
        if not lp.resolve().is_relative_to(self.root):
            raise ArtifactRefused(f"the artifact {rdir}/{name} would be written outside the "
                                  f"run folder ({lp.resolve()}); refused")
        return lp

    def walk(self, rdir: str, ldir: Path, depth: int) -> None:
        if depth > self.lim.max_depth:
            raise ArtifactRefused(f"the artifacts under {self.remote} are nested deeper than "
                                  f"{self.lim.max_depth} folders; the download was stopped")
        try:
            entries = self.s.listdir_attr(rdir)
        except FileNotFoundError:
            return
        ldir.mkdir(parents=True, exist_ok=True)
        for e in entries:
            lp = self._target(rdir, ldir, e.filename)
            mode = e.st_mode or 0
            if stat.S_ISDIR(mode):
                self.walk(f"{rdir}/{e.filename}", lp, depth + 1)
            elif stat.S_ISREG(mode):
                self.copy(f"{rdir}/{e.filename}", lp, e.st_size or 0)

    def _over(self, rp: str, size: int) -> None:
        lim = self.lim
        if size > lim.max_file_bytes:
            raise ArtifactRefused(f"the artifact {rp} is larger than the per-file limit of "
                                  f"{_gib(lim.max_file_bytes)} (Target.max_file_bytes); "
                                  f"the download was stopped")
        if self.total + size > lim.max_total_bytes:
            raise ArtifactRefused(f"the artifacts under {self.remote} are larger than the "
                                  f"limit of {_gib(lim.max_total_bytes)} in all "
                                  f"(Target.max_total_bytes); the download stopped at {rp}")

    def copy(self, rp: str, lp: Path, listed: int) -> None:
        if len(self.got) >= self.lim.max_files:
            raise ArtifactRefused(f"there are more than {self.lim.max_files} artifacts under "
                                  f"{self.remote} (Target.max_files); the download was stopped")
        self._over(rp, listed)
        n = 0
        try:
            with self.s.open(rp, "rb") as src, open(lp, "wb") as dst:
                if listed > 0:
                    src.prefetch(listed)
                while data := src.read(self.chunk):
                    n += len(data)
                    self._over(rp, n)   # the listing's size may lie: count what arrives
                    dst.write(data)
        except ArtifactRefused:
            lp.unlink(missing_ok=True)   # no partial file that looks complete
            raise
        self.total += n
        self.got.append(lp)
