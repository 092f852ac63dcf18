"""Level of detail for the timeline: the public names of
:mod:`hipscope.analysis.timeline_model`, importable from here as before."""

from __future__ import annotations

from .timeline_model import *  # noqa: F401,F403 (the re-exported public names)
from .timeline_model import __all__  # noqa: F401
