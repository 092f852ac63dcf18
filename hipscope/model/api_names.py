"""API-name classes, one home: which host API calls launch kernels, launch graphs, block
the host until the GPU is done (sync) or copy memory. The queue delay, idle breakdown,
launch statistics, sanity checks, the kernels table and the tuner all classify names
here, so a call is never a launch to one analysis and not to another. Qt-free.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

LAUNCH_RE = re.compile(r"(launchkernel|launchcooperativekernel|modulelaunch|graphlaunch|"
                       r"cudalaunch|culaunch|hiplaunch)", re.IGNORECASE)
GRAPH_LAUNCH_MARKERS = ("graphlaunch",)
SYNC_RE = re.compile(
    r"(synchronize|^(cuda|hip|cu)memcpy(?!.*async)(htod|dtoh|dtod|2d|3d|peer|toarray|fromarray)?"
    r"(_v2)?$|^(cuda|hip)memset(?!.*async)(d8|d16|d32)?$)",
    re.IGNORECASE)
COPY_RE = re.compile(r"(memcpy|memset|copy)", re.IGNORECASE)
SYNC_DOMAINS = ("cuda_sync",)


def is_launch(name: str) -> bool:
    """A call that queues a kernel or a graph (hipLaunchKernel, cudaGraphLaunch, ...)."""
    return bool(LAUNCH_RE.search(name))


def is_graph_launch(name: str) -> bool:
    """hipGraphLaunch, cudaGraphLaunch, cuGraphLaunch: its kernels are not each queued."""
    low = name.lower()
    return any(m in low for m in GRAPH_LAUNCH_MARKERS)


def is_sync_call(name: str, domain: str = "") -> bool:
    """True for calls during which the host thread blocks until the GPU is done."""
    if domain in SYNC_DOMAINS:
        return True
    return bool(SYNC_RE.search(name.replace(" ", "")))


def is_copy(name: str) -> bool:
    """A memory copy or set call (blocking or not)."""
    return bool(COPY_RE.search(name))


def per_code(names: Sequence[str], test: Callable[[str], bool]) -> np.ndarray:
    """``test`` of each category name, plus False for code -1 (no name): index it with
    a table's name codes to classify every row at the cost of the distinct names."""
    return np.array([bool(test(n)) for n in names] + [False], dtype=bool)
