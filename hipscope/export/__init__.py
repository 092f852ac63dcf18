"""Exporters: write a hipscope :class:`~hipscope.model.Trace` in other tools' formats (Qt-free)."""

from .pftrace_writer import write_pftrace

__all__ = ["write_pftrace"]
