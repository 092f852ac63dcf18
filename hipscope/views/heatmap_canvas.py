"""The counter heatmap's painted parts: the matrix canvas (one pixel per cell, scaled,
with kernel and counter names), the colour legend and the along-time canvas, and the
colour tables they share. Widgets only; :mod:`.heatmap` composes them."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPoint, QRect, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QImage, QLinearGradient, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from ..analysis.timeline_model.names import distinct_labels

DISTINCT_ROWS_MAX = 5000      # more rows: plain middle cuts (telling apart costs a sort)
NAN_RGB = (58, 58, 64)        # a value that was not collected
EMPTY_RGB = (232, 232, 232)   # a time bin without any dispatch


def colour_lut(kind: str) -> np.ndarray:
    """256 x 3 uint8: viridis-like (sequential) or blue-white-red (diverging)."""
    if kind == "diverging":
        stops = np.array([[59, 76, 192], [221, 221, 221], [180, 4, 38]], float)
        pos = np.array([0.0, 0.5, 1.0])
    else:
        stops = np.array([[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98],
                          [253, 231, 37]], float)
        pos = np.linspace(0, 1, len(stops))
    x = np.linspace(0, 1, 256)
    return np.stack([np.interp(x, pos, stops[:, i]) for i in range(3)], axis=1).astype(np.uint8)


def scaled_for_colour(norm: np.ndarray, method: str) -> np.ndarray:
    """Normalised values -> [0, 1] colour positions (NaN stays NaN)."""
    if method == "zscore":
        return np.clip((norm + 3.0) / 6.0, 0, 1)
    return np.clip(norm, 0, 1)


def to_image(pos: np.ndarray, lut: np.ndarray, nan_rgb: tuple = NAN_RGB) -> QImage:
    """A QImage (one pixel per cell) from colour positions; keeps its buffer alive."""
    h, w = pos.shape
    rgba = np.empty((h, w, 4), np.uint8)
    fin = np.isfinite(pos)
    idx = np.where(fin, np.round(np.nan_to_num(pos) * 255), 0).astype(np.int64)
    rgba[..., :3] = np.where(fin[..., None], lut[idx], np.array(nan_rgb, np.uint8))
    rgba[..., 3] = 255
    buf = np.ascontiguousarray(rgba)
    img = QImage(buf.data, w, h, 4 * w, QImage.Format.Format_RGBA8888)
    img._buf = buf  # noqa: SLF001 - QImage does not own numpy memory
    return img


class HeatmapCanvas(QWidget):
    """Paints a matrix image with row labels and rotated column headers."""

    cell_clicked = Signal(int, int)      # row, col (col -1: the row label)
    header_clicked = Signal(int)

    CELL_W, CELL_H, LABEL_W, HEADER_H = 16, 16, 300, 100    # HEADER_H: the default
    MAX_HEADER_H = 110      # rows stay in sight in a default-height dock; names are cut
                            # where they differ (full names in the tooltips)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setMouseTracking(True)
        self.image: QImage | None = None
        self.rows: list[str] = []
        self.cols: list[str] = []
        self.row_texts: list[str] = []       # as drawn: cut where the names differ
        self.col_texts: list[str] = []
        self.tooltip_fn = None
        self.sort_col: int | None = None
        self.sort_desc = True
        self.highlight: set[int] = set()
        self.split_col = 0          # columns before this one are derived metrics
        self.header_h = self.HEADER_H   # fits the longest counter name, up to a limit
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)

    def set_data(self, image: QImage | None, rows: list[str], cols: list[str]) -> None:
        self.image, self.rows, self.cols = image, rows, cols
        fm = QFontMetrics(self.font())
        longest = max((fm.horizontalAdvance(c) for c in cols), default=0) + 28
        self.header_h = int(np.clip(longest, 60, self.MAX_HEADER_H))
        char_w = max(fm.horizontalAdvance("n"), 1) * 1.1
        self.row_texts = (distinct_labels(rows, max(int((self.LABEL_W - 8) / char_w), 8))
                          if len(rows) <= DISTINCT_ROWS_MAX else list(rows))
        self.col_texts = distinct_labels(cols, max(int((self.header_h - 10) / char_w), 8))
        w = self.LABEL_W + max(1, len(cols)) * self.CELL_W + 8
        h = self.header_h + max(1, len(rows)) * self.CELL_H + 8
        self.setFixedSize(w, h)
        self.update()

    def cell_at(self, p: QPoint) -> tuple[int, int] | None:
        x, y = p.x() - self.LABEL_W, p.y() - self.header_h
        if y < 0:
            c = x // self.CELL_W
            return (-1, int(c)) if 0 <= x and c < len(self.cols) else None
        r = y // self.CELL_H
        if r >= len(self.rows):
            return None
        if x < 0:
            return int(r), -1
        c = x // self.CELL_W
        return (int(r), int(c)) if c < len(self.cols) else None

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt name)
        p = QPainter(self)
        pal = self.palette()
        p.fillRect(event.rect(), pal.window())
        if self.image is None:
            return
        cw, ch, lw, hh = self.CELL_W, self.CELL_H, self.LABEL_W, self.header_h
        target = QRect(lw, hh, len(self.cols) * cw, len(self.rows) * ch)
        p.drawImage(target, self.image)
        fm = QFontMetrics(self.font())
        p.setPen(pal.windowText().color())
        r0 = max(0, (event.rect().top() - hh) // ch)
        r1 = min(len(self.rows), (event.rect().bottom() - hh) // ch + 1)
        for r in range(r0, r1):          # visible labels only (bounded by the viewport)
            text = fm.elidedText(self.row_texts[r], Qt.TextElideMode.ElideMiddle, lw - 8)
            p.drawText(QRect(2, hh + r * ch, lw - 6, ch),
                       Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, text)
        c0 = max(0, (event.rect().left() - lw) // cw)
        c1 = min(len(self.cols), (event.rect().right() - lw) // cw + 1)
        p.save()
        p.rotate(-90)
        for c in range(c0, c1):
            name = self.col_texts[c]
            if c == self.sort_col:
                name = ("▼ " if self.sort_desc else "▲ ") + name
            text = fm.elidedText(name, Qt.TextElideMode.ElideMiddle, hh - 8)
            p.drawText(QRect(-hh + 4, lw + c * cw, hh - 8, cw),
                       Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, text)
        p.restore()
        if 0 < self.split_col < len(self.cols):
            p.setPen(QPen(pal.windowText().color(), 2))
            x = lw + self.split_col * cw
            p.drawLine(x, 4, x, hh + len(self.rows) * ch)
        if self.highlight:
            p.setPen(QPen(QColor(255, 80, 40), 2))
            p.setBrush(Qt.BrushStyle.NoBrush)
            for r in sorted(self.highlight):
                if r0 <= r < r1:
                    p.drawRect(QRect(1, hh + r * ch, lw + len(self.cols) * cw, ch - 1))

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        hit = self.cell_at(event.position().toPoint())
        if hit is None or self.tooltip_fn is None:
            QToolTip.hideText()
            return
        QToolTip.showText(event.globalPosition().toPoint(), self.tooltip_fn(*hit), self)

    def mousePressEvent(self, event) -> None:  # noqa: N802
        if event.button() != Qt.MouseButton.LeftButton:
            return
        hit = self.cell_at(event.position().toPoint())
        if hit is None:
            return
        if hit[0] == -1:
            self.header_clicked.emit(hit[1])
        else:
            self.cell_clicked.emit(*hit)


class ColourLegend(QWidget):
    """A horizontal colour bar with its two end labels."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.lut = colour_lut("sequential")
        self.lo, self.hi, self.title = "", "", ""
        self.setFixedHeight(34)
        self.setMinimumWidth(160)
        self.setMaximumWidth(480)

    def set_scale(self, lut: np.ndarray, lo: str, hi: str, title: str) -> None:
        self.lut, self.lo, self.hi, self.title = lut, lo, hi, title
        self.update()

    def paintEvent(self, event) -> None:  # noqa: N802
        p = QPainter(self)
        w = self.width()
        bar = QRectF(4, 2, w - 8, 14)
        g = QLinearGradient(bar.topLeft(), bar.topRight())
        for i in range(0, 256, 32):
            g.setColorAt(i / 255, QColor(*self.lut[i].tolist()))
        g.setColorAt(1.0, QColor(*self.lut[255].tolist()))
        p.fillRect(bar, g)
        p.setPen(self.palette().windowText().color())
        r = QRect(4, 17, w - 8, 16)
        fm = QFontMetrics(self.font())
        side = max(fm.horizontalAdvance(self.lo), fm.horizontalAdvance(self.hi)) + 8
        p.drawText(r, Qt.AlignmentFlag.AlignLeft, self.lo)
        p.drawText(r.adjusted(side, 0, -side, 0), Qt.AlignmentFlag.AlignHCenter,
                   fm.elidedText(self.title, Qt.TextElideMode.ElideRight, r.width() - 2 * side))
        p.drawText(r, Qt.AlignmentFlag.AlignRight, self.hi)


class TimeCanvas(QWidget):
    """Counters (rows) along time bins (columns) for one device."""

    LABEL_W = 300

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.image: QImage | None = None
        self.rows: list[str] = []
        self.axis = ("", "")
        self.setMinimumHeight(120)

    def bins(self) -> int:
        return max(16, (self.width() - self.LABEL_W - 8) // 3)

    def set_data(self, image: QImage | None, rows: list[str], axis: tuple[str, str]) -> None:
        self.image, self.rows, self.axis = image, rows, axis
        self.update()

    def fitting_rows(self) -> int:
        """How many counters fit with a readable label each."""
        return max(1, (self.height() - 22) // (QFontMetrics(self.font()).height() + 2))

    def paintEvent(self, event) -> None:  # noqa: N802
        p = QPainter(self)
        pal = self.palette()
        p.fillRect(self.rect(), pal.window())
        if self.image is None or not self.rows:
            p.setPen(pal.windowText().color())
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter,
                       "No dispatch with counters in this window.")
            return
        fm = QFontMetrics(self.font())
        rh = max(4, (self.height() - 22) // len(self.rows))
        w = self.width() - self.LABEL_W - 8
        p.drawImage(QRect(self.LABEL_W, 0, w, rh * len(self.rows)), self.image)
        p.setPen(pal.windowText().color())
        if rh >= fm.height() - 2:
            for i, name in enumerate(self.rows):
                t = fm.elidedText(name, Qt.TextElideMode.ElideMiddle, self.LABEL_W - 8)
                p.drawText(QRect(2, i * rh, self.LABEL_W - 6, rh),
                           Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, t)
        y = rh * len(self.rows) + 2
        p.drawText(QRect(self.LABEL_W, y, w, 18), Qt.AlignmentFlag.AlignLeft, self.axis[0])
        p.drawText(QRect(self.LABEL_W, y, w, 18), Qt.AlignmentFlag.AlignRight, self.axis[1])
