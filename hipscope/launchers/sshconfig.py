"""ssh_config read the way OpenSSH reads it, on top of paramiko's parser.

The user's file (``~/.ssh/config``, or the one given, which is then read alone as with
``ssh -F``), then the system's (:data:`SYSTEM_CONFIG`); ``Include`` lines are inlined
(paramiko skips them); for each option the first obtained value wins, except
``IdentityFile``, which adds up.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import paramiko


class SSHConfigError(Exception):
    """A config file could not be read; ``str()`` is a sentence."""


SYSTEM_CONFIG = "/etc/ssh/ssh_config"
GLOBAL_KNOWN_HOSTS = "/etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2"
STRICT_VALUES = {"yes": "yes", "true": "yes", "no": "no", "off": "no", "false": "no",
                 "accept-new": "accept-new", "ask": "ask"}


def _config_text(p: Path, base: Path, depth: int = 0) -> str:
    """The file's text with ``Include`` lines replaced by the files they name (globs;
    relative names under ``base``: ~/.ssh for the user's file, /etc/ssh for the
    system's), which paramiko does not read."""
    out = []
    for line in p.read_text(errors="replace").splitlines():
        words = line.split()
        if words and words[0].lower() == "include" and depth < 16:
            for pat in words[1:]:
                pat = os.path.expanduser(pat)
                for f in sorted(glob.glob(pat if os.path.isabs(pat) else str(base / pat))):
                    out.append(_config_text(Path(f), base, depth + 1))
        else:
            out.append(line)
    return "\n".join(out)


def _lookup(path: str, alias: str, base: str) -> dict:
    p = Path(os.path.expanduser(path))
    if not p.is_file():
        return {}
    try:
        text = _config_text(p, Path(os.path.expanduser(base)))
        d = dict(paramiko.SSHConfig.from_text(text).lookup(alias))
    except Exception as exc:  # noqa: BLE001 - an unreadable or malformed config is the user's
        raise SSHConfigError(f"cannot read the ssh config {p}: {exc}") from None
    if d.get("hostname") == alias:   # paramiko fills in HostName; only a set one counts
        d.pop("hostname")
    return d


def ssh_options(alias: str, config_path: str | None) -> dict:
    """The options for ``alias``: the user's config, then (without an explicit config,
    as ``ssh -F``) the system one; the first obtained value wins, IdentityFile adds up."""
    layers = [_lookup(config_path or "~/.ssh/config", alias, "~/.ssh")]
    if config_path is None:
        layers.append(_lookup(SYSTEM_CONFIG, alias, os.path.dirname(SYSTEM_CONFIG)))
    out: dict = {}
    for d in layers:
        for k, v in d.items():
            if k == "identityfile":
                out.setdefault(k, []).extend(v)
            else:
                out.setdefault(k, v)
    return out


def file_list(value: str | None, default: str) -> list[str]:
    """The files of a UserKnownHostsFile-like value (``none`` names no file)."""
    words = (value or default).split()
    return [os.path.expanduser(w) for w in words if w.lower() != "none"]
