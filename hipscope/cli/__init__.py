"""Command line entry points.

numpy is loaded here with one OpenBLAS thread. hipscope's numpy work needs no BLAS
threads (a few small matrix products), and OpenBLAS's pool spins for a while after it
starts: about 0.17 s of CPU taken from the parse and the analyses on a 2-core machine.
A thread count the user set (``OPENBLAS_NUM_THREADS``, ``GOTO_NUM_THREADS``,
``OMP_NUM_THREADS``) is kept, and the variable is removed again at once, so programs
hipscope starts (profiled runs) get the environment it was given.
"""

from __future__ import annotations

import os
import sys

_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def _numpy_with_one_blas_thread() -> None:
    if "numpy" in sys.modules or any(n in os.environ for n in _BLAS_THREADS):
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401 - OpenBLAS reads the variable as numpy loads it
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


_numpy_with_one_blas_thread()
