"""Stragglers: the ranks that make the others wait, worst first, and the op that
makes the difference.

Wait caused: a rank that arrives last at a collective instance (skew > 0) caused that
instance's whole wait (the sum over ranks of latest minus own arrival); a rank's wait
caused is the sum over the instances where it was last.

The op: for a straggler, the step windows that hold its late arrivals (window i runs
from the start of step i to the start of step i+1 on its GPU clock; a rank without
steps is one window). In those windows, for every launching-op name (a kernel's
short name where it has no op; communication kernels left out, since waiting inflates
them), the straggler's GPU time minus the median of the other ranks' GPU time in the
same window. The op with the largest positive sum is named; none when no op is
heavier on the straggler. Each rank keeps its 32 heaviest names per window, so a name
outside another rank's 32 counts as 0 there.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from .model import CollectiveInstance, Straggler

MAX_NAMED = 10                 # stragglers whose op is looked for (the worst first)

__all__ = ["find_stragglers"]


def find_stragglers(instances: Sequence[CollectiveInstance],
                    step_bounds: Mapping[int, list[int]],
                    step_ops: Mapping[int, list[dict[str, int]]]) -> list[Straggler]:
    """Ranks by the waits they caused (see the module docstring)."""
    waits: dict[int, int] = defaultdict(int)
    count: dict[int, int] = defaultdict(int)
    late: dict[int, list[int]] = defaultdict(list)
    for c in instances:
        if c.skew_ns <= 0:
            continue
        waits[c.last_rank] += c.wait_ns
        count[c.last_rank] += 1
        late[c.last_rank].append(c.arrival_ns[c.last_rank])
    order = sorted(waits, key=lambda r: (-waits[r], r))
    return [Straggler(rank=r, wait_caused_ns=int(waits[r]),
                      op=_op_of(r, late[r], step_bounds, step_ops) if i < MAX_NAMED else None,
                      instances=count[r])
            for i, r in enumerate(order)]


def _window(bounds: list[int], t: int) -> int:
    if not bounds:
        return 0
    return max(0, int(np.searchsorted(np.asarray(bounds, np.int64), t, side="right")) - 1)


def _op_of(rank: int, arrivals: list[int], step_bounds: Mapping[int, list[int]],
           step_ops: Mapping[int, list[dict[str, int]]]) -> str | None:
    mine = step_ops.get(rank) or []
    windows = sorted({_window(step_bounds.get(rank, []), a) for a in arrivals})
    diff: dict[str, float] = defaultdict(float)
    for w in windows:
        if w >= len(mine):
            continue
        others = [ops[w] for r, ops in step_ops.items() if r != rank and w < len(ops)]
        if not others:
            continue
        for name in set(mine[w]).union(*others):
            med = float(np.median([o.get(name, 0) for o in others]))
            diff[name] += mine[w].get(name, 0) - med
    if not diff:
        return None
    name, best = max(diff.items(), key=lambda kv: (kv[1], kv[0]))
    return name if best > 0 else None
