"""The Run dialog: where (local, an SSH host, Slurm), what (command, arguments, working
directory, environment), under which profiler, with which telemetry. Produces a
:class:`~hipscope.launchers.spec.RunSpec`; the window starts it.

**Test connection** runs the launchers' detection in a worker and shows the GPUs and
profilers found (profilers not found are greyed out) or the one-sentence error. An
unknown SSH host key is put to the user (:class:`HostKeyAsker`, a message box with the
fingerprint); a changed key is refused by the core and the refusal is shown.
"""

from __future__ import annotations

import json
import logging
import shlex
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..launchers.spec import ProfilerSpec, RunSpec, SlurmOptions, Target
from ..qt.host_keys import HostKeyAsker
from ..qt.tasks import TaskRunner
from .launch_widgets import (EnvEditor, ProfilerOptions, describe_detection, run_detection,
                             ssh_config_hosts)

__all__ = ["LaunchDialog", "HostKeyAsker", "ssh_config_hosts"]

log = logging.getLogger(__name__)

SETTINGS_KEY = "run/last_spec"
KINDS = (("local", "Local (this machine)"), ("ssh", "SSH host"),
         ("slurm", "Slurm (through a login host)"))
PROFILER_LABELS = {"none": "None (output, timing, telemetry)", "rocprofv3": "rocprofv3",
                   "rocprof": "rocprof (legacy v1)", "torch": "PyTorch profiler",
                   "ncu": "Nsight Compute (ncu)", "nsys": "Nsight Systems (nsys)"}
#: per profiler: (option key, widget kind, label, choices/default)

class LaunchDialog(QDialog):
    """Signals: ``detection_finished(dict)`` after Test connection (``error`` on failure)."""

    detection_finished = Signal(dict)

    def __init__(self, settings=None, spec: RunSpec | None = None, parent=None):
        super().__init__(parent)
        self.setWindowTitle("New run")
        self.setObjectName("launch_dialog")
        self.settings = settings
        self.result_spec: RunSpec | None = None        # set when accepted
        self.runner = TaskRunner(self, max_threads=1)
        self.asker = HostKeyAsker(self)
        self.detected: dict[str, Any] | None = None
        self._detect_handle = None
        v = QVBoxLayout(self)
        v.addWidget(self._build_target_box())
        v.addWidget(self._build_program_box())
        v.addWidget(self._build_profiler_box())
        v.addWidget(self._build_telemetry_row())
        self.error_label = QLabel("", self)
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #d9534f;")
        self.error_label.hide()
        v.addWidget(self.error_label)
        self.buttons = QDialogButtonBox(self)
        self.run_button = self.buttons.addButton("Run", QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        v.addWidget(self.buttons)
        self._on_kind_changed()
        self._on_profiler_changed()
        if spec is None:
            spec = self.last_spec()
        if spec is not None:
            self.set_spec(spec)
        self.resize(760, 0)

    # ---- construction --------------------------------------------------------------
    def _build_target_box(self) -> QGroupBox:
        box = QGroupBox("Target", self)
        form = QFormLayout(box)
        self.kind_combo = QComboBox(box)
        for k, label in KINDS:
            self.kind_combo.addItem(label, k)
        self.kind_combo.currentIndexChanged.connect(self._on_kind_changed)
        self.host_combo = QComboBox(box)
        self.host_combo.setEditable(True)
        self.host_combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.host_combo.lineEdit().setPlaceholderText("a Host of ~/.ssh/config, or USER@HOST:PORT")
        self.host_combo.currentTextChanged.connect(self._on_target_edited)
        self.ssh_config_edit = QLineEdit(box)
        self.ssh_config_edit.setPlaceholderText("~/.ssh/config")
        self.ssh_config_edit.editingFinished.connect(self._reload_hosts)
        self.remote_dir_edit = QLineEdit(".hipscope/runs", box)
        self.remote_dir_edit.setToolTip("Run folders on the target (relative: to the remote "
                                        "home; Slurm: must be on a shared file system)")
        self.test_button = QPushButton("Test connection", box)
        self.test_button.setToolTip("Connect, and list the GPUs and profilers the target has")
        self.test_button.clicked.connect(self.test_connection)
        self.detect_label = QLabel("", box)
        self.detect_label.setWordWrap(True)
        self.detect_label.setMinimumWidth(480)      # wraps at the dialog's width, not 160 px
        self.detect_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        host_row = QHBoxLayout()
        host_row.addWidget(self.host_combo, 1)
        host_row.addWidget(self.test_button)
        form.addRow("Run on:", self.kind_combo)
        self.host_label = QLabel("Host:", box)
        form.addRow(self.host_label, host_row)
        form.addRow("", self.detect_label)
        self.ssh_config_label = QLabel("SSH config:", box)
        form.addRow(self.ssh_config_label, self.ssh_config_edit)
        self.remote_dir_label = QLabel("Remote run folders:", box)
        form.addRow(self.remote_dir_label, self.remote_dir_edit)
        self.slurm_box = self._build_slurm_box(box)
        form.addRow(self.slurm_box)
        self._target_form = form
        self._reload_hosts()
        return box

    def _build_slurm_box(self, parent) -> QWidget:
        w = QWidget(parent)
        g = QGridLayout(w)
        g.setContentsMargins(0, 0, 0, 0)
        self.slurm_spins = {}
        for i, (key, label) in enumerate((("nodes", "Nodes"), ("ntasks", "Tasks"),
                                          ("gpus_per_task", "GPUs/task"))):
            s = QSpinBox(w)
            s.setRange(0, 100_000)
            s.setSpecialValueText("default")
            s.setObjectName(f"slurm_{key}")
            g.addWidget(QLabel(label + ":", w), 0, 2 * i)
            g.addWidget(s, 0, 2 * i + 1)
            self.slurm_spins[key] = s
        self.slurm_edits = {}
        for i, (key, label, ph) in enumerate((("partition", "Partition", "default"),
                                              ("account", "Account", "default"),
                                              ("time", "Time limit", "00:30:00"))):
            e = QLineEdit(w)
            e.setPlaceholderText(ph)
            e.setObjectName(f"slurm_{key}")
            g.addWidget(QLabel(label + ":", w), 1, 2 * i)
            g.addWidget(e, 1, 2 * i + 1)
            self.slurm_edits[key] = e
        return w

    def _build_program_box(self) -> QGroupBox:
        box = QGroupBox("Program", self)
        form = QFormLayout(box)
        self.program_edit = QLineEdit(box)
        self.program_edit.setPlaceholderText("program, e.g. ./app or python3")
        browse = QToolButton(box)
        browse.setText("…")
        browse.setToolTip("Pick a program on this machine")
        browse.clicked.connect(self._browse_program)
        self.browse_program_button = browse
        row = QHBoxLayout()
        row.addWidget(self.program_edit, 1)
        row.addWidget(browse)
        self.args_edit = QLineEdit(box)
        self.args_edit.setPlaceholderText("arguments, shell-quoted: -n 10 --name 'a b'")
        self.cwd_edit = QLineEdit(box)
        self.cwd_edit.setPlaceholderText("working directory (empty: the current one / "
                                         "the remote home)")
        browse_cwd = QToolButton(box)
        browse_cwd.setText("…")
        browse_cwd.clicked.connect(self._browse_cwd)
        self.browse_cwd_button = browse_cwd
        cwd_row = QHBoxLayout()
        cwd_row.addWidget(self.cwd_edit, 1)
        cwd_row.addWidget(browse_cwd)
        self.name_edit = QLineEdit(box)
        self.name_edit.setPlaceholderText("optional: names the run folder")
        self.env_editor = EnvEditor(box)
        form.addRow("Command:", row)
        form.addRow("Arguments:", self.args_edit)
        form.addRow("Working dir:", cwd_row)
        form.addRow("Environment:", self.env_editor)
        form.addRow("Run name:", self.name_edit)
        return box

    def _build_profiler_box(self) -> QGroupBox:
        box = QGroupBox("Profiler", self)
        v = QVBoxLayout(box)
        self.profiler_combo = QComboBox(box)
        self.option_pages: dict[str, ProfilerOptions] = {}
        self.option_stack = QStackedWidget(box)
        for name, label in PROFILER_LABELS.items():
            self.profiler_combo.addItem(label, name)
            page = ProfilerOptions(name, self.option_stack)
            self.option_pages[name] = page
            self.option_stack.addWidget(page)
        self.profiler_combo.currentIndexChanged.connect(self._on_profiler_changed)
        self.option_stack.currentChanged.connect(self._fit_option_stack)
        self.profiler_warning = QLabel("", box)
        self.profiler_warning.setStyleSheet("color: #d08a00;")
        self.profiler_warning.setWordWrap(True)
        self.executable_edit = QLineEdit(box)
        self.executable_edit.setPlaceholderText("default: found on the target's PATH")
        self.extra_args_edit = QLineEdit(box)
        self.extra_args_edit.setPlaceholderText("more of the profiler's own options")
        top = QFormLayout()
        top.addRow("Profiler:", self.profiler_combo)
        v.addLayout(top)
        v.addWidget(self.profiler_warning)
        v.addWidget(self.option_stack)
        self.tool_form = QWidget(box)
        tf = QFormLayout(self.tool_form)
        tf.setContentsMargins(0, 0, 0, 0)
        tf.addRow("Executable:", self.executable_edit)
        tf.addRow("Extra options:", self.extra_args_edit)
        v.addWidget(self.tool_form)
        self.set_available_profilers(None)
        return box

    def _build_telemetry_row(self) -> QWidget:
        w = QWidget(self)
        h = QHBoxLayout(w)
        h.setContentsMargins(0, 0, 0, 0)
        self.telemetry_check = QCheckBox("Record GPU telemetry every", w)
        self.telemetry_check.setToolTip("nvidia-smi / amd-smi / rocm-smi on the target: "
                                        "utilisation, memory, power, temperature, clocks")
        self.telemetry_spin = QDoubleSpinBox(w)
        self.telemetry_spin.setRange(0.05, 3600)
        self.telemetry_spin.setDecimals(2)
        self.telemetry_spin.setValue(1.0)
        self.telemetry_spin.setSuffix(" s")
        self.telemetry_check.toggled.connect(self.telemetry_spin.setEnabled)
        self.telemetry_check.setChecked(True)
        h.addWidget(self.telemetry_check)
        h.addWidget(self.telemetry_spin)
        h.addStretch(1)
        return w

    # ---- reactions -----------------------------------------------------------------
    def _kind(self) -> str:
        return self.kind_combo.currentData()

    def _on_kind_changed(self, *_a) -> None:
        kind = self._kind()
        remote = kind != "local"
        for w in (self.host_label, self.host_combo, self.ssh_config_label,
                  self.ssh_config_edit, self.remote_dir_label, self.remote_dir_edit):
            w.setVisible(remote)
        self.slurm_box.setVisible(kind == "slurm")
        self.host_combo.lineEdit().setPlaceholderText(
            "login host (empty: sbatch on this machine)" if kind == "slurm"
            else "a Host of ~/.ssh/config, or USER@HOST:PORT")
        self.browse_program_button.setEnabled(not remote)
        self.browse_cwd_button.setEnabled(not remote)
        self._on_target_edited()
        self.adjustSize()

    def _on_target_edited(self, *_a) -> None:
        """Another target: what was detected no longer applies."""
        if self.detected is not None:
            self.set_available_profilers(None)
            self.detected = None
            self.detect_label.setText("")

    def _reload_hosts(self) -> None:
        cur = self.host_combo.currentText()
        self.host_combo.blockSignals(True)
        self.host_combo.clear()
        self.host_combo.addItems(ssh_config_hosts(self.ssh_config_edit.text().strip() or None))
        self.host_combo.setEditText(cur)
        self.host_combo.blockSignals(False)

    def _on_profiler_changed(self, *_a) -> None:
        name = self.profiler_combo.currentData()
        self.option_stack.setCurrentWidget(self.option_pages[name])
        self.tool_form.setVisible(name not in ("none",))
        self.executable_edit.setEnabled(name != "torch")
        self._update_profiler_warning()

    def _fit_option_stack(self, *_a) -> None:
        """The stack as tall as the current page (not the tallest one)."""
        from PySide6.QtWidgets import QSizePolicy

        cur = self.option_stack.currentWidget()
        for page in self.option_pages.values():
            pol = QSizePolicy.Policy.Preferred if page is cur else QSizePolicy.Policy.Ignored
            page.setSizePolicy(QSizePolicy.Policy.Preferred, pol)
        self.option_stack.adjustSize()
        self.adjustSize()

    def _update_profiler_warning(self) -> None:
        i = self.profiler_combo.currentIndex()
        item = self.profiler_combo.model().item(i)
        self.profiler_warning.setText("" if item is None or item.isEnabled() else
                                      f"{self.profiler_combo.currentText()} was not found on "
                                      "the target; give its executable below, or pick another.")
        self.profiler_warning.setVisible(bool(self.profiler_warning.text()))

    def set_available_profilers(self, found: set[str] | None) -> None:
        """Enable the profilers ``found`` on the target (None: not tested yet)."""
        model = self.profiler_combo.model()
        for i in range(self.profiler_combo.count()):
            name = self.profiler_combo.itemData(i)
            ok = found is None or name == "none" or name in found
            model.item(i).setEnabled(ok)
            tip = "" if found is not None and ok else (
                "not checked yet: Test connection lists what the target has"
                if found is None else f"{name} was not found on the target")
            self.profiler_combo.setItemData(i, tip or None, Qt.ItemDataRole.ToolTipRole)
        self._update_profiler_warning()

    def _browse_program(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Program to run", self.cwd_edit.text())
        if path:
            self.program_edit.setText(path)

    def _browse_cwd(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Working directory", self.cwd_edit.text())
        if path:
            self.cwd_edit.setText(path)

    # ---- test connection -------------------------------------------------------------
    def test_connection(self) -> None:
        try:
            target = self.target()
        except ValueError as exc:
            self._show_detection({"error": str(exc)})
            return
        self.test_button.setEnabled(False)
        self.detect_label.setStyleSheet("")
        self.detect_label.setText(f"Connecting to {target.label()}…")
        asker = self.asker
        h = self.runner.submit("detect", lambda _p, _c: run_detection(target, asker))
        h.succeeded.connect(self._show_detection)
        h.failed.connect(lambda msg: self._show_detection({"error": msg}))
        h.finished.connect(lambda: self.test_button.setEnabled(True))
        self._detect_handle = h

    def _show_detection(self, info: dict) -> None:
        ok = "error" not in info
        self.detect_label.setStyleSheet("" if ok else "color: #d9534f;")
        self.detect_label.setText(("✔ " if ok else "✖ ") + describe_detection(info))
        self.detected = info if ok else None
        self.set_available_profilers(set(info.get("profilers") or {}) if ok else None)
        self.detection_finished.emit(info)

    # ---- the spec --------------------------------------------------------------------
    def target(self) -> Target:
        kind = self._kind()
        if kind == "local":
            return Target("local")
        from ..launchers.spec import parse_target

        text = self.host_combo.currentText().strip()
        if kind == "ssh" and not text:
            raise ValueError("an SSH target needs a host: pick one of ~/.ssh/config or type "
                             "USER@HOST:PORT")
        t = parse_target(("slurm:" + text) if kind == "slurm" and text else
                         ("slurm" if kind == "slurm" else text))
        t.ssh_config = self.ssh_config_edit.text().strip() or None
        t.remote_dir = self.remote_dir_edit.text().strip() or ".hipscope/runs"
        if kind == "slurm":
            t.slurm = SlurmOptions(
                **{k: (s.value() or None) for k, s in self.slurm_spins.items()},
                **{k: (e.text().strip() or None) for k, e in self.slurm_edits.items()})
        return t

    def spec(self) -> RunSpec:
        """The RunSpec the form describes; ValueError with one sentence when it is wrong."""
        program = self.program_edit.text().strip()
        if not program:
            raise ValueError("give the program to run")
        try:
            args = shlex.split(self.args_edit.text())
        except ValueError as exc:
            raise ValueError(f"the arguments cannot be split: {exc}") from None
        name = self.profiler_combo.currentData()
        options = self.option_pages[name].options()
        if name != "none":
            exe = self.executable_edit.text().strip()
            if exe and name != "torch":
                options["executable"] = exe
            try:
                extra = shlex.split(self.extra_args_edit.text())
            except ValueError as exc:
                raise ValueError(f"the extra profiler options cannot be split: {exc}") from None
            if extra:
                options["extra_args"] = extra
        interval = self.telemetry_spin.value() if self.telemetry_check.isChecked() else None
        return RunSpec([program, *args], cwd=self.cwd_edit.text().strip() or None,
                       env=self.env_editor.changes(), profiler=ProfilerSpec(name, options),
                       target=self.target(), telemetry_interval=interval,
                       name=self.name_edit.text().strip() or None)

    def set_spec(self, spec: RunSpec) -> None:
        t = spec.target
        self.kind_combo.setCurrentIndex(max(0, self.kind_combo.findData(t.kind)))
        self.ssh_config_edit.setText(t.ssh_config or "")
        self._reload_hosts()
        host = t.host or ""
        if host and (t.user or t.port):
            host = f"{t.user + '@' if t.user else ''}{host}{':' + str(t.port) if t.port else ''}"
        self.host_combo.setEditText(host)
        self.remote_dir_edit.setText(t.remote_dir)
        for k, s in self.slurm_spins.items():
            s.setValue(getattr(t.slurm, k) or 0)
        for k, e in self.slurm_edits.items():
            e.setText(getattr(t.slurm, k) or "")
        self.program_edit.setText(spec.command[0])
        self.args_edit.setText(shlex.join(spec.command[1:]))
        self.cwd_edit.setText(spec.cwd or "")
        self.name_edit.setText(spec.name or "")
        self.env_editor.set_changes(spec.env)
        name = spec.profiler.name if spec.profiler.name in PROFILER_LABELS else "none"
        self.profiler_combo.setCurrentIndex(self.profiler_combo.findData(name))
        opts = dict(spec.profiler.options)
        exe = opts.pop("executable", "")
        self.executable_edit.setText(shlex.join(exe) if isinstance(exe, list) else exe or "")
        self.extra_args_edit.setText(shlex.join(str(a) for a in opts.pop("extra_args", [])))
        self.option_pages[name].set_options(opts)
        self.telemetry_check.setChecked(spec.telemetry_interval is not None)
        if spec.telemetry_interval is not None:
            self.telemetry_spin.setValue(spec.telemetry_interval)

    # ---- settings, accept, close -----------------------------------------------------
    def last_spec(self) -> RunSpec | None:
        if self.settings is None:
            return None
        raw = self.settings.store.value(SETTINGS_KEY, "")
        try:
            return RunSpec.from_json(json.loads(raw)) if raw else None
        except (ValueError, TypeError) as exc:
            log.info("ignoring the saved run spec: %s", exc)
            return None

    def accept(self) -> None:
        try:
            spec = self.spec()
        except ValueError as exc:
            self.error_label.setText(str(exc))
            self.error_label.show()
            return
        if self.settings is not None:      # the spec holds no secret: no passwords exist
            self.settings.store.setValue(SETTINGS_KEY, json.dumps(spec.to_json()))
            self.settings.store.sync()
        self.result_spec = spec
        self._shutdown()
        super().accept()

    def reject(self) -> None:
        self._shutdown()
        super().reject()

    def done(self, r: int) -> None:
        self._shutdown()
        super().done(r)

    def _shutdown(self) -> None:
        self.asker.shutdown()
        if self._detect_handle is not None:
            self._detect_handle.cancel()
        self.runner.shutdown()
