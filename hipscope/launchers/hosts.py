"""The few things launchers need from a machine: run a command, read and write files.

:class:`LocalHost` does them with ``subprocess`` and the file system; the SSH host in
:mod:`.ssh` does them over one SSH connection (exec channels and SFTP). Detection,
telemetry and Slurm code is written once against this interface.

Commands are argv lists; :meth:`Host.run` never goes through a shell. Where a shell is
needed (``run_script``) the script is built by hipscope with every user-given word
passed through :func:`shlex.quote`, and over SSH it goes to ``sh -s`` on stdin, so the
login shell's quoting rules never apply.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class Host(Protocol):
    name: str

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult: ...

    def run_script(self, script: str, timeout: float = 30.0) -> CommandResult: ...

    def read_from(self, path: str, offset: int, limit: int = 1 << 20) -> bytes: ...

    def exists(self, path: str) -> bool: ...

    def read_text(self, path: str) -> str | None: ...

    def write_bytes(self, path: str, data: bytes, mode: int = 0o644) -> None: ...

    def makedirs(self, path: str) -> None: ...

    def download_tree(self, remote: str, local: Path, limits=None) -> list[Path]: ...

    def abspath(self, path: str) -> str: ...

    def close(self) -> None: ...


class LocalHost:
    """This machine."""

    def __init__(self) -> None:
        self.name = socket.gethostname()

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                               errors="replace", stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            return CommandResult(127, "", f"{argv[0]}: command not found")
        except subprocess.TimeoutExpired:
            return CommandResult(124, "", f"{argv[0]}: timed out after {timeout:g}s")
        return CommandResult(p.returncode, p.stdout, p.stderr)

    def run_script(self, script: str, timeout: float = 30.0) -> CommandResult:
        return self.run(["sh", "-c", script], timeout)

    def read_from(self, path: str, offset: int, limit: int = 1 << 20) -> bytes:
        try:
            with open(path, "rb") as fh:
                fh.seek(offset)
                return fh.read(limit)
        except FileNotFoundError:
            return b""

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def read_text(self, path: str) -> str | None:
        try:
            return Path(path).read_text(errors="replace")
        except FileNotFoundError:
            return None

    def write_bytes(self, path: str, data: bytes, mode: int = 0o644) -> None:
        Path(path).write_bytes(data)
        os.chmod(path, mode)

    def makedirs(self, path: str) -> None:
        os.makedirs(path, mode=0o700, exist_ok=True)   # private, as on remote hosts

    def download_tree(self, remote: str, local: Path, limits=None) -> list[Path]:
        """Copy a local folder (the user's own files: ``limits`` are for remote hosts)."""
        src, dst = Path(remote), Path(local)
        if src.resolve() == dst.resolve():
            return sorted(p for p in dst.rglob("*") if p.is_file())
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        return sorted(p for p in dst.rglob("*") if p.is_file())

    def abspath(self, path: str) -> str:
        return os.path.abspath(os.path.expanduser(path))

    def close(self) -> None:
        return None

    def which(self, tool: str) -> str | None:
        return shutil.which(tool)
