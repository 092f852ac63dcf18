"""``pc``: pyarrow.compute, imported on first use. Its import takes ~0.05 s (it wraps
every compute function at import), and a CSV report needs it only after the parse:
the command line imports it on a thread while the parse runs (hipscope/cli/warm.py)
instead of before it. Modules on that path write ``from ..model.lazy import pc``; the
first attribute read imports the module (thread-safe: the import system's lock)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class _Module:
    """A module imported when one of its attributes is first read."""

    def __init__(self, name: str):
        self._name = name
        self._mod: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        mod = self._mod
        if mod is None:
            mod = self._mod = importlib.import_module(self._name)
        return getattr(mod, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


pc: Any = _Module("pyarrow.compute")
