"""Diagnostics: the trace's warnings with a stable code, a severity and a place.

``meta["warnings"]`` (plain strings, for people) stays as it is; ``meta["diagnostics"]``
holds ``{"code", "severity", "message", "where"}`` dicts beside it so the GUI can show
them and scripts can test for a code instead of matching English text. The codes are
listed in docs/readers.md ("Diagnostic codes"). Qt-free; meta stays plain JSON.

Sites that see a ``meta`` call :func:`add_diagnostic`. Sites that only see a warnings
list append :func:`coded` strings (a ``str`` that carries its code); :func:`harvest`
turns them into diagnostics before the trace is cached, and :func:`diagnostics` gives
every warning without one the code its message pattern has (``diagnostic_codes``), or
the generic ``reader.warning`` for a message no pattern knows, so the list is complete.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .diagnostic_codes import code_of, where_of

SEVERITIES = ("info", "warning", "error")
GENERIC = "reader.warning"


@dataclass(frozen=True)
class Diagnostic:
    """One finding about the input: ``code`` (stable, dotted), ``severity``
    (info|warning|error), ``message`` (the sentence for people), ``where`` (the file or
    place, or None)."""

    code: str
    severity: str
    message: str
    where: str | None = None

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity {self.severity!r} is not one of {SEVERITIES}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Coded(str):
    """A warning string that carries its diagnostic (for warnings-list sites)."""

    code: str = GENERIC
    severity: str = "warning"
    where: str | None = None


def coded(code: str, message: str, where: object = None, severity: str = "warning") -> Coded:
    """``message`` as a warning string that :func:`harvest` turns into a diagnostic."""
    Diagnostic(code, severity, message)        # checks the severity
    s = Coded(message)
    s.code, s.severity, s.where = code, severity, None if where is None else str(where)
    return s


def add_diagnostic(meta: dict[str, Any], code: str, severity: str, message: str,
                   where: object = None) -> None:
    """Append the diagnostic to ``meta["diagnostics"]`` and ``message`` to
    ``meta["warnings"]`` (so every reader of warnings keeps working). Both lists are
    copied, never changed in place (meta may be shared with another trace)."""
    d = Diagnostic(code, severity, message, None if where is None else str(where))
    meta["diagnostics"] = [*(meta.get("diagnostics") or []), d.as_dict()]
    meta["warnings"] = [*(meta.get("warnings") or []), message]


def harvest(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with a diagnostic for each :class:`Coded` warning that has none yet
    (a new dict when any was added): run before the trace is cached as JSON, where
    the ``str`` subclass would be lost."""
    have = {d.get("message") for d in meta.get("diagnostics") or []}
    new = [_as_dict(w) for w in meta.get("warnings") or []
           if isinstance(w, Coded) and w not in have]
    if not new:
        return meta
    return {**meta, "diagnostics": [*(meta.get("diagnostics") or []), *new]}


def diagnostics(trace_or_meta: Any) -> list[dict[str, Any]]:
    """Every diagnostic of a trace (or its meta), in warning order: the recorded ones,
    and ``reader.warning`` for each plain warning string that has none."""
    meta = getattr(trace_or_meta, "meta", trace_or_meta) or {}
    recorded = [d for d in meta.get("diagnostics") or [] if isinstance(d, dict)]
    by_msg = {d.get("message"): d for d in recorded}
    out, used = [], set()
    for w in meta.get("warnings") or []:
        d = by_msg.get(w) or _as_dict(w)
        out.append(d)
        used.add(d.get("message"))
    out.extend(d for d in recorded if d.get("message") not in used)
    return out


def _as_dict(w: Any) -> dict[str, Any]:
    """A coded warning's own code; a plain one's from the message table
    (``diagnostic_codes``), else the generic code."""
    if isinstance(w, Coded):
        return Diagnostic(w.code, w.severity, str(w), w.where).as_dict()
    code, severity = code_of(str(w)) or (GENERIC, "warning")
    return Diagnostic(code, severity, str(w), where_of(str(w))).as_dict()
