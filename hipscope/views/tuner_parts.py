"""The tuner panel's parts: texts, the A/B chart, and the window a reference reveals."""

from __future__ import annotations

import shlex

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel

from ..model.view_state import Selection
from ..tuner.proposals import Proposal, Ref
from ..tuner.state import ExperimentRecord
from .tables.format import fmt_bytes, fmt_duration, fmt_percent

VERDICT_TEXT = {"better": ("better", "#2e7d32"), "worse": ("worse", "#c62828"),
                "inconclusive": ("not better (inconclusive)", "#8a6d00"),
                "no difference": ("no difference shown", "#8a6d00")}
SOURCE_TEXT = {"program": "the program's HIPSCOPE_RESULT time",
               "process": "process wall time"}
CONF_COLOURS = {"high": "#2e7d32", "medium": "#8a6d00", "low": "#777777"}
SIDE_COLOURS = ("#4c78a8", "#f58518")          # baseline, variant
STATUS_TEXT = {"idle": "", "queued": "queued", "running": "running", "finished": "done",
               "failed": "failed", "cancelled": "cancelled"}


def reveal_window(window: tuple[int, int], t0: int, t1: int) -> tuple[int, int]:
    """A window showing [t0, t1]: the range with a 5 % margin either side, at least
    2 µs wide (a one-kernel range stays readable)."""
    width = max(t1 - t0, 2_000)
    pad = width // 20
    mid = (t0 + t1) // 2
    return mid - width // 2 - pad, mid + width // 2 + pad


def fmt_figure(key: str, value) -> tuple[str, str]:
    """(label, text) of one evidence figure: ``*_ns`` as durations, fractions as %."""
    label = key.replace("_", " ")
    if key.endswith("_ns"):
        label = label[:-3]
    if value is None:
        return label, "—"
    if key.endswith("_ns") and isinstance(value, (int, float)):
        return label, fmt_duration(value)
    if (key == "bytes" or key.endswith("_bytes")) and isinstance(value, (int, float)):
        return label.replace(" bytes", ""), fmt_bytes(value)
    if ("fraction" in key or "share" in key) and isinstance(value, float) and value <= 1:
        return label, fmt_percent(value)
    if isinstance(value, float):
        return label, f"{value:.4g}"
    if isinstance(value, int):
        return label, f"{value:,}"
    if isinstance(value, dict):          # counts by name: 'cudaStreamSynchronize × 3'
        return label, ", ".join(f"{k} × {v:,}" if isinstance(v, int) else
                                f"{k}: {fmt_figure(str(k), v)[1]}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return label, ", ".join(fmt_figure(key, v)[1] for v in value)
    return label, str(value)


def experiment_text(p: Proposal) -> str:
    """What the experiment changes, as text for the monospace box."""
    e = p.experiment
    lines = []
    for k, v in e.env.items():
        lines.append(f"unset {k}" if v is None else f"export {k}={shlex.quote(v)}")
    for a in e.args:
        old, new = a.get("old"), a.get("new")
        lines.append(f"args: {old} -> {new}" if old else f"args: + {new}")
    for i, s in enumerate(e.steps, 1):
        env = " ".join(f"{k}={v}" for k, v in (s.get("env") or {}).items())
        lines.append(f"step {i} ({s.get('name', '')}): {env}")
    if e.recipe:
        if lines:
            lines.append("")
        lines.append(e.recipe.strip("\n"))
    return "\n".join(lines)


def result_html(r) -> str:
    text, col = VERDICT_TEXT.get(r.verdict, (r.verdict, "#000"))
    change = (1 - r.ratio) if r.lower_is_better else (r.ratio - 1)
    faster = f"{abs(change):.0%} {'faster' if change >= 0 else 'slower'}"
    rounds = getattr(r, "rounds", None)
    how = (f"{r.method}, {rounds} paired rounds" if rounds is not None else
           f"bootstrap {r.method}, {r.baseline.n} + {r.variant.n} runs")
    src = SOURCE_TEXT.get(getattr(r, "source", ""), "")
    wide = ("; interval wider than the target: more rounds would narrow it"
            if getattr(r, "precise", True) is False else "")
    return (f"<span style='font-size:large; color:{col}'><b>{text}</b></span> — variant / "
            f"baseline time <b>{r.ratio:.3f}</b> ({faster}), "
            f"{r.confidence:.1%} interval <b>[{r.ci_low:.3f}, {r.ci_high:.3f}]</b> "
            f"<span style='color:#777'>({how}{'; measured: ' + src if src else ''}"
            f"{wide})</span>")

def trace_pair(rec: ExperimentRecord) -> list[str] | None:
    """The traces of the baseline and variant runs nearest each side's median."""
    out = []
    for side in (0, 1):
        runs = [r for r in rec.runs if r["side"] == side and r.get("trace_path")]
        if not runs:
            return None
        med = float(np.median([r["wall_s"] for r in runs]))
        out.append(min(runs, key=lambda r: abs(r["wall_s"] - med))["trace_path"])
    return out


def fill_figures(grid: QGridLayout, figures: dict) -> None:
    """Short figures two pairs a row; long text on a row of its own."""
    row, col = 0, 0
    for k, v in figures.items():
        label, text = fmt_figure(k, v)
        long = len(text) > 18
        if long and col:
            row, col = row + 1, 0
        grid.addWidget(QLabel(label), row, col)
        val = QLabel(f"<b>{esc(text)}</b>")
        val.setWordWrap(long)
        val.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        grid.addWidget(val, row, col + 1, 1, 3 if long else 1)
        if long or col:
            row, col = row + 1, 0
        else:
            col = 2


def ref_place(document, ref: Ref) -> str:
    """' — at 12.3 ms, 4.56 ms long' for a row reference (same labels read apart)."""
    trace = document.trace
    table = getattr(trace, ref.table, None) if trace is not None and ref.table else None
    if table is None or ref.row is None or not 0 <= ref.row < len(table) \
            or not table.has("start"):
        return ""
    t0 = int(table.numpy("start")[ref.row])
    dur = int(table.numpy("end")[ref.row]) - t0 if table.has("end") else None
    base = document.full_range()[0]
    more = f", {fmt_duration(dur)} long" if dur is not None else ""
    return f" <span style='color:#777'>at {fmt_duration(t0 - base)}{more}</span>"


def show_ref(document, ref: Ref) -> None:
    """Point the timeline at ``ref``: select its row and/or show its time range."""
    trace, vs = document.trace, document.view_state
    if trace is None:
        return
    t0, t1 = ref.t0, ref.t1
    if ref.table is not None and ref.row is not None:
        table = getattr(trace, ref.table, None)
        if table is not None and 0 <= ref.row < len(table):
            vs.select(Selection(ref.table, int(ref.row)))
            if t0 is None:
                t0 = int(table.numpy("start")[ref.row])
                t1 = int(table.numpy("end")[ref.row])
    if t0 is not None and t1 is not None:
        vs.set_window(*reveal_window(vs.window, int(t0), int(t1)))


def esc(text: str) -> str:
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("'", "&#39;"))
