"""The rocpd schema version a database declares, against the versions this reader knows.

rocprofiler-sdk records it in ``rocpd_metadata``: ROCm 7.0 writes ``schema_version = "3"``;
the versioned schemas (``versions.yml``) write the full ``"3.0.x"`` plus
``schema_version_major``/``_minor``/``_patch``. Known (DDL read, fixture per version in
``tests/data/fixtures/rocpd_versions.py``): 3.0.0 initial; 3.0.1 NIC agents; 3.0.2 graph
ids on dispatches/copies and ``rocpd_graph_launch``; 3.0.3 SPM counter samples in
``rocpd_pmc_event`` (``sample_id``), left out of ``counters_collection``; 3.0.4 HIP event
records (``rocpd_hip_event``, ``hip_events``); 3.0.5 SPM ``shader_array``/``wgp``. A newer
database is still read through the same views, with one warning naming both versions
(a ``4.1.0`` directory seen on a rocprofiler-sdk branch is not in ``versions.yml``: newer).
"""

from __future__ import annotations

import re

from .._common import warn

__all__ = ["KNOWN_VERSIONS", "NEWEST_KNOWN", "check_schema_version", "schema_version"]

KNOWN_VERSIONS = ("3.0.0", "3.0.1", "3.0.2", "3.0.3", "3.0.4", "3.0.5")
NEWEST_KNOWN = KNOWN_VERSIONS[-1]

_VERSION = re.compile(r"\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*")


def _parts(text: object) -> tuple[int, int, int] | None:
    m = _VERSION.fullmatch(str(text)) if text is not None else None
    if m is None:
        return None
    return tuple(int(g) if g is not None else 0 for g in m.groups())  # type: ignore[return-value]


def schema_version(md: dict[str, str]) -> tuple[str, tuple[int, int, int] | None] | None:
    """(declared text, (major, minor, patch) or None when unreadable); None if not declared."""
    text = md.get("schema_version")
    if text is None:
        return None
    parts = _parts(text)
    if parts is not None and "." not in str(text):  # "3": the split tags, when present
        split = [md.get(f"schema_version_{k}") for k in ("major", "minor", "patch")]
        joined = _parts(".".join(str(s) for s in split)) if None not in split else None
        if joined is not None and joined[0] == parts[0]:
            parts = joined
    return str(text), parts


def check_schema_version(path: object, md: dict[str, str] | None, meta: dict,
                         warnings: list[str]) -> None:
    """Record ``meta["rocpd_schema_version"]``; warn once when the database is newer than
    the newest known version, or declares one that cannot be read."""
    found = schema_version(md or {})
    if found is None:
        return
    text, parts = found
    if parts is None:
        warn(warnings, "rocpd.schema_unreadable",
             f"{path}: rocpd_metadata schema_version {text!r} is not a version "
             f"number; read as rocpd schema {NEWEST_KNOWN}, which may be wrong", path)
        return
    version = ".".join(str(p) for p in parts)
    meta["rocpd_schema_version"] = version
    if parts > _parts(NEWEST_KNOWN):  # type: ignore[operator]
        warn(warnings, "rocpd.schema_newer",
             f"{path}: rocpd schema version {version} is newer than "
             f"{NEWEST_KNOWN}, the newest this hipscope knows; what it added "
             "is not read and figures from changed tables may be incomplete", path)
