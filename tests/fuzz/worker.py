"""A child process that runs the checks of one case at a time, so that a hang in C
code, a crash (SIGSEGV, SIGABRT) or a runaway allocation ends that child, not the
campaign: the parent kills it after the case's time limit and starts another."""

from __future__ import annotations

import logging
import multiprocessing as mp
import warnings
from pathlib import Path

from tests.fuzz.check import checks_with_limit, failure, isolated_cache


def _serve(conn) -> None:
    """The child: like pytest, warnings are errors; ``hipscope``'s own logging setup
    adds no handler (check_cli attaches one per call)."""
    warnings.simplefilter("error")
    logging.getLogger().addHandler(logging.NullHandler())
    from hipscope.parsers.base import readers

    readers()                                  # import every reader once, up front
    conn.send("ready")
    while True:
        msg = conn.recv()
        if msg is None:
            return
        isolated_cache(Path(msg["cache"]))
        conn.send(checks_with_limit(Path(msg["target"]), msg["reader"], msg["seconds"]))


class Worker:
    def __init__(self, case_seconds: int):
        self.case_seconds = case_seconds
        self._ctx = mp.get_context("spawn")
        self._proc = None
        self._conn = None

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_serve, args=(child,), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent
        if not parent.poll(300) or parent.recv() != "ready":
            raise RuntimeError("the fuzz worker did not start")

    def _stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join(30)
            self._conn.close()
        self._proc = self._conn = None

    def check(self, target: Path, reader: str, cache: Path) -> list[dict]:
        """The case's failures; a hang or a crash of the child is a failure too."""
        if self._proc is None or not self._proc.is_alive():
            self._start()
        self._conn.send({"target": str(target), "reader": reader, "cache": str(cache),
                         "seconds": self.case_seconds})
        # the child's own limit fires first; this one catches a hang inside C code
        if not self._conn.poll(self.case_seconds + 30):
            self._stop()
            return [failure("any", "hang", f"no answer within {self.case_seconds + 30} s "
                                           "(stuck outside Python); the worker was killed")]
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            self._proc.join(30)
            code = self._proc.exitcode
            self._stop()
            return [failure("any", f"crash-exit-{code}",
                            f"the worker process died (exit code {code}, "
                            "negative = killed by that signal)")]

    def close(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            self._conn.send(None)
            self._proc.join(30)
        self._stop()
