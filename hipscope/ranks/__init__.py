"""`hipscope ranks`: every rank of a multi-node job analysed as Dask tasks; one overview."""

from .model import CollectiveInstance, JobOverview, RankFailure, RankSummary, Straggler

__all__ = ["CollectiveInstance", "JobOverview", "RankFailure", "RankSummary", "Straggler"]
