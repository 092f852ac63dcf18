"""known_hosts files read the way OpenSSH reads them, line by line.

paramiko's ``load_host_keys`` raises on the first bad line (bad base64, ``@revoked``,
``@cert-authority``), which broke every run; OpenSSH skips what it cannot use and
honours ``@revoked``. Here each line is parsed on its own: comments, blank lines, lines
with too few fields, unknown key types and bad base64 are skipped; ``@cert-authority``
lines are skipped (hipscope does not use host certificates); ``@revoked`` keys are
collected so that a host offering one is refused. Host fields may be plain names,
``[host]:port``, wildcards (``*``, ``?``), negations (``!``) or hashed (``|1|salt|hmac``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import paramiko

log = logging.getLogger(__name__)


@dataclass
class KnownHosts:
    """The keys the files list for one host name (and the revoked ones)."""

    known: list[paramiko.PKey] = field(default_factory=list)
    revoked: list[paramiko.PKey] = field(default_factory=list)
    files: list[str] = field(default_factory=list)    # where each known key is listed

    def origin(self, key: paramiko.PKey) -> str | None:
        return next((f for k, f in zip(self.known, self.files) if k is key), None)

    def is_revoked(self, key: paramiko.PKey) -> bool:
        return any(k == key for k in self.revoked)

    def matches(self, key: paramiko.PKey) -> bool:
        return any(k == key for k in self.known)


def _hashed_match(entry: str, name: str) -> bool:
    parts = entry.split("|")
    if len(parts) != 4 or parts[1] != "1":
        return False
    try:
        salt, want = base64.b64decode(parts[2]), base64.b64decode(parts[3])
    except (binascii.Error, ValueError):
        return False
    return hmac.compare_digest(hmac.new(salt, name.encode(), hashlib.sha1).digest(), want)


def _wildcard(pattern: str, name: str) -> bool:
    """OpenSSH's ``match_pattern``: ``*`` and ``?`` only (``[`` is literal)."""
    rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, name, re.DOTALL) is not None


def host_matches(field_: str, name: str) -> bool:
    """OpenSSH's rule: some pattern matches and no negated pattern does."""
    if field_.startswith("|"):
        return _hashed_match(field_, name)
    hit = False
    for pat in field_.split(","):
        neg = pat.startswith("!")
        pat = pat[1:] if neg else pat
        if pat and _wildcard(pat.lower(), name.lower()):
            if neg:
                return False
            hit = True
    return hit


def parse_line(line: str) -> tuple[str | None, str, paramiko.PKey] | None:
    """``(marker, hosts, key)`` of one line, or None when OpenSSH would skip it."""
    words = line.split()
    if not words or words[0].startswith("#"):
        return None
    marker = None
    if words[0].startswith("@"):
        marker, words = words[0], words[1:]
        if marker not in ("@revoked", "@cert-authority"):
            return None
    if len(words) < 3:
        return None
    hosts, ktype, b64 = words[0], words[1], words[2]
    try:
        blob = base64.b64decode(b64, validate=True)
        key = paramiko.PKey.from_type_string(ktype, blob)
    except Exception:  # noqa: BLE001 - bad base64, unknown type, a blob that is no key: skip it
        return None
    return marker, hosts, key


def lookup(files: list[str], name: str) -> KnownHosts:
    """Every usable key for ``name`` in ``files`` (in order; missing files are skipped)."""
    out = KnownHosts()
    for f in files:
        try:
            text = Path(f).read_text(errors="replace")
        except OSError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            parsed = parse_line(line)
            if parsed is None:
                if line.strip() and not line.lstrip().startswith("#"):
                    log.debug("%s:%d: skipped an unusable known_hosts line", f, n)
                continue
            marker, hosts, key = parsed
            if marker == "@revoked":
                if host_matches(hosts, name):
                    out.revoked.append(key)
            elif marker is None and host_matches(hosts, name):
                out.known.append(key)
                out.files.append(f)
    keep = [i for i, k in enumerate(out.known) if not out.is_revoked(k)]
    out.known, out.files = [out.known[i] for i in keep], [out.files[i] for i in keep]
    return out


def append_key(path: str, name: str, key: paramiko.PKey, hashed: bool) -> None:
    """Append ``name key`` to known_hosts (hashed as OpenSSH's ``HashKnownHosts yes``)."""
    p = Path(path)
    p.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    label = paramiko.HostKeys.hash_host(name) if hashed else name
    lead = ""
    if p.exists() and p.stat().st_size:
        with open(p, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            lead = "" if fh.read(1) == b"\n" else "\n"
    with open(p, "a") as fh:
        fh.write(f"{lead}{label} {key.get_name()} {key.get_base64()}\n")
