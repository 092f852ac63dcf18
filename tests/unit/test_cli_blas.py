"""The command line loads numpy with one OpenBLAS thread (its pool spins after it
starts, taking CPU from the parse) and leaves the environment of the programs it
starts as it was given (hipscope/cli/__init__.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import ROOT

PROBE = ("import os, json, hipscope.cli, numpy; "
         "print(json.dumps([len(os.listdir('/proc/self/task')), "
         "os.environ.get('OPENBLAS_NUM_THREADS')]))")


def _probe(**env: str) -> list:
    base = {k: v for k, v in os.environ.items()
            if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", PROBE], env={**base, **env}, cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_numpy_starts_no_blas_threads_and_the_environment_is_unchanged():
    threads, var = _probe()
    assert threads == 1          # the main thread only: no OpenBLAS pool
    assert var is None           # profiled runs get the user's environment


def test_a_thread_count_the_user_chose_is_kept():
    threads, var = _probe(OPENBLAS_NUM_THREADS="2")
    assert var == "2" and threads == min(2, len(os.sched_getaffinity(0)))
