"""Tuner panel: the open trace's proposals (best first), their evidence linked to the
timeline, the experiment, and an A/B **Test** of it on real runs.

The panel draws a :class:`~hipscope.tuner.state.TunerState` (proposals, selection,
program, experiment records) that its :class:`~hipscope.qt.tuner.TunerController`
fills (proposals and A/B tests in workers; all tuning logic lives in
``hipscope.tuner``); texts and the chart are in :mod:`.tuner_parts`. Evidence links
change the document's ViewState (selection / window), so the timeline follows.
Signals: ``proposals_ready`` (after a trace's proposals are shown),
``experiment_done(str)`` (proposal id, any outcome), ``compare_requested(list)`` (paths:
baseline and variant traces, for the window's comparison tab), ``apply_requested(object)``
(the RunSpec with the experiment applied).
"""

from __future__ import annotations

import logging
import shlex

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
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

from ..qt.document import Document
from ..qt.tuner import TunerController
from ..tuner.proposals import Proposal, Ref
from ..tuner.state import ExperimentRecord, TunerState
from .launch_dialog import LaunchDialog
from .tuner_parts import (
    CONF_COLOURS,
    STATUS_TEXT,
    esc,
    experiment_text,
    fill_figures,
    ref_place,
    result_html,
    reveal_window,
    show_ref,
    trace_pair,
)

__all__ = ["TunerPanel", "reveal_window"]

log = logging.getLogger(__name__)


class TunerPanel(QWidget):
    """Proposals of a Document's trace and their A/B tests, bound to a TunerState."""

    proposals_ready = Signal()
    experiment_done = Signal(str)
    compare_requested = Signal(list)
    apply_requested = Signal(object)

    def __init__(self, document: Document, state: TunerState | None = None, parent=None):
        super().__init__(parent)
        self.document = document
        self.controller = TunerController(document, state, self)
        self.state = self.controller.state
        self.tasks = self.controller.tasks
        self.controller.bridge.changed.connect(self._on_state_changed,
                                               Qt.ConnectionType.QueuedConnection)
        self.controller.experiment_done.connect(self.experiment_done)
        self._build()
        self.controller.status.connect(self.status_label.setText)
        document.trace_loaded.connect(self._on_document_trace_loaded)
        if document.trace is not None:
            self._on_document_trace_loaded(document.trace)
        self._show_details(None)

    @property
    def repeats(self) -> int:
        return self.controller.repeats

    @repeats.setter
    def repeats(self, n: int) -> None:
        self.controller.repeats = int(n)

    def test(self, pid: str | None) -> None:
        self.controller.test(pid)

    def cancel_test(self, pid: str | None) -> None:
        self.controller.cancel_test(pid)

    def is_testing(self) -> bool:
        return self.controller.is_testing()

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

        scroll = self._build_details()

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

    def _build_details(self) -> QScrollArea:
        """The selected proposal: title, estimate, evidence, experiment, docs."""
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
        return scroll

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
        self._chart = None
        self._chart_box = QWidget()             # the chart goes in at the first test shown
        QVBoxLayout(self._chart_box).setContentsMargins(0, 0, 0, 0)
        self._chart_box.setVisible(False)
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
        v.addWidget(self._chart_box, 10)
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
        error = self.controller.use_stated(self.command_edit.text(), self.env_edit.text())
        if error:
            self.status_label.setText(error)
        return not error

    @property
    def chart(self):
        """The A/B chart of the test shown (built at the first one: pyqtgraph)."""
        if self._chart is None:
            from .ab_chart import ABChart

            self._chart = ABChart(self._chart_box)
            self._chart_box.layout().addWidget(self._chart)
        return self._chart

    @staticmethod
    def _rich(lab: QLabel) -> QLabel:
        lab.setTextFormat(Qt.TextFormat.RichText)
        lab.setWordWrap(True)
        return lab

    # ---- proposals -----------------------------------------------------------------
    def _on_document_trace_loaded(self, trace) -> None:
        from ..parsers.run_provenance import run_spec
        from ..tuner import experiment as tx  # after the first frame, not at start-up

        if self.state.program is None:     # the run's spec: Test works in one click
            self.state.set_program(run_spec(trace.meta.get("run"))
                                   or tx.program_for_trace(trace.meta, self.document.paths))
        self._fill_stated(self.state.program)
        self.controller.propose(trace, trace)

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
            it.setForeground(2, QColor(CONF_COLOURS[p.confidence.level]))
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
        self.title_label.setText(esc(p.title))
        per = p.estimate.breakdown_text() if p.estimate is not None else ""
        self.estimate_label.setText(
            f"Estimated gain: <b>{esc(p.estimate_text())}</b>"
            + (f"<br><span style='color:#777'>per GPU / host thread: {esc(per)}</span>"
               if per else "") + " <span style='color:#777'>(formula in the tooltip)</span>")
        self.estimate_label.setToolTip(p.formula)
        col = CONF_COLOURS[p.confidence.level]
        self.confidence_label.setText(f"Confidence: <b style='color:{col}'>"
                                      f"{p.confidence.level}</b> — {esc(p.confidence.why)}")
        fill_figures(self.figures, p.evidence.figures)
        links = [f"<a href='ref:{i}'>{esc(r.label)}</a>{ref_place(self.document, r)}"
                 for i, r in enumerate(p.evidence.refs)]
        notes = "".join(f"<br>{esc(n)}" for n in p.evidence.notes)
        self.refs_label.setText(("Show in the timeline:<br>• " + "<br>• ".join(links)
                                 if links else "") + notes)
        self.refs_label.setVisible(bool(links or notes))
        self.experiment_box.setPlainText(experiment_text(p))
        self.note_label.setText(esc(p.experiment.note or ""))
        self.note_label.setVisible(bool(p.experiment.note))
        docs = "<br>".join(f"<a href='{esc(c.url)}'>{esc(c.title)}</a>"
                           + (f" <span style='color:#777'>— {esc(c.says)}</span>"
                              if c.says else "") for c in p.docs)
        self.docs_label.setText(f"<b>Documentation</b><br>{docs}" if docs else "")
        self._show_ab(p)

    def _on_ref_activated(self, href: str) -> None:
        p = self.state.selected_proposal
        if p is None or not href.startswith("ref:"):
            return
        self.show_ref(p.evidence.refs[int(href[4:])])

    def show_ref(self, ref: Ref) -> None:
        """Point the timeline at ``ref``: select its row and/or show its time range."""
        show_ref(self.document, ref)

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
            f"Program: <span style='font-family:monospace'>{esc(line)}</span>"
            + (f" <span style='color:#777'>on {esc(prog.target.label())}</span>"
               if prog.target.kind != "local" else "")
            if prog is not None else
            "Program: <i>none recorded in the trace</i> — choose one to test experiments")
        rec = self.state.experiment(p.id) if p is not None else None
        runnable, why = self.controller.runnable(p)
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
        self.run_label.setText(esc(rec.message or "") if rec is not None else "")
        self.run_label.setVisible(bool(rec is not None and rec.message))
        result = rec.result if rec is not None and rec.status == "finished" else None
        self._chart_box.setVisible(bool(rec is not None and rec.runs))
        if rec is not None and rec.runs:
            self.chart.show_runs(rec.runs)
        self.result_label.setText(result_html(result) if result is not None else
                                  ("" if runnable or p is None else esc(why)))
        pair = trace_pair(rec) if result is not None else None
        self.compare_label.setText("<a href='compare'>Open the baseline and variant traces "
                                   "in an aligned comparison</a>" if pair else "")

    def _on_compare_activated(self, _href: str) -> None:
        rec = self.state.experiment(self.state.selected) if self.state.selected else None
        pair = trace_pair(rec) if rec is not None else None
        if pair:
            self.compare_requested.emit(pair)

    # ---- program and apply -----------------------------------------------------------
    def edit_program(self) -> None:
        """Choose the program tests run, in the Run dialog."""
        dlg = LaunchDialog(None, self.state.program, self)
        dlg.setWindowTitle("Program for A/B tests")
        dlg.run_button.setText("Use")
        if dlg.exec() and dlg.result_spec is not None:
            self.state.set_program(dlg.result_spec)

    def apply(self, pid: str | None) -> object | None:
        """The program with ``pid``'s experiment applied: its shell line goes to the
        clipboard and the RunSpec to ``apply_requested`` (the window's Run dialog)."""
        p = self.state.proposal(pid) if pid else None
        if p is None or self.state.program is None or not p.experiment.automatic:
            return None
        from ..tuner import experiment as tx

        spec = tx.applied_spec(p, self.state.program)
        QGuiApplication.clipboard().setText(tx.shell_line(spec))
        self.run_label.setText("Copied the command line with the change to the clipboard.")
        self.run_label.show()
        self.apply_requested.emit(spec)
        return spec

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        self.controller.shutdown()
        super().closeEvent(event)
