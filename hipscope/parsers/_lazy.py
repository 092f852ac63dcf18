"""Names a reader package kept reachable after its reading stack became lazy.

Registration and sniffing import a reader package; only ``read()`` needs its
reading stack (msgspec, numpy tables, protobuf walks...), so that stack is imported
there. A package's module-level ``__getattr__`` (PEP 562) hands the names it used to
import eagerly to :func:`lazy_attr`, so ``from hipscope.parsers.X import name``
keeps working.
"""

from __future__ import annotations

import importlib
import sys


def lazy_attr(module: str, names: dict[str, str], name: str):
    """``name`` of ``module`` from the module ``names[name]`` (relative to ``module``'s
    package), imported now; AttributeError for any other name, as a module would raise."""
    where = names.get(name)
    if where is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    return getattr(importlib.import_module(where, sys.modules[module].__package__), name)
