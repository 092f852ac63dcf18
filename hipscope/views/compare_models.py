"""Item models of the comparison view: headline, kernel diff, instances, provenance.

Each is a QAbstractTableModel over numpy arrays or lists taken from
:mod:`hipscope.analysis.diff` results; they format and colour, nothing more.
Deltas are coloured by whether B is better (green), worse (red) or neither (grey).
"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import QAbstractItemView, QTableView, QWidget

from ..analysis import diff
from ..analysis.lod import short_name
from ..analysis.timeline_model.names import distinct_labels
from .tables.format import fmt_bytes, fmt_duration

BETTER = QColor(46, 160, 80)
WORSE = QColor(222, 72, 60)
NEUTRAL = QColor(138, 144, 154)
ADDED = QColor(86, 156, 214)
DIFFERS_BG = QColor(255, 193, 7, 60)
NEUTRAL_BAND = 0.01          # |ratio - 1| below this is "no change"

_DISPLAY = Qt.ItemDataRole.DisplayRole
_ALIGN = Qt.ItemDataRole.TextAlignmentRole
_FG = Qt.ItemDataRole.ForegroundRole
_TIP = Qt.ItemDataRole.ToolTipRole
SORT_ROLE = Qt.ItemDataRole.UserRole
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

HIGHER_BETTER = {"gpu_busy_fraction", "kernels_per_second"}


def direction(key: str) -> int:
    """-1: lower is better (times: span, idle, delays), +1: higher is better (busy,
    throughput), 0: neither (counts, bytes)."""
    if key in HIGHER_BETTER:
        return 1
    if key.endswith("_ns") and not key.startswith("copies_"):
        return -1
    return 0


def delta_colour(ratio: float | None, better: int, delta: float | None = None) -> QColor:
    """Green when B is better than A, red when worse, grey when equal or neither
    (changes under 1 % count as equal; without a ratio, as from 0, the delta's sign
    decides)."""
    if better == 0:
        return NEUTRAL
    if ratio is None or not math.isfinite(ratio):
        if delta is None or not math.isfinite(delta) or delta == 0:
            return NEUTRAL
        change = delta
    elif abs(ratio - 1) < NEUTRAL_BAND:
        return NEUTRAL
    else:
        change = ratio - 1
    return BETTER if change * better > 0 else WORSE


def fmt_value(v, unit: str) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    if unit == "ns":
        return fmt_duration(v)
    if unit == "fraction":
        return f"{v:.1%}"
    if unit == "bytes":
        return fmt_bytes(v)
    return f"{v:,.0f}" if isinstance(v, float) else f"{v:,}"


def fmt_delta(d, unit: str) -> str:
    if d is None or (isinstance(d, float) and not math.isfinite(d)):
        return "–"
    sign = "+" if d > 0 else ""
    if unit == "fraction":
        return f"{sign}{d * 100:.1f} pt"
    return sign + fmt_value(d, unit)


def fmt_ratio(r) -> str:
    return "–" if r is None or not math.isfinite(r) else f"×{r:.3f}"


def run_names(paths) -> list[str]:
    """Names that tell runs apart: file names, or parent/name when those repeat."""
    names = [p.name or str(p) for p in paths]
    if len(set(names)) == len(names):
        return names
    return [f"{p.parent.name}/{p.name}" for p in paths]


def label_of(key: str) -> str:
    return diff.headline_label(key)


def display_names(names: list[str]) -> list[str]:
    """Row names of a comparison: the readable short name first; where two rows share
    it (template instances), the part of the full name that tells them apart after
    it, so that no two rows read alike when the column is cut."""
    short = [short_name(n) for n in names]
    seen: dict[str, list[int]] = {}
    for i, s in enumerate(short):
        seen.setdefault(s, []).append(i)
    label = distinct_labels(short, HEAD_CHARS)    # long names: the telling part first
    for rows in seen.values():
        if len(rows) > 1:
            tells = distinct_labels([names[i] for i in rows], DISTINCT_CHARS)
            for i, t in zip(rows, tells):
                label[i] = f"{short[i]}   ·   {t}"
    return [h if h == n else f"{h}   ·   {n}" for h, n in zip(label, names)]


DISTINCT_CHARS = 60       # of a full name shown after a shared short name
HEAD_CHARS = 44           # the start of a row's text tells it from the others


class _Table(QAbstractTableModel):
    HEADERS: tuple[str, ...] = ()

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.HEADERS)

    def headerData(self, section, orientation, role=_DISPLAY):  # noqa: N802
        if (role == _DISPLAY and orientation == Qt.Orientation.Horizontal
                and 0 <= section < len(self.HEADERS)):
            return self.HEADERS[section]
        return None


class HeadlineModel(_Table):
    """Figure | A | B | Δ (B − A) | B / A for one comparison (plus the aligned range)."""

    HEADERS = ("Figure", "A", "B", "Δ (B − A)", "B / A")

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list[tuple[str, str, dict]] = []     # (key, label, {a, b, delta, ...})

    def set_comparison(self, c: diff.Comparison | None,
                       aligned: diff.Alignment | None = None, b: int = 1) -> None:
        self.beginResetModel()
        self.rows = []
        if aligned is not None and aligned.label != "start":
            sa, sb = aligned.spans[0], aligned.spans[b]
            self.rows.append(("aligned_span_ns", f"Aligned range: {short_name(aligned.label)}",
                              {"a": sa, "b": sb, "delta": sb - sa, "unit": "ns",
                               "ratio": sb / sa if sa else None}))
        if c is not None:
            for k, r in c.headline.items():
                if r["a"] is None and r["b"] is None:
                    continue
                self.rows.append((k, label_of(k), r))
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.rows)

    def figure(self, key: str) -> dict | None:
        return next((r for k, _, r in self.rows if k == key), None)

    def data(self, index, role=_DISPLAY):
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        key, label, r = self.rows[index.row()]
        col, unit = index.column(), r["unit"]
        if role == _DISPLAY:
            return (label, fmt_value(r["a"], unit), fmt_value(r["b"], unit),
                    fmt_delta(r["delta"], unit), fmt_ratio(r["ratio"]))[col]
        if role == _ALIGN and col > 0:
            return _RIGHT
        if role == _FG and col >= 3:
            return delta_colour(r["ratio"], direction(key), r["delta"])
        if role == _TIP and col == 0:
            d = direction(key)
            return {1: "higher is better", -1: "lower is better", 0: ""}[d] or None
        return None


class KernelDiffModel(_Table):
    """Per normalised kernel name: counts, totals, Δ, ratio, means; sorted by impact
    (|Δ total|) until a header sorts it; ``set_filter`` shows names containing a text."""

    HEADERS = ("", "Kernel", "A n", "B n", "A total", "B total", "Δ total", "B / A",
               "A mean", "B mean")

    def __init__(self, parent=None):
        super().__init__(parent)
        self.kd: diff.KernelDiff | None = None
        self.order = np.zeros(0, dtype=np.int64)     # visible rows -> kd index
        self._filter = ""
        self._sort: tuple[int, Qt.SortOrder] | None = None

    def set_diff(self, kd: diff.KernelDiff | None) -> None:
        self.beginResetModel()
        self.kd = kd
        if kd is not None:
            self._delta, self._ratio = kd.delta_total, kd.ratio
            self._lower = [n.lower() for n in kd.names]
            self._display_names = display_names(kd.names)
        self._refilter()
        self.endResetModel()

    def set_filter(self, text: str) -> None:
        self.beginResetModel()
        self._filter = text.strip().lower()
        self._refilter()
        self.endResetModel()

    def _refilter(self) -> None:
        if self.kd is None:
            self.order = np.zeros(0, dtype=np.int64)
            return
        f = self._filter
        rows = [i for i, n in enumerate(self._lower) if f in n] if f else range(len(self._lower))
        self.order = np.fromiter(rows, dtype=np.int64)
        if self._sort is not None:
            self._apply_sort(*self._sort)

    def _key(self, col: int) -> np.ndarray | list:
        kd = self.kd
        return {0: np.array([{"removed": 0, "matched": 1, "added": 2}[s] for s in kd.status]),
                1: kd.names, 2: kd.a_count, 3: kd.b_count, 4: kd.a_total, 5: kd.b_total,
                6: self._delta, 7: self._ratio, 8: kd.a_mean, 9: kd.b_mean}[col]

    def _apply_sort(self, col: int, order: Qt.SortOrder) -> None:
        keys = self._key(col)
        if isinstance(keys, list):
            sub = sorted(self.order.tolist(), key=lambda i: keys[i])
            self.order = np.array(sub, dtype=np.int64)
        else:
            v = np.nan_to_num(np.asarray(keys, dtype=np.float64)[self.order], nan=-np.inf)
            self.order = self.order[np.argsort(v, kind="stable")]
        if order == Qt.SortOrder.DescendingOrder:
            self.order = self.order[::-1].copy()

    def sort(self, column: int, order=Qt.SortOrder.AscendingOrder) -> None:
        if self.kd is None or not 0 <= column < len(self.HEADERS):
            return
        self.layoutAboutToBeChanged.emit()
        self._sort = (column, order)
        self._refilter()
        self.layoutChanged.emit()

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.order)

    def name_at(self, row: int) -> str | None:
        return self.kd.names[int(self.order[row])] if 0 <= row < len(self.order) else None

    def row_of(self, name: str) -> int:
        if self.kd is None or name not in self.kd.names:
            return -1
        hit = np.flatnonzero(self.order == self.kd.names.index(name))
        return int(hit[0]) if len(hit) else -1

    def data(self, index, role=_DISPLAY):
        if not index.isValid() or self.kd is None or not 0 <= index.row() < len(self.order):
            return None
        i, col, kd = int(self.order[index.row()]), index.column(), self.kd
        status = kd.status[i]
        if role == _DISPLAY:
            if col == 0:
                return {"added": "added", "removed": "removed"}.get(status, "")
            if col == 1:
                return self._display_names[i]
            if col in (2, 3):
                return f"{int((kd.a_count, kd.b_count)[col - 2][i]):,}"
            if col == 6:
                return fmt_delta(float(self._delta[i]), "ns")
            if col == 7:
                return fmt_ratio(float(self._ratio[i])) if status == "matched" else "–"
            v = (kd.a_total, kd.b_total, None, None, kd.a_mean, kd.b_mean)[col - 4][i]
            return fmt_duration(v) if np.isfinite(v) and (col < 8 or v > 0) else "–"
        if role == SORT_ROLE:
            v = self._key(col)[i]
            return v if isinstance(v, str) else float(v)
        if role == _ALIGN and col >= 2:
            return _RIGHT
        if role == _FG:
            if col == 0 or (col == 1 and status != "matched"):
                return ADDED if status == "added" else NEUTRAL if status == "removed" else None
            if col in (6, 7):        # added/removed: no "faster" or "slower" to speak of
                d = float(self._delta[i])
                return NEUTRAL if d == 0 or status != "matched" else (
                    WORSE if d > 0 else BETTER)
        if role == Qt.ItemDataRole.FontRole and col == 1 and status == "removed":
            f = QFont()
            f.setStrikeOut(True)
            return f
        if role == _TIP and col == 1:
            merged = kd.raw_names[i]
            extra = ("\n\nmerged names:\n" + "\n".join(merged)) if len(merged) > 1 else ""
            return kd.names[i] + extra
        return None


class InstanceModel(_Table):
    """Instance i of one kernel in A against instance i in B (launch order)."""

    HEADERS = ("#", "A start", "A duration", "B start", "B duration", "Δ", "B / A")

    def __init__(self, parent=None):
        super().__init__(parent)
        self.inst: diff.InstanceDiff | None = None
        self._starts = (np.zeros(0), np.zeros(0))

    def set_instances(self, inst: diff.InstanceDiff | None,
                      starts: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """``starts``: each matched instance's start relative to its run's origin."""
        self.beginResetModel()
        self.inst = inst
        n = 0 if inst is None else len(inst.a_rows)
        self._starts = starts if starts is not None else (np.zeros(n), np.zeros(n))
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() or self.inst is None else len(self.inst.a_rows)

    def data(self, index, role=_DISPLAY):
        inst = self.inst
        if not index.isValid() or inst is None or not 0 <= index.row() < len(inst.a_rows):
            return None
        i, col = index.row(), index.column()
        a, b = float(inst.a_duration[i]), float(inst.b_duration[i])
        if role == _DISPLAY:
            return (f"{i + 1}", fmt_duration(self._starts[0][i]), fmt_duration(a),
                    fmt_duration(self._starts[1][i]), fmt_duration(b),
                    fmt_delta(b - a, "ns"), fmt_ratio(b / a if a else None))[col]
        if role == _ALIGN and col >= 1:
            return _RIGHT
        if role == _FG and col >= 5:
            return delta_colour(b / a if a else None, -1)
        return None


class ProvenanceModel(_Table):
    """Key | A | B; rows whose values differ are highlighted."""

    HEADERS = ("", "A", "B")

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list[tuple[str, dict]] = []

    def set_provenance(self, prov: dict[str, dict] | None) -> None:
        self.beginResetModel()
        items = list((prov or {}).items())
        self.rows = [kv for kv in items if kv[1]["differs"]] + [
            kv for kv in items if not kv[1]["differs"]]
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.rows)

    def data(self, index, role=_DISPLAY):
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        key, r = self.rows[index.row()]
        col = index.column()
        if role == _DISPLAY:
            v = key if col == 0 else r["a" if col == 1 else "b"]
            return "–" if v is None else str(v)
        if role == Qt.ItemDataRole.BackgroundRole and r["differs"]:
            return DIFFERS_BG
        if role == Qt.ItemDataRole.FontRole and r["differs"]:
            f = QFont()
            f.setBold(True)
            return f
        if role == _TIP and r["differs"] and col == 0:
            return "differs between the runs"
        return None


def result_table(model, parent: QWidget | None,
                 elide: Qt.TextElideMode = Qt.TextElideMode.ElideRight) -> QTableView:
    """A comparison result table: whole rows selected one at a time, no row numbers,
    alternating rows, one line per cell elided at ``elide``."""
    t = QTableView(parent)
    t.setModel(model)
    t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    t.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    t.verticalHeader().setVisible(False)
    t.verticalHeader().setDefaultSectionSize(22)
    t.setAlternatingRowColors(True)
    t.setWordWrap(False)
    t.setTextElideMode(elide)
    return t
