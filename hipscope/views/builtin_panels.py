"""The built-in dock panels of a trace tab, registered with the panel registry.

Adding a panel: a widget built from a Document alone, plus one ``register_panel``
here (or in a plugin's module under the ``hipscope.panels`` entry points); the
contract test in tests/gui/test_panel_contract.py then covers it.
"""

from __future__ import annotations

from typing import cast

from PySide6.QtWidgets import QWidget

from ..qt.commands import Commands
from ..qt.panels import MENU_EXPORT, PanelAction, PanelSpec, register_panel
from .area_table import AreaTableView
from .details import DetailsView
from .diagnostics import DiagnosticsView
from .heatmap import CounterHeatmapView
from .ops import OpsPanel
from .queue_delay import QueueDelayView
from .tables import KernelsTableView, KernelSummaryView
from .tuner_panel import TunerPanel


def _connect_tuner(panel: QWidget, commands: Commands) -> None:
    tuner = cast(TunerPanel, panel)
    tuner.compare_requested.connect(commands.compare)
    tuner.apply_requested.connect(commands.new_run)


def _connect_summary(panel: QWidget, commands: Commands) -> None:
    cast(KernelSummaryView, panel).show_panel_requested.connect(commands.show_panel)


register_panel(PanelSpec("details", "Details", DetailsView, area="bottom", order=10))
register_panel(PanelSpec(
    "summary", "Kernel summary", KernelSummaryView, order=20,
    actions=(PanelAction("export.summary_csv", "Kernel &summary as CSV…", MENU_EXPORT,
                         lambda panel, commands: commands.export_table(panel, "summary")),),
    connect=_connect_summary))
register_panel(PanelSpec("area", "Range", AreaTableView, tabify_with="summary", order=25))
register_panel(PanelSpec(
    "kernels", "All kernels", KernelsTableView, tabify_with="summary", order=30,
    actions=(PanelAction("export.kernels_csv", "All &kernels as CSV…", MENU_EXPORT,
                         lambda panel, commands: commands.export_table(panel, "kernels")),)))
register_panel(PanelSpec("ops", "Ops", OpsPanel, tabify_with="summary", order=35))
register_panel(PanelSpec("queue_delay", "Queue delay", QueueDelayView, tabify_with="summary",
                         order=40))
register_panel(PanelSpec("counters", "Counters", CounterHeatmapView, tabify_with="summary",
                         order=50))
register_panel(PanelSpec("tuner", "Tuner", TunerPanel, tabify_with="summary", order=60,
                         connect=_connect_tuner))
register_panel(PanelSpec("diagnostics", "Diagnostics", DiagnosticsView, tabify_with="summary",
                         order=70))
