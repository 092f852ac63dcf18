"""One run in the GUI: :class:`RunPanel` (live console, state line, telemetry strip
charts, Cancel) over a :class:`~hipscope.qt.runs.RunSession`.

The console shows at most ``MAX_LINE_CHARS`` of a line (the rest is counted, and stays
in the run folder's log) and updates a ``\\r`` progress line in place. The panel binds
to the session's plain state and signals; it holds no run logic.
"""

from __future__ import annotations

import logging
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QColor, QDesktopServices, QFontDatabase, QPalette, QTextCharFormat, \
    QTextCursor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from ..launchers.base import RunState
from ..qt.runs import MAX_LINE_CHARS, METRICS, RunSession, TelemetryBuffer, fmt_seconds

if TYPE_CHECKING:
    import pyqtgraph as pg

log = logging.getLogger(__name__)

MAX_CONSOLE_BLOCKS = 50_000   # lines kept in the console (the log file has them all)
STATE_TEXT = {"queued": "⏳ queued", "starting": "◔ starting…", "running": "▶ running",
              "collecting": "⇩ collecting artifacts…", "finished": "✔ finished",
              "failed": "✖ failed", "cancelled": "■ cancelled", "unknown": "? unknown"}
STATE_COLOUR = {"finished": "#3fa34d", "failed": "#d9534f", "cancelled": "#d08a00",
                "running": "#3d8bd9"}
GPU_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2",
               "#edc948", "#ff9da7", "#9c755f", "#bab0ac")


class TelemetryCharts(QWidget):
    """Scrolling strip charts, one per metric, a curve per GPU (x: seconds)."""

    WINDOW_S = 120.0

    def __init__(self, buffer: TelemetryBuffer, parent=None):
        import pyqtgraph as pg          # with a run's panel, not at the app's start-up

        from .plot_style import follow_theme

        super().__init__(parent)
        self.buffer = buffer
        pal = self.palette()
        fg = pal.color(QPalette.ColorRole.WindowText)
        self.glw = pg.GraphicsLayoutWidget(self)
        self.glw.setBackground(pal.color(QPalette.ColorRole.Base))
        self.glw.ci.layout.setSpacing(2)
        self.plots: dict[str, pg.PlotItem] = {}
        self.curves: dict[tuple[str, int], pg.PlotDataItem] = {}
        first = None
        small = self.font()
        small.setPointSizeF(max(6.0, small.pointSizeF() * 0.85))
        for i, (key, title, unit, _scale) in enumerate(METRICS):
            p = self.glw.addPlot(row=i // 3, col=i % 3)    # 3 × 2: fits a short dock
            p.setMenuEnabled(False)
            p.setMouseEnabled(x=False, y=False)
            p.hideButtons()
            p.showGrid(x=True, y=True, alpha=0.15)
            p.setTitle(f"{title} ({unit})", color=fg.name(), size=f"{small.pointSizeF():.0f}pt")
            for ax in ("left", "bottom"):
                p.getAxis(ax).setPen(pg.mkPen(fg))
                p.getAxis(ax).setTextPen(pg.mkPen(fg))
                p.getAxis(ax).setStyle(tickFont=small)
            p.getAxis("left").setWidth(44)
            p.getAxis("bottom").setHeight(20)
            if key == "util_pct":
                p.setYRange(0, 100, padding=0.02)
            if first is None:
                first = p
            else:
                p.setXLink(first)
            self.plots[key] = p
        follow_theme(self.glw)                  # the app's theme, also after a switch
        self.legend = QLabel(self)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        v = QVBoxLayout(self)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(2)
        v.addWidget(self.legend)
        v.addWidget(self.glw, 1)
        self._pending = QTimer(self)
        self._pending.setSingleShot(True)
        self._pending.setInterval(100)
        self._pending.timeout.connect(self.redraw)

    def schedule(self, *_a) -> None:
        """Redraw soon (several telemetry events in 100 ms become one redraw)."""
        if not self._pending.isActive():
            self._pending.start()

    def redraw(self) -> None:
        gpus = self.buffer.gpus()
        tmax = 0.0
        for g in gpus:
            colour = GPU_COLOURS[g % len(GPU_COLOURS)]
            for key, _title, _unit, scale in METRICS:
                c = self.curves.get((key, g))
                if c is None:
                    import pyqtgraph as pg

                    c = self.plots[key].plot(pen=pg.mkPen(colour, width=1.5),
                                             connect="finite")
                    self.curves[(key, g)] = c
                t, y = self.buffer.series(g, key)
                c.setData(t, y * scale)
                if len(t):
                    tmax = max(tmax, float(t[-1]))
        window = self.WINDOW_S
        self.plots[METRICS[0][0]].setXRange(max(0.0, tmax - window), max(tmax, 10.0),
                                            padding=0.01)
        if gpus:
            self.legend.setText("  ".join(
                f"<span style='color:{GPU_COLOURS[g % len(GPU_COLOURS)]}'>■</span> GPU {g}"
                for g in gpus) + "  <span style='color:gray'>(x: seconds since the first "
                "sample)</span>")
        elif not self.legend.text():
            self.legend.setText("waiting for the first telemetry sample…")


class RunPanel(QWidget):
    """The live view of one run. ``open_requested(list)``: open this run's trace."""

    open_requested = Signal(list)

    def __init__(self, session: RunSession, parent=None):
        super().__init__(parent)
        self.session = session
        spec = session.spec
        cmd = shlex.join(spec.command).replace("\n", " ⏎ ")
        self.title_label = QLabel(f"<b>{_html(cmd if len(cmd) < 160 else cmd[:157] + '…')}</b>",
                                  self)
        self.title_label.setTextFormat(Qt.TextFormat.RichText)
        self.title_label.setToolTip(shlex.join(spec.command))
        self.title_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        prof = "no profiler" if spec.profiler.name == "none" else spec.profiler.name
        self.info_label = QLabel(f"on {spec.target.label()} · {prof} · {session.run_id}", self)
        self.info_label.setEnabled(False)
        self.state_label = QLabel(self)
        self.state_label.setObjectName("run_state")
        self.state_label.setTextFormat(Qt.TextFormat.RichText)
        self.state_label.setWordWrap(True)
        self.state_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setToolTip("Stop the program (its whole process group)")
        self.cancel_button.clicked.connect(self._on_cancel_clicked)
        self.open_button = QPushButton("Open trace", self)
        self.open_button.clicked.connect(
            lambda: self.open_requested.emit(list(self.session.result.trace_inputs)))
        self.folder_button = QPushButton("Open folder", self)
        self.folder_button.setToolTip(str(session.folder))
        self.folder_button.clicked.connect(
            lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.session.folder))))
        self.console = QPlainTextEdit(self)
        self.console.setReadOnly(True)
        self.console.setMaximumBlockCount(MAX_CONSOLE_BLOCKS)
        self.console.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.console.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.console.setPlaceholderText("The program's output appears here.")
        self.charts = TelemetryCharts(session.telemetry, self)
        self.charts.setVisible(spec.telemetry_interval is not None)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.addWidget(self.console)
        self.splitter.addWidget(self.charts)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        head = QHBoxLayout()
        texts = QVBoxLayout()
        texts.addWidget(self.title_label)
        texts.addWidget(self.info_label)
        head.addLayout(texts, 1)
        for b in (self.cancel_button, self.open_button, self.folder_button):
            head.addWidget(b, 0, Qt.AlignmentFlag.AlignTop)
        v = QVBoxLayout(self)
        v.setContentsMargins(6, 6, 6, 6)
        v.addLayout(head)
        v.addWidget(self.state_label)
        v.addWidget(self.splitter, 1)
        self._fmt = {"stdout": QTextCharFormat(), "stderr": QTextCharFormat(),
                     "message": QTextCharFormat()}
        self._fmt["stderr"].setForeground(QColor("#e5534b"))
        self._fmt["message"].setForeground(QColor("#8a8f98"))
        self._fmt["message"].setFontItalic(True)
        self._clock = QTimer(self)
        self._clock.setInterval(1000)
        self._clock.timeout.connect(self._update_state)
        self._clock.start()
        session.lines_appended.connect(self.append_lines)
        session.message_added.connect(self._on_session_message_added)
        session.state_changed.connect(self._on_session_state_changed)
        session.telemetry_added.connect(self.charts.schedule)
        self._open: dict[str, _OpenLine] = {}    # per stream: its line, still going
        self._started = False                    # the console has a first line
        self._update_state()
        self.charts.redraw()
        self._sized = False

    def showEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().showEvent(event)
        if not self._sized and self.width() > 200:   # console 55 %, charts 45 %
            self._sized = True
            self.splitter.setSizes([self.width() * 55 // 100, self.width() * 45 // 100])

    @property
    def title(self) -> str:
        cmd = self.session.spec.command
        return self.session.spec.name or Path(cmd[1] if Path(cmd[0]).name.startswith(
            "python") and len(cmd) > 1 and not cmd[1].startswith("-") else cmd[0]).name

    def append_lines(self, batch: list[tuple]) -> None:
        """Append a batch of ``(stream, text[, end, bytes cut])``: one insert per run of
        whole lines of the same stream; a fragment continues its stream's open line, a
        progress line (end ``\\r``) is replaced by the next text of its stream."""
        bar = self.console.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 2
        cur = QTextCursor(self.console.document())
        cur.beginEditBlock()
        run: list[str] = []
        run_stream = ""
        for item in batch:
            stream, text, end, cut = (*item, "\n", 0)[:4]
            op = self._open.get(stream)
            if op is None and end == "\n" and not cut and len(text) <= MAX_LINE_CHARS:
                if run and run_stream != stream:
                    self._insert_block(cur, "\n".join(run), run_stream)
                    run = []
                run_stream = stream
                run.append(text)
                continue
            if run:
                self._insert_block(cur, "\n".join(run), run_stream)
                run = []
            if op is None or not self._rewrite(op, text, cut):
                op = _OpenLine(stream)
                op.add(text, cut)
                self._insert_block(cur, op.render(), stream)
            op.replace_next = end == "\r"
            if end == "\n":
                self._open.pop(stream, None)
            else:
                self._open[stream] = op
        if run:
            self._insert_block(cur, "\n".join(run), run_stream)
        cur.endEditBlock()
        if at_end:
            bar.setValue(bar.maximum())

    def _insert_block(self, cur: QTextCursor, text: str, stream: str) -> None:
        """Append ``text`` (lines) as new blocks; open lines are counted from the end,
        which the console's trimming of old blocks leaves unchanged."""
        cur.movePosition(QTextCursor.MoveOperation.End)
        new = text.count("\n")
        if self._started:
            cur.insertBlock()
            new += 1
        self._started = True
        cur.insertText(text, self._fmt[stream])
        for op in self._open.values():
            op.after += new

    def _rewrite(self, op: _OpenLine, text: str, cut: int) -> bool:
        """Add to an open line in place; False when the console has dropped it."""
        doc = self.console.document()
        n = doc.blockCount() - 1 - op.after
        if n < 0:
            return False
        op.add(text, cut)
        c = QTextCursor(doc.findBlockByNumber(n))
        c.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
        c.insertText(op.render(), self._fmt[op.stream])
        return True

    def _on_session_message_added(self, text: str) -> None:
        self.append_lines([("message", f"— {text}")])
        if text.startswith("telemetry off"):
            self.charts.legend.setText(_html(text))

    def _on_cancel_clicked(self) -> None:
        self.cancel_button.setEnabled(False)
        self.cancel_button.setText("Cancelling…")
        self.session.cancel()

    def _on_session_state_changed(self, state: str, reason: str) -> None:
        self._update_state()
        if RunState(state).final:
            self._clock.stop()
            self.charts.redraw()

    def _update_state(self) -> None:
        s = self.session
        final = RunState(s.state).final
        colour = STATE_COLOUR.get(s.state, "")
        text = STATE_TEXT.get(s.state, s.state)
        if s.reason:
            text += f": {s.reason}"
        parts = [f"<span style='color:{colour}'><b>{_html(text)}</b></span>" if colour
                 else f"<b>{_html(text)}</b>"]
        el = s.elapsed()
        if el is not None:
            parts.append(("took " if final else "for ") + fmt_seconds(el))
        parts.append(f"{s.line_count:,} line{'' if s.line_count == 1 else 's'}")   # not "1 lines"
        if s.telemetry.count:
            parts.append(f"{s.telemetry.count:,} telemetry samples")
        line = " · ".join(parts)
        res = s.result
        if final and s.state != "finished":
            line += f"<br>The run folder is kept: <code>{_html(str(s.folder))}</code>"
        elif final and res is not None and not res.trace_inputs:
            line += f"<br>No trace was written; the run folder: <code>{_html(str(s.folder))}</code>"
        self.state_label.setText(line)
        self.cancel_button.setVisible(not final)
        self.open_button.setEnabled(bool(final and res is not None and res.trace_inputs))
        self.open_button.setToolTip("" if self.open_button.isEnabled() else
                                    "no trace yet" if not final else "this run wrote no trace")


class _OpenLine:
    """The console's last line while its stream has not ended it (plain state)."""

    def __init__(self, stream: str):
        self.stream, self.text, self.cut, self.replace_next = stream, "", 0, False
        self.after = 0           # console lines below it

    def add(self, text: str, cut: int) -> None:
        if self.replace_next and (text or cut):      # after "\r": the new text replaces
            self.text, self.cut = "", 0
        self.replace_next = False
        room = MAX_LINE_CHARS - len(self.text)
        self.text += text[:room]
        self.cut += cut + len(text[room:].encode("utf-8", errors="replace"))

    def render(self) -> str:
        if not self.cut:
            return self.text
        return f"{self.text} … ({self.cut:,} bytes more; see {self.stream}.log)"


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
