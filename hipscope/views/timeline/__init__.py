"""The timeline: rows of GPU queues/streams, copies, host threads, annotations and
counters over time, drawn from prepared numpy geometry (see ``render.py``)."""

from .view import TimelineView

__all__ = ["TimelineView"]
