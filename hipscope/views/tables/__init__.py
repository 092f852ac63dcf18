"""Tables over numpy columns: kernel summary and all kernels (lazy, sortable, filterable)."""

from .kernels_model import KernelsTableModel
from .summary_model import KernelSummaryModel
from .views import KernelSummaryView, KernelsTableView

__all__ = ["KernelSummaryModel", "KernelSummaryView", "KernelsTableModel", "KernelsTableView"]
