"""The flows of the selected event (launch arrows, op -> kernel links, cross-stream
waits), each kind togglable (``TimelineFlows.kinds``, class-wide: the window's
View > Flows menu sets it). Waits come from the markers table where it holds them
(``wait_on_correlation_id``: rocpd HIP event records) or from the source file's args
(Kineto), read in a worker the first time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...analysis import lod
from ...analysis.links import recorded_waits

if TYPE_CHECKING:
    from .view import TimelineView

FLOW_LABELS = {"launch": "&Launch (API call → kernel)", "op": "&Op → kernel",
               "wait": "Cross-stream &waits (event record → sync)"}
FLOW_COLOURS = {"launch": (255, 140, 60), "op": (100, 190, 255), "wait": (235, 90, 200)}


class TimelineFlows:
    """``targets``: (from table, row, to table, row, kind) of the current selection."""

    kinds: frozenset[str] = frozenset(lod.FLOW_KINDS)

    def __init__(self, view: TimelineView):
        self.view = view
        self.targets: list[tuple[str, int, str, int, str]] = []

    def refresh(self) -> None:
        """Links of the document's selection: launch and op at once, waits from a
        worker (they need the source file)."""
        v = self.view
        sel, trace = v.document.view_state.selection, v.document.trace
        if sel is None or trace is None:
            self.targets = []
            v.update()
            return
        kinds = self.kinds
        self.targets = lod.flow_links(trace, sel.table, sel.row, kinds - {"wait"})
        if "wait" in kinds:
            self.targets += [(*w, "wait") for w in recorded_waits(trace, sel.table, sel.row)]
        if "wait" in kinds and trace.format == "kineto":
            def job(progress=None, cancelled=None):
                from ...analysis.source_args import source_index

                return sel, lod.flow_links(trace, sel.table, sel.row, {"wait"},
                                           source_index(trace))

            v.tasks.submit("flows", job).succeeded.connect(self._on_waits)
        v.update()

    def _on_waits(self, result) -> None:
        sel, links = result
        if sel == self.view.document.view_state.selection and "wait" in self.kinds:
            self.targets = [t for t in self.targets if t[4] != "wait"] + links
            self.view.update()

    def geometry(self) -> list[tuple[float, float, float, float, str]]:
        """(x0, y0, x1, y1, kind) in widget coordinates: from the source's end to the
        target's start (an op's start to the kernel's, for an op); an end off the
        tracks is held at their edge, on its own row; a flow wholly off one side is
        left out."""
        out = []
        r = self.view.track_rect
        lo, hi = float(r.left()), float(r.right())
        for at, ar, tt, trow, kind in self.targets:
            a = self.view.event_anchor(at, ar)
            b = self.view.event_anchor(tt, trow)
            if a is None or b is None:
                continue
            xa, xb = a[0] if kind == "op" else a[1], b[0]
            if max(xa, xb) < lo or min(xa, xb) > hi:
                continue
            out.append((min(max(xa, lo), hi), a[2], min(max(xb, lo), hi), b[2], kind))
        return out
