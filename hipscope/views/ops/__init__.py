"""The Ops panel (issue 17): GPU work by the nn.Module and op that launched it."""

from __future__ import annotations

from .panel import OpsPanel

__all__ = ["OpsPanel"]
