"""Trace readers (Qt-free). Each format family is one module that registers itself."""

from .base import (
    Cancelled,
    Reader,
    TraceFormatError,
    file_filters,
    find_reader,
    get_reader,
    open_trace,
    readers,
)

__all__ = [
    "Cancelled", "Reader", "TraceFormatError", "file_filters", "find_reader",
    "get_reader", "open_trace", "readers",
]
