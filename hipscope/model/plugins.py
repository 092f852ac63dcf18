"""Plugins through entry points: readers (``hipscope.readers``), panels
(``hipscope.panels``) and tuner rules (``hipscope.rules``), built-ins included.

An entry point names a module that registers what it defines when imported (the
readers' ``@register``, the rules' ``@rule``, ``register_panel``), or an object that
the group's ``accept`` callback registers (e.g. a ``PanelSpec``). pyproject.toml lists
the built-ins under the same groups, but the built-in modules are imported whatever
the metadata says: an install made before a group existed (an old editable install)
lists none, and a plugin package alone must not hide the built-ins.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

log = logging.getLogger(__name__)

GROUPS = ("hipscope.readers", "hipscope.panels", "hipscope.rules")


def load_group(group: str, builtin_modules: Iterable[str],
               accept: Callable[[Any], object] | None = None,
               eps: Iterable[EntryPoint] | None = None) -> list[str]:
    """Import ``builtin_modules``, then load every entry point of ``group`` (``eps``:
    these instead of the installed ones). A plugin that fails to load is logged and
    skipped (one broken plugin must not take the others down). Returns the entry
    point names loaded."""
    for mod in builtin_modules:
        importlib.import_module(mod)
    loaded = []
    for ep in entry_points(group=group) if eps is None else eps:
        try:
            obj = ep.load()
        except Exception:  # noqa: BLE001 - a broken plugin is reported, the rest still load
            log.exception("plugin %s (%s) of %s failed to load", ep.name, ep.value, group)
            continue
        if accept is not None and not _is_module(obj):
            accept(obj)
        loaded.append(ep.name)
    return loaded


def _is_module(obj: object) -> bool:
    return type(obj).__name__ == "module"
