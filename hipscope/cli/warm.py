"""Modules `hipscope report` needs after the trace is read, imported on a thread while
it is read: the parse threads run without the GIL, so the main thread would only wait;
done after the read instead, the same imports hold up the first analysis (~0.05 s,
one core). ``numpy.ma`` is among them (numpy's ``unique`` imports it on first use), and
``pyarrow.compute`` (~0.05 s; the modules on a CSV read's path import it lazily:
hipscope/model/lazy.py).
Importing twice is harmless (the main thread waits for a module being imported), and
a module that fails to import here fails again, with its message, where it is used."""

from __future__ import annotations

import importlib
import threading

MODULES = (
    "pyarrow.compute", "numpy.ma",
    "hipscope.analysis.report", "hipscope.analysis.persist", "hipscope.analysis.idle",
    "hipscope.analysis.concurrency", "hipscope.analysis.stats",
    "hipscope.analysis.queue_delay", "hipscope.analysis.sanity", "hipscope.analysis.graphs",
    "hipscope.analysis.steps", "hipscope.analysis.timeline_model", "hipscope.analysis.ops",
    "hipscope.analysis.kernel_class",
)


def _import_all() -> None:
    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 - reported where the module is used
            continue


def start() -> threading.Thread:
    """Import :data:`MODULES` on a daemon thread; returns it (tests join it)."""
    t = threading.Thread(target=_import_all, name="hipscope-warm-imports", daemon=True)
    t.start()
    return t
