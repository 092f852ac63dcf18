"""The Ranks tab (issue 18): one job's ranks at a glance, from a
:class:`~hipscope.ranks.model.JobOverview` (utilisation heatmap, step times, collective
skew, stragglers, per-rank figures, failed ranks); any rank's timeline on a double-click."""

from .charts import SkewChart, StepChart, UtilHeatmap
from .tab import RanksTab
from .view import RanksView

__all__ = ["RanksTab", "RanksView", "SkewChart", "StepChart", "UtilHeatmap"]
