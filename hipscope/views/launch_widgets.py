"""Parts of the Run dialog: the profiler option forms, the environment editor and target
detection for Test connection (the SSH host-key question, usable from any thread, is
:class:`hipscope.qt.host_keys.HostKeyAsker`)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..launchers.profilers import ROCPROFV3_FORMATS, ROCPROFV3_TRACES
from ..launchers.spec import Target

log = logging.getLogger(__name__)

FORMS: dict[str, list[tuple[str, str, str, Any]]] = {
    "none": [],
    "rocprofv3": [
        ("traces", "checks", "Traces", (list(ROCPROFV3_TRACES),
                                        ["kernel", "hip", "memory_copy", "marker"])),
        ("pmc", "list", "Counters (--pmc)", "e.g. SQ_WAVES GRBM_GUI_ACTIVE"),
        ("output_format", "checks", "Output format", (list(ROCPROFV3_FORMATS), ["csv"])),
        ("stats", "bool", "Also write statistics (--stats)", False)],
    "rocprof": [
        ("traces", "checks", "Traces", (["hip", "hsa", "sys", "roctx"], ["hip"])),
        ("pmc", "list", "Counters (pmc)", "e.g. SQ_WAVES SQ_INSTS_VALU"),
        ("stats", "bool", "Also write statistics (--stats)", False)],
    "torch": [
        ("wait", "int", "Schedule: wait steps", 1), ("warmup", "int", "Warm-up steps", 1),
        ("active", "int", "Recorded steps", 3), ("repeat", "int", "Cycles (0: until end)", 1),
        ("step_on", "choice", "Step on", ["optimizer", "none"]),
        ("record_shapes", "bool", "Record shapes", False),
        ("profile_memory", "bool", "Profile memory", False),
        ("with_stack", "bool", "With Python stacks", False)],
    "ncu": [
        ("set", "choice", "Section set", ["", "basic", "detailed", "full"]),
        ("sections", "list", "Sections", "e.g. SpeedOfLight Occupancy"),
        ("kernel_regex", "text", "Kernel regex", "only kernels matching"),
        ("launch_count", "int", "Kernels at most (0: all)", 0)],
    "nsys": [("trace", "list", "Trace (--trace)", "cuda,nvtx,osrt")],
}


def ssh_config_hosts(path: str | None = None) -> list[str]:
    """The concrete ``Host`` names of an ssh config (no patterns), sorted."""
    import paramiko

    p = Path(os.path.expanduser(path or "~/.ssh/config"))
    if not p.is_file():
        return []
    try:
        cfg = paramiko.SSHConfig.from_path(str(p))
    except Exception as exc:  # noqa: BLE001 - a broken config only empties the list
        log.info("cannot read %s: %s", p, exc)
        return []
    return sorted(h for h in cfg.get_hostnames() if not any(c in h for c in "*?!"))


def run_detection(target: Target, asker) -> dict[str, Any]:
    """Detect on ``target`` (worker thread): the info, or ``{"error": sentence}``."""
    from ..launchers.detect import detect
    from ..launchers.hosts import LocalHost

    if target.host is None:
        host = LocalHost()
    else:
        from ..launchers.ssh import SSHError, SSHHost

        try:
            host = SSHHost.connect(target, host_key_callback=asker)
        except SSHError as exc:
            return {"error": str(exc)}
    try:
        return detect(host, torch=True)
    except Exception as exc:  # noqa: BLE001 - the link died mid-way: say so
        log.info("detection on %s failed", target.label(), exc_info=True)
        return {"error": f"detection on {target.label()} failed: {exc}"}
    finally:
        host.close()


def describe_detection(info: dict[str, Any]) -> str:
    if "error" in info:
        return info["error"]
    gpus = info.get("gpus") or []
    names: dict[str, int] = {}
    for g in gpus:
        names[g.get("name") or "GPU"] = names.get(g.get("name") or "GPU", 0) + 1
    gtxt = ", ".join(f"{n} × {c}" if c > 1 else n for n, c in names.items()) or "no GPU"
    profs = ", ".join(f"{k} {p.get('version') or ''}".strip()
                      for k, p in (info.get("profilers") or {}).items()) or "none"
    tel = [t for t in ("nvidia-smi", "amd-smi", "rocm-smi") if t in info.get("tools", {})]
    return (f"{info.get('host') or '?'} ({info.get('os') or info.get('kernel') or '?'}): "
            f"{gtxt}; profilers: {profs}; telemetry: {', '.join(tel) or 'none'}")


class ProfilerOptions(QWidget):
    """The option widgets of one profiler, built from :data:`FORMS`."""

    def __init__(self, name: str, parent=None):
        super().__init__(parent)
        self.name = name
        self._get: dict[str, Any] = {}
        self._set: dict[str, Any] = {}
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        for key, kind, label, extra in FORMS[name]:
            w = self._make(key, kind, extra)
            if kind == "bool":
                form.addRow("", w)
            else:
                form.addRow(label + ":", w)
            w.setObjectName(f"opt_{name}_{key}")
            if kind == "bool":
                w.setText(label)
        if not FORMS[name]:
            lab = QLabel("The program runs as it is: its output, exit status, timing and "
                         "(optionally) GPU telemetry are recorded.", self)
            lab.setWordWrap(True)
            lab.setEnabled(False)
            form.addRow(lab)

    def _make(self, key: str, kind: str, extra: Any) -> QWidget:
        if kind == "checks":
            choices, default = extra
            box = QWidget(self)
            grid = QGridLayout(box)
            grid.setContentsMargins(0, 0, 0, 0)
            checks = {}
            for i, c in enumerate(choices):
                cb = QCheckBox(c, box)
                cb.setChecked(c in default)
                cb.setObjectName(f"opt_{self.name}_{key}_{c}")
                grid.addWidget(cb, i // 5, i % 5)
                checks[c] = cb
            self._get[key] = lambda: [c for c, cb in checks.items() if cb.isChecked()]
            self._set[key] = lambda v: [cb.setChecked(c in _words(v)) for c, cb in
                                        checks.items()]
            return box
        if kind in ("list", "text"):
            w = QLineEdit(self)
            w.setPlaceholderText(extra)
            if kind == "list":
                self._get[key] = lambda: _words(w.text())
                self._set[key] = lambda v: w.setText(" ".join(_words(v)))
            else:
                self._get[key] = lambda: w.text().strip()
                self._set[key] = lambda v: w.setText(str(v))
            return w
        if kind == "int":
            w = QSpinBox(self)
            w.setRange(0, 1_000_000)
            w.setValue(extra)
            self._get[key] = w.value
            self._set[key] = lambda v: w.setValue(int(v))
            return w
        if kind == "bool":
            w = QCheckBox(self)
            w.setChecked(extra)
            self._get[key] = w.isChecked
            self._set[key] = lambda v: w.setChecked(bool(v))
            return w
        w = QComboBox(self)                  # "choice"
        for c in extra:
            w.addItem(c or "(default)", c)
        self._get[key] = w.currentData
        self._set[key] = lambda v: w.setCurrentIndex(max(0, w.findData(str(v))))
        return w

    def options(self) -> dict[str, Any]:
        """The options a profiler plug-in takes (empty values left out)."""
        out: dict[str, Any] = {}
        for key, kind, _label, extra in FORMS[self.name]:
            v = self._get[key]()
            if kind == "int" and self.name == "ncu" and v == 0:
                continue
            if v in ("", [], False):
                if kind == "checks" and key == "traces":
                    raise ValueError(f"{self.name}: pick at least one trace")
                if kind == "checks":
                    raise ValueError(f"{self.name}: pick at least one output format")
                continue
            out[key] = v
        return out

    def set_options(self, options: dict[str, Any]) -> None:
        for key, val in options.items():
            if key in self._set:
                self._set[key](val)


def _words(v: Any) -> list[str]:
    if isinstance(v, str):
        return [x for x in v.replace(",", " ").split() if x]
    return [str(x) for x in (v or [])]


class EnvEditor(QWidget):
    """A table of environment changes: name, value, and 'unset' (the value is removed)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.table = QTableWidget(0, 3, self)
        self.table.setHorizontalHeaderLabels(["Variable", "Value", "Unset"])
        self.table.verticalHeader().hide()
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        hh.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        hh.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.table.setColumnWidth(0, 200)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.table.setMinimumHeight(5 * (self.fontMetrics().height() + 8))
        add, rm = QToolButton(self), QToolButton(self)
        add.setText("+")
        add.setToolTip("Add a variable")
        rm.setText("−")
        rm.setToolTip("Remove the selected variables")
        add.clicked.connect(lambda: self.add_row())
        rm.clicked.connect(self.remove_selected)
        self.add_button, self.remove_button = add, rm
        buttons = QVBoxLayout()
        buttons.addWidget(add)
        buttons.addWidget(rm)
        buttons.addStretch(1)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.table, 1)
        lay.addLayout(buttons)

    def add_row(self, name: str = "", value: str | None = "") -> int:
        r = self.table.rowCount()
        self.table.insertRow(r)
        self.table.setItem(r, 0, QTableWidgetItem(name))
        self.table.setItem(r, 1, QTableWidgetItem(value or ""))
        unset = QTableWidgetItem()
        unset.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled)
        unset.setCheckState(Qt.CheckState.Checked if value is None else Qt.CheckState.Unchecked)
        self.table.setItem(r, 2, unset)
        if not name:
            self.table.setCurrentCell(r, 0)
        return r

    def remove_selected(self) -> None:
        for r in sorted({i.row() for i in self.table.selectedIndexes()}, reverse=True):
            self.table.removeRow(r)

    def changes(self) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for r in range(self.table.rowCount()):
            name = (self.table.item(r, 0).text() if self.table.item(r, 0) else "").strip()
            value = self.table.item(r, 1).text() if self.table.item(r, 1) else ""
            unset = self.table.item(r, 2).checkState() == Qt.CheckState.Checked
            if not name:
                if value:
                    raise ValueError(f"environment row {r + 1} has a value but no name")
                continue
            out[name] = None if unset else value
        return out

    def set_changes(self, env: dict[str, str | None]) -> None:
        self.table.setRowCount(0)
        for k, v in env.items():
            self.add_row(k, v)
