"""A comparison as one JSON-serialisable dict (``hipscope compare --json``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .comparison import Comparison


def _num(x: Any) -> Any:
    """A JSON-safe number: numpy scalars to Python, NaN/inf to None."""
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if np.isfinite(x) else None
    return x


def _ns(x: Any) -> int | None:
    return None if x is None or not np.isfinite(x) else int(round(float(x)))


def to_json(c: Comparison, top: int | None = None) -> dict[str, Any]:
    """One JSON-serialisable dict (keys documented in `hipscope compare --help`)."""
    h, kd = c.headline, c.kernels
    ratio = kd.ratio
    rows = range(len(kd.names)) if top is None else range(min(top, len(kd.names)))
    out: dict[str, Any] = {
        "span_ns": {k: _num(h["span_ns"][k]) for k in ("a", "b", "ratio")},
        "gpu_busy_fraction": {k: _num(h["gpu_busy_fraction"][k]) for k in ("a", "b")},
        "kernels": [{
            "name": kd.names[i], "status": kd.status[i],
            "a_count": int(kd.a_count[i]), "b_count": int(kd.b_count[i]),
            "a_total_ns": _ns(kd.a_total[i]), "b_total_ns": _ns(kd.b_total[i]),
            "delta_ns": _ns(kd.delta_total[i]), "ratio": _num(ratio[i]),
            "a_mean_ns": _ns(kd.a_mean[i]), "b_mean_ns": _ns(kd.b_mean[i]),
            "a_p95_ns": _ns(kd.a_p95[i]), "b_p95_ns": _ns(kd.b_p95[i]),
            "merged_names": kd.raw_names[i] if len(kd.raw_names[i]) > 1 else [],
        } for i in rows],
        "added": kd.added, "removed": kd.removed,
        "headline": {k: {f: _num(v) for f, v in d.items()} for k, d in h.items()},
        "provenance": {k: {f: _num(v) for f, v in d.items()} for k, d in c.provenance.items()},
        "not_comparable": c.not_comparable,
        "gpus": c.gpus,
        "warnings": list(c.warnings),
    }
    if c.ops is not None:          # by_op.compare_ops: JSON-ready already
        out["ops"] = c.ops
    if c.alignment is not None:
        al = c.alignment
        ra, rb = al.ranges
        out["aligned"] = {"label": al.label, "offset_ns": {"a": al.offsets[0], "b": al.offsets[1]},
                          "a": {"start": ra.start, "end": ra.end, "span_ns": ra.span},
                          "b": {"start": rb.start, "end": rb.end, "span_ns": rb.span},
                          "ratio": (rb.span / ra.span) if ra.span else None}
    return out
