"""The readers' errors: bad input as one sentence for people (:class:`TraceFormatError`),
a failure that is not the input's fault (:class:`ReadFailure`), an unknown reader name.
Re-exported by :mod:`hipscope.parsers.base` and :mod:`hipscope.parsers`."""

from __future__ import annotations

import os


class TraceFormatError(Exception):
    """The input is not a readable trace. ``str()`` is one sentence for people."""

    def __init__(self, path: str | os.PathLike, where: str | None, expected: str,
                 found: str | None = None):
        self.path = str(path)
        self.where = where
        self.expected = expected
        self.found = found
        place = f" at {where}" if where else ""
        got = f", found {found}" if found else ""
        super().__init__(f"{self.path}{place}: expected {expected}{got}.")


class ReadFailure(TraceFormatError):
    """A failure that is not the input's fault (a bug, memory), as one sentence that
    names the file: what :func:`open_trace` turns any unexpected exception into."""

    def __init__(self, path: str | os.PathLike, sentence: str):
        super().__init__(path, None, "a trace hipscope can read")
        self.args = (sentence,)


class UnknownReader(KeyError):
    """``reader=`` names no registered reader (the user's mistake, not the file's)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown reader"
