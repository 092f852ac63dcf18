"""The column path of the reader: the C column walk, then the numpy tables; None (and
the reader takes the record walk) where either declines. ``HIPSCOPE_PFTRACE_COLUMNS=0``
switches it off (the record walk in C then reads every file)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from ...model import Trace
from ..base import TraceFormatError, check_cancel
from .colbuild import build_columns
from .colwalk import Declined, walk_columns
from .fast import _pftscan

log = logging.getLogger(__name__)


# the column tables' C passes: an extension built from older sources lacks some, and
# the record walk (which needs only ``walk``) reads the file then
NEEDS = ("walk", "place_ints", "factorize", "flows", "ended")


def enabled() -> bool:
    return os.environ.get("HIPSCOPE_PFTRACE_COLUMNS", "1") != "0" and \
        all(hasattr(_pftscan, f) for f in NEEDS)


def read_columns(name: str, path: Path, box: list, warnings: list[str], dropped: dict,
                 progress, cancelled) -> Trace | None:
    """The Trace from the column walk of the bytes in ``box``, or None (declined:
    nothing was changed). ``box`` is emptied once the bytes are walked (then a decline
    of the tables leaves it empty: the caller reads the file again)."""
    if not enabled():
        return None
    data = box[0]
    got = walk_columns(data, progress, cancelled)
    if got is None:
        return None
    size = len(data)
    del data
    box.clear()
    cols, n_packets, used, problem = got
    w, d = list(warnings), dict(dropped)
    if problem == "truncated":
        if not n_packets:
            raise TraceFormatError(path, "packet 0 at byte 0", "a whole TracePacket",
                                   f"a record cut short ({size} bytes in the file)")
        lost = size - used
        w.append(f"{path}: the file ends inside packet {n_packets} at byte {used:,} "
                 f"(truncated); read {n_packets:,} whole packets and dropped the last "
                 f"{lost:,} bytes")
        d["packets"] = d.get("packets", 0) + 1
        d["bytes"] = lost
    elif problem is not None:
        raise TraceFormatError(path, f"packet {n_packets} at byte {used}",
                               "a TracePacket record (Trace field 1, tag 0x0a)", problem)
    try:
        clock_name = cols.finish(w, d)
        check_cancel(cancelled)
        progress(0.85)
        return build_columns(name, path, cols, clock_name, w, d, n_packets, progress)
    except Declined as exc:
        log.debug("pftrace: the column tables declined (%s); reading the records", exc)
        return None
