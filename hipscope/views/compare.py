"""The comparison view: two or more runs side by side.

Top: one TimelineView per run, stacked, on one time axis (each run's times relative
to its alignment origin; zoom, pan and kernel selection kept in step by
:class:`~hipscope.qt.compare.TimelineSync`). Bottom: the headline table
(A | B | delta | ratio), the per-kernel diff with the instance table of the selected
kernel, and provenance side by side. A banner says when the core finds the runs not
comparable. The widgets bind to :class:`~hipscope.analysis.compare_state.CompareState`;
work runs in the controller's workers.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ..analysis import compare_state as cs
from ..model.view_state import Selection
from ..analysis.lod import short_name
from .compare_models import (
    HeadlineModel,
    InstanceModel,
    KernelDiffModel,
    ProvenanceModel,
    result_table,
    run_names,
)
from ..qt.compare import CompareController
from .compare_ops import OpsComparePage
from .compare_rules import RulesDialog
from .timeline import TimelineView

ALIGN_LABELS = {"start": "Run starts", "marker": "Marker", "kernel": "Kernel instance",
                "op": "Op instance"}
OP_HINT = "Pick a row of the Ops table and press “Align timelines here”"
BANNER_STYLE = ("QLabel { background: #8a2d2d; color: white; padding: 6px 10px; "
                "font-weight: bold; }")
NOTE_STYLE = "QLabel { background: #6b5a1e; color: white; padding: 4px 10px; }"


class CompareView(QWidget):
    """Comparison of ``controller``'s runs (see module docstring)."""

    def __init__(self, controller: CompareController, parent=None):
        super().__init__(parent)
        self.controller = controller
        self.state = controller.state
        self._last_op: cs.AlignChoice | None = None    # the op aligned at last, if any
        self._build()
        controller.bridge.changed.connect(self._on_state_changed)
        self._following = True

    # ---- construction ------------------------------------------------------------------
    def _build(self) -> None:
        v = QVBoxLayout(self)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(0)
        self.banner = QLabel("", self)
        self.banner.setStyleSheet(BANNER_STYLE)
        self.banner.setWordWrap(True)
        self.banner.hide()
        self.note = QLabel("", self)
        self.note.setStyleSheet(NOTE_STYLE)
        self.note.setWordWrap(True)
        self.note.hide()
        v.addWidget(self.banner)
        v.addWidget(self.note)
        v.addWidget(self._build_controls())
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(self._build_timelines())
        split.addWidget(self._build_tables())
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setChildrenCollapsible(False)
        self.splitter = split
        v.addWidget(split, 1)

    def _build_controls(self) -> QWidget:
        bar = QWidget(self)
        h = QHBoxLayout(bar)
        h.setContentsMargins(6, 4, 6, 4)
        h.addWidget(QLabel("Align at", bar))
        self.align_kind = QComboBox(bar)
        for k in cs.ALIGN_KINDS:
            self.align_kind.addItem(ALIGN_LABELS[k], k)
        self._op_item().setEnabled(False)               # until an Ops-table alignment
        self._op_item().setToolTip(OP_HINT)
        self.align_name = QComboBox(bar)
        self.align_name.setMinimumWidth(260)
        self.align_name.setMaximumWidth(520)
        self.align_name.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.align_n = QSpinBox(bar)
        self.align_n.setRange(1, 10_000_000)
        self.align_n.setPrefix("#")
        self.align_kind.activated.connect(self._on_align_kind_activated)
        self.align_name.activated.connect(self._on_align_edited)
        self.align_n.editingFinished.connect(self._on_align_edited)
        self.b_combo = QComboBox(bar)
        names = run_names(self.controller.paths)
        for i, (lab, p) in enumerate(zip(self.state.labels[1:], names[1:]), 1):
            self.b_combo.addItem(f"A vs {lab}: {p}", i)
        self.b_combo.setVisible(len(self.state.labels) > 2)
        self.b_combo.activated.connect(
            lambda _i: self.state.set_b_index(self.b_combo.currentData()))
        self.delta_check = QCheckBox("Colour kernels by delta", bar)
        self.delta_check.setToolTip("Green: faster than the matched kernel of the other run; "
                                    "red: slower; dark grey: no matched instance")
        self.delta_check.toggled.connect(self.state.set_delta_colours)
        self.class_check = QCheckBox("by class", bar)
        self.class_check.setToolTip("Colour kernels by class (GEMM, attention, …) in every "
                                    "run: the same colours whatever the kernels are called")
        self.class_check.toggled.connect(self._on_class_toggled)
        self.rules_button = QPushButton("Name rules…", bar)
        self.rules_button.setToolTip("Edit how kernel names are normalised for matching")
        self.rules_button.clicked.connect(self.edit_rules)
        self.progress = QProgressBar(bar)
        self.progress.setRange(0, 1000)
        self.progress.setMaximumWidth(160)
        self.progress.hide()
        for w in (self.align_kind, self.align_name, self.align_n):
            h.addWidget(w)
        h.addSpacing(12)
        for w in (self.b_combo, self.delta_check, self.class_check, self.rules_button):
            h.addWidget(w)
        h.addStretch(1)
        h.addWidget(self.progress)
        return bar

    def _build_timelines(self) -> QWidget:
        box = QSplitter(Qt.Orientation.Vertical, self)
        self.timelines: list[TimelineView] = []
        self.timeline_titles: list[QLabel] = []
        for lab, path, name, doc in zip(self.state.labels, self.controller.paths,
                                        run_names(self.controller.paths),
                                        self.controller.documents):
            pane = QWidget(box)
            pv = QVBoxLayout(pane)
            pv.setContentsMargins(0, 0, 0, 0)
            pv.setSpacing(0)
            title = QLabel(f"<b>{lab}</b>  {_html(name)}", pane)
            title.setContentsMargins(8, 2, 8, 2)
            title.setToolTip(str(path))
            tl = TimelineView(doc, pane)
            tl.setMinimumHeight(150)
            pv.addWidget(title)
            pv.addWidget(tl, 1)
            box.addWidget(pane)
            self.timelines.append(tl)
            self.timeline_titles.append(title)
        box.setChildrenCollapsible(False)
        return box

    def _build_tables(self) -> QWidget:
        split = QSplitter(Qt.Orientation.Horizontal, self)
        self.headline_model = HeadlineModel(self)
        self.headline_table = result_table(self.headline_model, split)
        hh = self.headline_table.horizontalHeader()
        hh.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for c in range(1, 5):
            hh.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        self.tabs = QTabWidget(split)
        self.tabs.addTab(self._build_kernel_page(), "Kernels")
        self.ops_page = OpsComparePage(self.tabs)
        self.ops_page.align_requested.connect(
            lambda row, n: self.controller.align_at_op(row, n, self.state.b_index))
        self.tabs.addTab(self.ops_page, "Ops")
        self.provenance_model = ProvenanceModel(self)
        self.provenance_table = result_table(self.provenance_model, self.tabs)
        ph = self.provenance_table.horizontalHeader()
        ph.setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.tabs.addTab(self.provenance_table, "Provenance")
        split.addWidget(self.headline_table)
        split.addWidget(self.tabs)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 5)
        split.setSizes([460, 1100])
        return split

    def _build_kernel_page(self) -> QWidget:
        page = QSplitter(Qt.Orientation.Horizontal, self)
        left = QWidget(page)
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 2, 0, 0)
        self.filter_edit = QLineEdit(left)
        self.filter_edit.setPlaceholderText("Filter kernels by name")
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.textChanged.connect(self.state.set_kernel_filter)
        self.kernel_model = KernelDiffModel(self)
        self.kernel_table = result_table(self.kernel_model, left)
        self.kernel_table.setSortingEnabled(False)
        kh = self.kernel_table.horizontalHeader()
        kh.setSectionsClickable(True)
        kh.setSortIndicatorShown(True)
        kh.sortIndicatorChanged.connect(self.kernel_model.sort)
        kh.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        kh.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.kernel_table.selectionModel().currentRowChanged.connect(
            lambda cur, _prev: self.state.select_kernel(self.kernel_model.name_at(cur.row())))
        lv.addWidget(self.filter_edit)
        lv.addWidget(self.kernel_table, 1)
        right = QWidget(page)
        rv = QVBoxLayout(right)
        rv.setContentsMargins(0, 2, 0, 0)
        self.instance_title = QLabel("Select a kernel to compare its instances.", right)
        self.instance_title.setWordWrap(True)
        self.instance_model = InstanceModel(self)
        self.instance_table = result_table(self.instance_model, right)
        self.instance_table.horizontalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.ResizeToContents)
        self.instance_table.doubleClicked.connect(lambda ix: self.reveal_instance(ix.row()))
        self.instance_table.setToolTip("Double-click: align the timelines at this instance "
                                       "and select it in both runs")
        self.align_instance_button = QPushButton("Align timelines at this instance", right)
        self.align_instance_button.setEnabled(False)
        self.align_instance_button.clicked.connect(self._on_align_instance_clicked)
        self.instance_table.selectionModel().currentRowChanged.connect(
            lambda cur, _p: self.align_instance_button.setEnabled(cur.isValid()))
        rv.addWidget(self.instance_title)
        rv.addWidget(self.instance_table, 1)
        rv.addWidget(self.align_instance_button)
        page.addWidget(left)
        page.addWidget(right)
        page.setStretchFactor(0, 3)
        page.setStretchFactor(1, 2)
        page.setSizes([760, 420])
        return page

    # ---- user intents ----------------------------------------------------------------
    def edit_rules(self) -> None:
        dlg = RulesDialog(self.state.rules_text, self)
        if dlg.exec() == QDialog.DialogCode.Accepted:
            self.state.set_rules_text(dlg.edit.toPlainText())

    def _op_item(self):
        return self.align_kind.model().item(self.align_kind.findData("op"))

    def _on_align_kind_activated(self, _i: int) -> None:
        if self.align_kind.currentData() == "op" and self._last_op is not None:
            self.align_n.setValue(self._last_op.n)     # that op's instance again
        self._fill_align_names()
        self._on_align_edited()

    def _on_align_edited(self) -> None:
        kind = self.align_kind.currentData()
        name = self.align_name.currentData() or ""
        if kind != "start" and not name:
            return
        if kind == "op":                      # the op row is the one aligned at last
            choice = replace(self._last_op, n=self.align_n.value())
        else:
            choice = cs.AlignChoice(kind, name if kind != "start" else "", self.align_n.value())
        if choice != self.state.align:
            self.state.set_align(choice)

    def _on_class_toggled(self, on: bool) -> None:
        if on:
            self.state.set_delta_colours(False)
        elif self.state.delta_colours:
            return                            # delta took over
        for d in self.controller.documents:
            d.view_state.set_color_mode("class" if on else "name")

    def _on_align_instance_clicked(self) -> None:
        row = self.instance_table.currentIndex().row()
        if self.state.kernel is not None and row >= 0:
            self.controller.align_at_instance(self.state.kernel, row + 1)

    def reveal_instance(self, row: int) -> None:
        """Align the timelines at instance ``row`` of the selected kernel and select it
        in run A (the sync selects the matched instance in the others)."""
        inst = self.instance_model.inst
        if inst is not None and 0 <= row < len(inst.a_rows) and self.state.kernel:
            self.controller.align_at_instance(self.state.kernel, row + 1)
            self.controller.documents[0].view_state.select(
                Selection("kernels", int(inst.a_rows[row])))

    # ---- state -> widgets ------------------------------------------------------------
    def _on_state_changed(self, what: str, value) -> None:
        if what in ("result", "b_index"):
            self._show_result()
        elif what == "alignment":
            self._show_alignment()
        elif what == "kernel":
            self._show_kernel()
        elif what == "kernel_filter":
            self.kernel_model.set_filter(value)
            self._select_kernel_row()
        elif what == "busy":
            self.progress.setVisible(bool(value))
            self.progress.setValue(int(1000 * self.state.progress))
        elif what == "error":
            self._show_notes()
        elif what == "align":
            self._show_align_choice()
        elif what == "delta_colours":
            self.delta_check.setChecked(bool(value))
            if value:
                self.class_check.setChecked(False)

    def _show_result(self) -> None:
        c = self.state.comparison
        self.kernel_model.set_diff(c.kernels if c is not None else None)
        self.provenance_model.set_provenance(c.provenance if c is not None else None)
        self.ops_page.set_ops(c.ops if c is not None else None)
        self._show_headline()
        self._fill_align_names()
        self._show_notes()
        self._show_kernel()

    def _show_headline(self) -> None:
        self.headline_model.set_comparison(self.state.comparison, self.state.alignment,
                                           self.state.b_index)

    def _show_notes(self) -> None:
        c = self.state.comparison
        bad = [w for w in (c.warnings if c else []) if w.startswith("not comparable")]
        self.banner.setText("⚠ These runs are not comparable: " + "; ".join(
            w.removeprefix("not comparable: ") for w in bad) if bad else "")
        self.banner.setVisible(bool(c is not None and c.not_comparable))
        notes = [w for w in (c.warnings if c else []) if w not in bad]
        for msg in (self.state.error, self.state.align_error):
            if msg:
                notes.insert(0, msg)
        self.note.setText("\n".join(notes[:6]))
        self.note.setVisible(bool(notes))

    def _show_alignment(self) -> None:
        al = self.state.alignment
        if al is not None:
            for tl, origin, title, lab, name, rng in zip(
                    self.timelines, al.origins, self.timeline_titles, self.state.labels,
                    run_names(self.controller.paths), al.ranges):
                tl.axis_origin = origin
                where = "run start" if al.label == "start" else _html(short_name(rng.label))
                title.setText(f"<b>{lab}</b>  {_html(name)}  <span style='color:#9aa0a8'>"
                              f"— time 0 = {where}</span>")
                tl.update()
        self._show_headline()
        self._show_notes()
        self._show_align_choice()
        self._show_kernel()                  # instance starts are relative to the origins

    def _show_align_choice(self) -> None:
        choice = self.state.align
        if choice.kind == "op":
            self._last_op = choice
            self._op_item().setEnabled(True)
        self.align_kind.setCurrentIndex(max(self.align_kind.findData(choice.kind), 0))
        self._fill_align_names()
        self.align_n.blockSignals(True)
        self.align_n.setValue(choice.n)
        self.align_n.blockSignals(False)

    def _fill_align_names(self) -> None:
        kind, r = self.align_kind.currentData(), self.state.result
        names: list[str] = []
        if r is not None and kind == "marker":
            names = r.markers
        elif r is not None and kind == "kernel":
            c = self.state.comparison
            names = [n for n, s in zip(c.kernels.names, c.kernels.status) if s == "matched"]
        elif kind == "op" and self._last_op is not None:
            names = [self._last_op.name]
        want = self.state.align.name if self.state.align.kind == kind else (
            self.align_name.currentData() or "")
        self.align_name.blockSignals(True)
        self.align_name.clear()
        for i, n in enumerate(names):
            short = short_name(n) if kind == "kernel" else n
            self.align_name.addItem(short if len(short) <= 90 else short[:87] + "…", n)
            self.align_name.setItemData(i, n, Qt.ItemDataRole.ToolTipRole)
        self.align_name.setCurrentIndex(max(self.align_name.findData(want), 0))
        self.align_name.setEnabled(bool(names) and kind != "op")
        self.align_name.setToolTip(OP_HINT if kind == "op" else "")
        self.align_n.setEnabled(kind != "start")
        self.align_name.blockSignals(False)

    def _select_kernel_row(self) -> None:
        name = self.state.kernel
        row = self.kernel_model.row_of(name) if name is not None else -1
        sm = self.kernel_table.selectionModel()
        if row < 0:
            sm.clearSelection()
            return
        ix = self.kernel_model.index(row, 1)
        if self.kernel_table.currentIndex().row() != row:
            sm.blockSignals(True)
            sm.setCurrentIndex(ix, QItemSelectionModel.SelectionFlag.ClearAndSelect
                               | QItemSelectionModel.SelectionFlag.Rows)
            sm.blockSignals(False)
            self.kernel_table.viewport().update()
        self.kernel_table.scrollTo(ix)

    def _show_kernel(self) -> None:
        name, r = self.state.kernel, self.state.result
        self._select_kernel_row()
        if name is None or r is None:
            self.instance_model.set_instances(None)
            self.instance_title.setText("Select a kernel to compare its instances.")
            self.align_instance_button.setEnabled(False)
            return
        b = self.state.b_index
        inst = cs.instances(self.controller.traces, r.matcher, name, b)
        origins = (self.state.alignment.origins if self.state.alignment is not None
                   else self.controller.sync.origins)
        ta, tb = self.controller.traces[0], self.controller.traces[b]
        starts = (ta.kernels.numpy("start")[inst.a_rows] - origins[0],
                  tb.kernels.numpy("start")[inst.b_rows] - origins[b])
        keep = self.instance_table.currentIndex().row()
        same = self.instance_model.inst is not None and self.instance_model.inst.name == name
        self.instance_model.set_instances(inst, starts)
        if same and 0 <= keep < len(inst.a_rows):
            self.instance_table.setCurrentIndex(self.instance_model.index(keep, 0))
        extra = [f"{n} more in {lab}" for n, lab in ((inst.a_unmatched, "A"),
                                                      (inst.b_unmatched, "B")) if n]
        short = short_name(name)
        short = short if len(short) <= 70 else short[:67] + "…"
        self.instance_title.setText(f"<b>{len(inst.a_rows):,} matched instances</b> of "
                                    f"<tt>{_html(short)}</tt>"
                                    + (f" ({', '.join(extra)})" if extra else ""))
        self.instance_title.setToolTip(name)
        self.align_instance_button.setEnabled(self.instance_table.currentIndex().isValid())

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        if not getattr(self, "_sized", False):      # timelines ~60 %, tables the rest
            self._sized = True
            total = max(self.splitter.height(), 400)
            self.splitter.setSizes([int(total * 0.6), total - int(total * 0.6)])

    def closeEvent(self, event) -> None:  # noqa: N802
        if self._following:
            self._following = False
            self.controller.bridge.changed.disconnect(self._on_state_changed)
        for tl in self.timelines:
            tl.close()
        super().closeEvent(event)


def _html(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

