"""Name matching, one rule for every place a person types a pattern (Find, the kernels
filter, the counters filter, compare rules): a case-insensitive regular-expression
search. Plain-text mode (``regex=False``) is the same search of the escaped text. A
pattern that is not a valid regular expression is matched as plain text where a
result is wanted at once (filters, Find), with one message saying so; where a file of
rules is read, it is an error carrying the same message. Qt-free.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

FLAGS = re.IGNORECASE


def invalid_message(exc: re.error) -> str:
    """The one sentence fragment for a pattern that is not a regular expression."""
    return f"not a valid regular expression ({exc})"


def compile_pattern(text: str, regex: bool = True) -> tuple[re.Pattern, str]:
    """(compiled pattern, note): the note is '' or why the text is matched as plain."""
    if not regex:
        return re.compile(re.escape(text), FLAGS), ""
    try:
        return re.compile(text, FLAGS), ""
    except re.error as exc:
        return (re.compile(re.escape(text), FLAGS),
                f"{invalid_message(exc)}; matching it as plain text")


def compile_strict(text: str) -> re.Pattern:
    """The pattern of a rule read from a file; raises ``re.error`` when invalid (the
    caller names the file and line, with :func:`invalid_message`)."""
    return re.compile(text, FLAGS)


def match_mask(names: Sequence[str | None], text: str, regex: bool = True
               ) -> tuple[np.ndarray, str]:
    """Per name: whether ``text`` matches it (bool array), and the note of
    :func:`compile_pattern`. None names never match."""
    rx, note = compile_pattern(text, regex)
    ok = np.fromiter((n is not None and rx.search(n) is not None for n in names),
                     dtype=bool, count=len(names))
    return ok, note
