"""Real run folders made by ``hipscope run`` for tests of the run's provenance.

:func:`make_streams_run` runs ``hipscope run --profiler torch`` locally with
``streams_standin.py`` as the target's python (no torch needed): the run folder is
laid out by hipscope itself (spec.json, status.json, provenance.json, prof/).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
STANDIN = HERE / "streams_standin.py"
ROOT = HERE.parents[2]


def make_streams_run(data_dir: Path, *env: str, profiler: str = "torch",
                     cwd: Path | None = None, args: tuple[str, ...] = ()) -> Path:
    """The folder of one finished run of ``streams.py ARGS`` with ``--env`` items
    ``env``."""
    cwd = Path(cwd or data_dir)
    cwd.mkdir(parents=True, exist_ok=True)
    (cwd / "streams.py").write_text("print('8 streams')\n")
    if profiler == "none":           # no trace: the program is plain python
        prog = ["--", sys.executable, "streams.py", *args]
    else:                            # the stand-in writes the Kineto trace into prof/
        prog = ["-O", f"python={STANDIN}", "--", "streams.py", *args]
    cmd = [sys.executable, "-m", "hipscope", "run", "--profiler", profiler, "--cwd",
           str(cwd), "-q", *("--env=" + e for e in env), *prog]
    runs = Path(data_dir) / "runs"
    before = set(runs.iterdir()) if runs.is_dir() else set()
    subprocess.run(cmd, check=True, capture_output=True, timeout=120, cwd=ROOT,
                   env={**os.environ, "HIPSCOPE_DATA_DIR": str(data_dir),
                        "PYTHONPATH": str(ROOT)})
    (folder,) = set(runs.iterdir()) - before
    return folder
