"""`hipscope ranks`: every rank of a multi-node job analysed as Dask tasks; one overview."""

from .discover import discover
from .engine import SlurmOptions, analyse_job
from .model import CollectiveInstance, JobOverview, RankFailure, RankSummary, Straggler

__all__ = ["CollectiveInstance", "JobOverview", "RankFailure", "RankSummary", "SlurmOptions",
           "Straggler", "analyse_job", "discover"]
