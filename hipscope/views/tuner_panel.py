"""Tuner panel: the open trace's proposals (best first), their evidence linked to the
timeline, the experiment, and an A/B **Test** of it on real runs.

The panel binds to a :class:`~hipscope.tuner.state.TunerState` (proposals, selection,
program, experiment records) and draws it; all tuning logic lives in
``hipscope.tuner``: proposals come from ``tuner.rules.propose`` and tests run
``tuner.sweep.run_sweep`` over ``tuner.experiment.experiment_runner`` (launchers), both
in workers. Evidence links change the document's ViewState (selection / window), so
the timeline follows. Signals: ``proposals_ready`` (after a trace's proposals are
shown), ``experiment_done(str)`` (proposal id, any outcome), ``compare_requested(list)``
(paths: baseline and variant traces, for the window's comparison tab),
``apply_requested(object)`` (the RunSpec with the experiment applied).
"""

from __future__ import annotations

import logging
import shlex

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..model.view_state import Selection
from ..tuner import experiment as tx
from ..tuner.proposals import Proposal, Ref
from ..tuner.state import ExperimentRecord, TunerState
from .tables.format import fmt_bytes, fmt_duration, fmt_percent

log = logging.getLogger(__name__)

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


class _StateBridge(QObject):
    """TunerState observer -> a Qt signal; ``run_measured`` carries one finished run
    of a test from its worker thread (queued across)."""

    changed = Signal(str, object)
    run_measured = Signal(str, object)       # proposal id, run dict


class ABChart(pg.PlotWidget):
    """All repeats of an A/B test as a strip per side, with the medians as bars."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setBackground("w")
        self.setMouseEnabled(x=False, y=False)
        self.hideButtons()
        self.setMenuEnabled(False)
        self.setLabel("left", "wall time", units="s")
        self.getAxis("bottom").setTicks([[(0, "baseline"), (1, "variant")]])
        self.setXRange(-0.6, 1.6, padding=0)
        self.showGrid(y=True, alpha=0.25)
        self.setMinimumHeight(150)

    def show_runs(self, runs: list[dict]) -> None:
        self.clear()
        for side in (0, 1):
            ys = np.array([r["wall_s"] for r in runs if r["side"] == side], dtype=float)
            if not len(ys):
                continue
            # deterministic jitter by repeat index, so the strip reads as points
            xs = side + (np.arange(len(ys)) % 5 - 2) * 0.06
            self.addItem(pg.ScatterPlotItem(xs, ys, size=9, brush=pg.mkBrush(SIDE_COLOURS[side]),
                                            pen=pg.mkPen("w", width=0.5)))
            med = float(np.median(ys))
            self.plot([side - 0.3, side + 0.3], [med, med], pen=pg.mkPen("#222", width=2))
        ys = [r["wall_s"] for r in runs]
        if ys:
            lo, hi = min(ys), max(ys)
            pad = max((hi - lo) * 0.15, hi * 0.02)
            self.setYRange(max(0.0, lo - pad), hi + pad, padding=0)


class TunerPanel(QWidget):
    """Proposals of a Document's trace and their A/B tests, bound to a TunerState."""

    proposals_ready = Signal()
    experiment_done = Signal(str)
    compare_requested = Signal(list)
    apply_requested = Signal(object)

    def __init__(self, document, state: TunerState | None = None, parent=None):
        super().__init__(parent)
        from ..app.tasks import TaskRunner

        self.document = document
        self.state = state or TunerState()
        self.tasks = TaskRunner(self, max_threads=2)
        self.repeats = 5
        self._handles: dict[str, object] = {}
        self._bridge = _StateBridge(self)
        self._bridge.changed.connect(self._on_state_changed, Qt.ConnectionType.QueuedConnection)
        self._bridge.run_measured.connect(self._on_run_measured,
                                          Qt.ConnectionType.QueuedConnection)
        self._unsubscribe = self.state.subscribe(self._bridge.changed.emit)
        self._build()
        document.trace_loaded.connect(self._on_document_trace_loaded)
        if document.trace is not None:
            self._on_document_trace_loaded(document.trace)
        self._show_details(None)

    # ---- layout ----------------------------------------------------------------------
    def _build(self) -> None:
        self.status_label = QLabel("No trace.")
        self.status_label.setWordWrap(True)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Proposal", "Gain", "Confidence", "Test"])
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideRight)
        hdr = self.tree.header()
        hdr.setStretchLastSection(False)
        hdr.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for c in (1, 2, 3):
            hdr.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        self.tree.currentItemChanged.connect(self._on_tree_current_changed)
        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addWidget(self.status_label)
        lv.addWidget(self.tree, 1)

        self.details = QWidget()
        dv = QVBoxLayout(self.details)
        dv.setContentsMargins(6, 4, 6, 4)
        self.title_label = self._rich(QLabel())
        f = self.title_label.font()
        f.setBold(True)
        f.setPointSizeF(f.pointSizeF() * 1.1)
        self.title_label.setFont(f)
        self.estimate_label = self._rich(QLabel())
        self.confidence_label = self._rich(QLabel())
        self.figures = QGridLayout()
        self.figures.setHorizontalSpacing(12)
        self.figures.setVerticalSpacing(1)
        self.figures.setColumnStretch(4, 1)   # pairs packed to the left
        self.refs_label = self._rich(QLabel())
        self.refs_label.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self.refs_label.linkActivated.connect(self._on_ref_activated)
        self.experiment_box = QPlainTextEdit()
        self.experiment_box.setReadOnly(True)
        self.experiment_box.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.experiment_box.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.experiment_box.setMaximumHeight(160)
        self.copy_button = QPushButton("Copy")
        self.copy_button.setToolTip("Copy the experiment to the clipboard")
        self.copy_button.clicked.connect(self._on_copy_clicked)
        self.note_label = self._rich(QLabel())
        self.docs_label = self._rich(QLabel())
        self.docs_label.setOpenExternalLinks(True)
        exp_head = QHBoxLayout()
        exp_head.addWidget(QLabel("<b>Experiment</b>"))
        exp_head.addStretch(1)
        exp_head.addWidget(self.copy_button)
        for w in (self.title_label, self.estimate_label, self.confidence_label):
            dv.addWidget(w)
        dv.addWidget(QLabel("<b>Evidence</b>"))
        dv.addLayout(self.figures)
        dv.addWidget(self.refs_label)
        dv.addLayout(exp_head)
        dv.addWidget(self.experiment_box)
        dv.addWidget(self.note_label)
        dv.addWidget(self.docs_label)
        dv.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(self.details)

        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(left)
        split.addWidget(scroll)
        split.addWidget(self._build_ab_pane())
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 4)
        split.setStretchFactor(2, 3)
        split.setSizes([380, 620, 500])
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(split)

    def _build_ab_pane(self) -> QWidget:
        pane = QWidget()
        v = QVBoxLayout(pane)
        v.setContentsMargins(6, 4, 6, 4)
        v.addWidget(QLabel("<b>A/B test</b>"))
        self.program_label = self._rich(QLabel())
        self.program_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.program_button = QPushButton("Program…")
        self.program_button.setToolTip("Choose the program and how to run it for tests")
        self.program_button.clicked.connect(self.edit_program)
        self.repeats_spin = QSpinBox()
        self.repeats_spin.setRange(2, 100)
        self.repeats_spin.setValue(self.repeats)
        self.repeats_spin.setSuffix(" repeats")
        self.repeats_spin.setToolTip("Runs per side, interleaved baseline / variant")
        self.repeats_spin.valueChanged.connect(lambda n: setattr(self, "repeats", int(n)))
        self.test_button = QPushButton("Test")
        self.test_button.clicked.connect(lambda: self.test(self.state.selected))
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(lambda: self.cancel_test(self.state.selected))
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(True)
        self.run_label = QLabel()
        self.result_label = self._rich(QLabel())
        self.chart = ABChart()
        self.compare_label = self._rich(QLabel())
        self.compare_label.linkActivated.connect(self._on_compare_activated)
        self.apply_button = QPushButton("Apply…")
        self.apply_button.setToolTip("A new run with the experiment's env and arguments; "
                                     "its shell line is copied to the clipboard")
        self.apply_button.clicked.connect(lambda: self.apply(self.state.selected))
        prog = QHBoxLayout()
        prog.addWidget(self.program_label, 1)
        prog.addWidget(self.program_button)
        stated = self._build_stated_row()
        row = QHBoxLayout()
        row.addWidget(self.repeats_spin)
        row.addWidget(self.test_button)
        row.addWidget(self.cancel_button)
        row.addWidget(self.progress, 1)
        bottom = QHBoxLayout()
        bottom.addWidget(self.compare_label, 1)
        bottom.addWidget(self.apply_button)
        v.addLayout(prog)
        v.addLayout(stated)
        v.addLayout(row)
        v.addWidget(self.run_label)
        v.addWidget(self.result_label)
        v.addWidget(self.chart, 10)
        v.addStretch(1)                       # takes the space while the chart is hidden
        v.addLayout(bottom)
        return pane

    def _build_stated_row(self) -> QHBoxLayout:
        """Command and env fields: prefilled from the trace's run; for other traces the
        user states them (like ``hipscope tune --command/--env``)."""
        self.command_edit = QLineEdit()
        self.command_edit.setPlaceholderText("command line of the traced program")
        self.env_edit = QLineEdit()
        self.env_edit.setPlaceholderText("K=V -K …")
        self.env_edit.setToolTip("The environment changes the program ran with (K=V sets, "
                                 "-K unsets): the knob rules read them first")
        self.stated_button = QPushButton("Use")
        self.stated_button.setToolTip("Test this command with this environment, and "
                                       "propose again with it")
        self.stated_button.clicked.connect(self.use_stated)
        row = QHBoxLayout()
        for w, stretch in ((QLabel("Command"), 0), (self.command_edit, 3),
                           (QLabel("Env"), 0), (self.env_edit, 2), (self.stated_button, 0)):
            row.addWidget(w, stretch)
        return row

    def _fill_stated(self, program) -> None:
        self.command_edit.setText(shlex.join(program.command) if program else "")
        self.env_edit.setText(" ".join(f"-{k}" if v is None else shlex.quote(f"{k}={v}")
                                       for k, v in (program.env if program else {}).items()))

    def use_stated(self) -> bool:
        """The command and env in the fields become the program tests run and the run
        the rules read; False (and why, in the status line) when they do not parse."""
        from ..launchers import RunSpec
        from ..launchers.spec import parse_env_changes
        from ..parsers.run_provenance import stated_run

        trace = self.document.trace
        try:
            command = shlex.split(self.command_edit.text())
            env = parse_env_changes(shlex.split(self.env_edit.text()))
            base = self.state.program
            if command:
                self.state.set_program(RunSpec(
                    command, cwd=base.cwd if base else None, env=env,
                    **({"profiler": base.profiler, "target": base.target} if base else {})))
        except ValueError as exc:
            self.status_label.setText(f"Command/Env: {exc}")
            return False
        if trace is not None:
            run = trace.meta.get("run")
            self._propose(trace, trace.with_meta(run=stated_run(
                command or None, env, base={**run, "env": {}} if run else None)))
        return True

    @staticmethod
    def _rich(lab: QLabel) -> QLabel:
        lab.setTextFormat(Qt.TextFormat.RichText)
        lab.setWordWrap(True)
        return lab

    # ---- proposals -----------------------------------------------------------------
    def _on_document_trace_loaded(self, trace) -> None:
        from ..parsers.run_provenance import run_spec

        if self.state.program is None:     # the run's spec: Test works in one click
            self.state.set_program(run_spec(trace.meta.get("run"))
                                   or tx.program_for_trace(trace.meta, self.document.paths))
        self._fill_stated(self.state.program)
        self._propose(trace, trace)

    def _propose(self, trace, seen) -> None:
        """Propose for ``seen`` (``trace`` with what the user stated) in a worker."""
        from ..analysis.context import analyses_of
        from ..tuner.rules import propose

        self.status_label.setText("Looking for proposals…")
        h = self.tasks.submit("propose", lambda progress, cancelled: propose(
            seen, analyses=analyses_of(trace), cancelled=cancelled))
        h.succeeded.connect(lambda props, trace=trace: self._on_proposals(trace, props))
        h.failed.connect(self.status_label.setText)

    def _on_proposals(self, trace, props: list[Proposal]) -> None:
        if trace is not self.document.trace:
            return
        self.state.set_proposals(props)
        if self.state.selected is None and self.state.proposals:
            self.state.select(self.state.proposals[0].id)

    def _on_state_changed(self, event: str, payload) -> None:
        if event == "proposals_changed":
            self._fill_tree()
            self.proposals_ready.emit()
        elif event == "selection_changed":
            self._select_item(payload)
            self._show_details(self.state.selected_proposal)
        elif event == "experiment_changed":
            self._show_record_in_tree(payload)
            if payload.proposal_id == self.state.selected:
                self._show_ab(self.state.selected_proposal)
        elif event == "program_changed":
            self._fill_stated(self.state.program)
            self._show_ab(self.state.selected_proposal)

    def _fill_tree(self) -> None:
        props = self.state.proposals
        self.tree.blockSignals(True)
        self.tree.clear()
        for p in props:
            it = QTreeWidgetItem([p.title, f"{100 * p.estimated_gain_fraction:.1f} %",
                                  p.confidence.level, ""])
            it.setData(0, Qt.ItemDataRole.UserRole, p.id)
            it.setToolTip(0, p.title)
            it.setToolTip(1, f"Estimated gain: {p.estimate_text()}\n{p.formula}")
            it.setToolTip(2, p.confidence.why)
            it.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            it.setForeground(2, pg.mkColor(CONF_COLOURS[p.confidence.level]))
            self.tree.addTopLevelItem(it)
            self._show_record_in_tree(self.state.experiment(p.id))
        self.tree.blockSignals(False)
        n = len(props)
        self.status_label.setText(
            f"{n} proposal{'s' if n != 1 else ''}, best first." if n else
            "No proposals: nothing in this trace points to a knob or code change worth "
            "trying (proposals under 1 % of a step, or of the kernel window, are dropped).")
        self._select_item(self.state.selected)

    def _item(self, pid: str | None) -> QTreeWidgetItem | None:
        for i in range(self.tree.topLevelItemCount()):
            it = self.tree.topLevelItem(i)
            if it.data(0, Qt.ItemDataRole.UserRole) == pid:
                return it
        return None

    def _select_item(self, pid: str | None) -> None:
        it = self._item(pid)
        if it is not None and it is not self.tree.currentItem():
            self.tree.setCurrentItem(it)

    def _on_tree_current_changed(self, cur, _prev) -> None:
        if cur is not None:
            self.state.select(cur.data(0, Qt.ItemDataRole.UserRole))

    def _show_record_in_tree(self, rec: ExperimentRecord) -> None:
        it = self._item(rec.proposal_id)
        if it is None:
            return
        text = STATUS_TEXT[rec.status]
        if rec.status == "running" and rec.progress is not None:
            text = f"{rec.progress:.0%}"
        elif rec.status == "finished" and rec.result is not None:
            text = f"×{rec.result.ratio:.2f} {rec.result.verdict}"
        it.setText(3, text)

    # ---- details -------------------------------------------------------------------
    def _show_details(self, p: Proposal | None) -> None:
        while self.figures.count():
            w = self.figures.takeAt(0).widget()
            if w is not None:
                w.deleteLater()
        self.details.setVisible(p is not None)
        if p is None:
            self._show_ab(None)
            return
        self.title_label.setText(_esc(p.title))
        per = p.estimate.breakdown_text() if p.estimate is not None else ""
        self.estimate_label.setText(
            f"Estimated gain: <b>{_esc(p.estimate_text())}</b>"
            + (f"<br><span style='color:#777'>per GPU / host thread: {_esc(per)}</span>"
               if per else "") + " <span style='color:#777'>(formula in the tooltip)</span>")
        self.estimate_label.setToolTip(p.formula)
        col = CONF_COLOURS[p.confidence.level]
        self.confidence_label.setText(f"Confidence: <b style='color:{col}'>"
                                      f"{p.confidence.level}</b> — {_esc(p.confidence.why)}")
        self._fill_figures(p.evidence.figures)
        links = [f"<a href='ref:{i}'>{_esc(r.label)}</a>{self._ref_place(r)}"
                 for i, r in enumerate(p.evidence.refs)]
        notes = "".join(f"<br>{_esc(n)}" for n in p.evidence.notes)
        self.refs_label.setText(("Show in the timeline:<br>• " + "<br>• ".join(links)
                                 if links else "") + notes)
        self.refs_label.setVisible(bool(links or notes))
        self.experiment_box.setPlainText(experiment_text(p))
        self.note_label.setText(_esc(p.experiment.note or ""))
        self.note_label.setVisible(bool(p.experiment.note))
        docs = "<br>".join(f"<a href='{_esc(c.url)}'>{_esc(c.title)}</a>"
                           + (f" <span style='color:#777'>— {_esc(c.says)}</span>"
                              if c.says else "") for c in p.docs)
        self.docs_label.setText(f"<b>Documentation</b><br>{docs}" if docs else "")
        self._show_ab(p)

    def _fill_figures(self, figures: dict) -> None:
        """Short figures two pairs a row; long text on a row of its own."""
        row, col = 0, 0
        for k, v in figures.items():
            label, text = fmt_figure(k, v)
            long = len(text) > 18
            if long and col:
                row, col = row + 1, 0
            self.figures.addWidget(QLabel(label), row, col)
            val = QLabel(f"<b>{_esc(text)}</b>")
            val.setWordWrap(long)
            val.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.figures.addWidget(val, row, col + 1, 1, 3 if long else 1)
            if long or col:
                row, col = row + 1, 0
            else:
                col = 2

    def _ref_place(self, ref: Ref) -> str:
        """' — at 12.3 ms, 4.56 ms long' for a row reference (same labels read apart)."""
        trace = self.document.trace
        table = getattr(trace, ref.table, None) if trace is not None and ref.table else None
        if table is None or ref.row is None or not 0 <= ref.row < len(table) \
                or not table.has("start"):
            return ""
        t0 = int(table.numpy("start")[ref.row])
        dur = int(table.numpy("end")[ref.row]) - t0 if table.has("end") else None
        base = self.document.full_range()[0]
        more = f", {fmt_duration(dur)} long" if dur is not None else ""
        return f" <span style='color:#777'>at {fmt_duration(t0 - base)}{more}</span>"

    def _on_ref_activated(self, href: str) -> None:
        p = self.state.selected_proposal
        if p is None or not href.startswith("ref:"):
            return
        self.show_ref(p.evidence.refs[int(href[4:])])

    def show_ref(self, ref: Ref) -> None:
        """Point the timeline at ``ref``: select its row and/or show its time range."""
        trace, vs = self.document.trace, self.document.view_state
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

    def _on_copy_clicked(self) -> None:
        QGuiApplication.clipboard().setText(self.experiment_box.toPlainText())

    # ---- A/B test ------------------------------------------------------------------
    def _show_ab(self, p: Proposal | None) -> None:
        prog = self.state.program
        line = shlex.join(prog.command) if prog is not None else ""
        self.program_label.setToolTip(line)
        if len(line) > 110:
            line = line[:107] + "…"
        self.program_label.setText(
            f"Program: <span style='font-family:monospace'>{_esc(line)}</span>"
            + (f" <span style='color:#777'>on {_esc(prog.target.label())}</span>"
               if prog.target.kind != "local" else "")
            if prog is not None else
            "Program: <i>none recorded in the trace</i> — choose one to test experiments")
        rec = self.state.experiment(p.id) if p is not None else None
        runnable, why = self._runnable(p)
        busy = rec is not None and rec.status in ("queued", "running")
        self.test_button.setEnabled(runnable and not busy)
        self.test_button.setToolTip(why or "Run baseline, variant and the baseline again (A/A "
                                    f"control) in interleaved rounds, at least {self.repeats} "
                                    "rounds after a warm-up, until the verdict is decided")
        self.cancel_button.setEnabled(busy)
        self.apply_button.setEnabled(p is not None and prog is not None
                                     and p.experiment.automatic)
        self.progress.setVisible(busy)
        self.progress.setValue(int(1000 * (rec.progress or 0)) if busy else 0)
        self.run_label.setText(_esc(rec.message or "") if rec is not None else "")
        self.run_label.setVisible(bool(rec is not None and rec.message))
        result = rec.result if rec is not None and rec.status == "finished" else None
        self.chart.setVisible(bool(rec is not None and rec.runs))
        if rec is not None and rec.runs:
            self.chart.show_runs(rec.runs)
        self.result_label.setText(self._result_html(result) if result is not None else
                                  ("" if runnable or p is None else _esc(why)))
        pair = self._trace_pair(rec) if result is not None else None
        self.compare_label.setText("<a href='compare'>Open the baseline and variant traces "
                                   "in an aligned comparison</a>" if pair else "")

    def _runnable(self, p: Proposal | None) -> tuple[bool, str]:
        if p is None:
            return False, "Select a proposal."
        if not p.experiment.automatic:
            return False, ("This experiment is a code change: change the program as the "
                           "recipe says, then compare a run of each.")
        if self.state.program is None:
            return False, "Choose the program to run (Program…)."
        why = self.state.program.unrunnable()      # a secret the run folder left out
        return (False, why) if why else (True, "")

    @staticmethod
    def _result_html(r) -> str:
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

    @staticmethod
    def _noise_floor_text(res) -> str | None:
        """The A/A control and drift of a sweep, one line each."""
        lines = []
        c = res.control
        if c is not None:
            lines.append(f"Noise floor (A/A control, the baseline against itself): ratio "
                         f"{c.ratio:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}], {c.verdict}.")
        lines += res.warnings()
        return "\n".join(lines) or None

    @staticmethod
    def _trace_pair(rec: ExperimentRecord) -> list[str] | None:
        """The traces of the baseline and variant runs nearest each side's median."""
        out = []
        for side in (0, 1):
            runs = [r for r in rec.runs if r["side"] == side and r.get("trace_path")]
            if not runs:
                return None
            med = float(np.median([r["wall_s"] for r in runs]))
            out.append(min(runs, key=lambda r: abs(r["wall_s"] - med))["trace_path"])
        return out

    def _on_compare_activated(self, _href: str) -> None:
        rec = self.state.experiment(self.state.selected) if self.state.selected else None
        pair = self._trace_pair(rec) if rec is not None else None
        if pair:
            self.compare_requested.emit(pair)

    def test(self, pid: str | None) -> None:
        """Run the A/B sweep of proposal ``pid`` in a worker (progress and result go
        into the TunerState)."""
        p = self.state.proposal(pid) if pid else None
        ok, why = self._runnable(p)
        if not ok:
            log.info("cannot test %s: %s", pid, why)
            return
        program = self.state.program
        spec = tx.experiment_sweep(p, program, repeats=self.repeats)
        total = spec.max_runs()

        relay = self._bridge.run_measured

        def work(progress, cancelled):
            from ..parsers.base import Cancelled
            from ..tuner.sweep import SweepError, run_sweep

            runner = tx.experiment_runner(p, program, cancelled)

            def on_run(r):      # each kept baseline/variant run shows in the chart as it ends
                if r.variant in (0, 1) and not r.warmup:
                    relay.emit(p.id, {"side": r.variant, "repeat": r.repeat,
                                      "wall_s": r.measurement.wall_s,
                                      "trace_path": r.measurement.trace_path})

            try:
                return run_sweep(spec, runner, progress, cancelled, on_run=on_run)
            except SweepError:
                if cancelled():
                    raise Cancelled() from None
                raise

        self.state.update_experiment(p.id, status="running", progress=0.0, result=None,
                                     runs=[], message=f"0 runs (at most {total})")
        h = self.tasks.submit(f"test:{p.id}", work)
        self._handles[p.id] = h
        h.progressed.connect(lambda f, pid=p.id: self.state.update_experiment(
            pid, progress=f, message=f"{round(f * total)} runs (at most {total}; stops "
                                     "when decided)"))
        h.succeeded.connect(lambda res, pid=p.id: self._on_test_succeeded(pid, res))
        h.failed.connect(lambda msg, pid=p.id: self.state.update_experiment(
            pid, status="failed", message=msg))
        h.cancelled.connect(lambda pid=p.id: self.state.update_experiment(
            pid, status="cancelled", progress=None, message="Cancelled."))
        h.finished.connect(lambda pid=p.id: self._on_test_finished(pid))

    def _on_run_measured(self, pid: str, run: dict) -> None:
        if self.state.proposal(pid) is None or pid not in self._handles:
            return
        rec = self.state.experiment(pid)
        self.state.update_experiment(pid, runs=[*rec.runs, run])

    def _on_test_succeeded(self, pid: str, res) -> None:
        if self.state.proposal(pid) is None:
            return
        keep = {0: 0, 1: 1}                 # baseline, variant (not the A/A control)
        runs = [{"side": keep[r.variant], "repeat": r.repeat,
                 "wall_s": r.measurement.wall_s, "trace_path": r.measurement.trace_path}
                for r in res.runs if r.variant in keep and not r.warmup]
        ab = next(iter(res.comparisons.values()))
        self.state.update_experiment(pid, status="finished", progress=1.0, result=ab,
                                     runs=runs, message=self._noise_floor_text(res))

    def _on_test_finished(self, pid: str) -> None:
        self._handles.pop(pid, None)
        self.experiment_done.emit(pid)

    def cancel_test(self, pid: str | None) -> None:
        h = self._handles.get(pid) if pid else None
        if h is not None:
            h.cancel()
            self.state.update_experiment(pid, message="Cancelling…")

    def is_testing(self) -> bool:
        return bool(self._handles)

    # ---- program and apply -----------------------------------------------------------
    def edit_program(self) -> None:
        """Choose the program tests run: the Run dialog when there is one, else a
        command line."""
        prog = self.state.program
        try:
            from .launch_dialog import LaunchDialog
        except ImportError:
            LaunchDialog = None  # noqa: N806
        if LaunchDialog is not None:
            dlg = LaunchDialog(None, prog, self)
            dlg.setWindowTitle("Program for A/B tests")
            if getattr(dlg, "run_button", None) is not None:
                dlg.run_button.setText("Use")
            if dlg.exec() and getattr(dlg, "result_spec", None) is not None:
                self.state.set_program(dlg.result_spec)
            return
        from ..launchers import RunSpec

        text, ok = QInputDialog.getText(self, "Program for A/B tests", "Command line:",
                                        text=shlex.join(prog.command) if prog else "")
        if ok and text.strip():
            self.state.set_program(RunSpec(shlex.split(text)))

    def apply(self, pid: str | None) -> object | None:
        """The program with ``pid``'s experiment applied: its shell line goes to the
        clipboard and the RunSpec to ``apply_requested`` (the window's Run dialog)."""
        p = self.state.proposal(pid) if pid else None
        if p is None or self.state.program is None or not p.experiment.automatic:
            return None
        spec = tx.applied_spec(p, self.state.program)
        QGuiApplication.clipboard().setText(tx.shell_line(spec))
        self.run_label.setText("Copied the command line with the change to the clipboard.")
        self.run_label.show()
        self.apply_requested.emit(spec)
        return spec

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        self._unsubscribe()
        self.tasks.shutdown()
        super().closeEvent(event)


def _esc(text: str) -> str:
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("'", "&#39;"))
