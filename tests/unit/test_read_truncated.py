"""A trace rewritten while it is read (a profiler run again with the same output name
truncates the file) gives a trace or one sentence, never a dead process: the pftrace and
Kineto readers read the file into memory instead of memory-mapping it (a truncated map
raises SIGBUS). Each read runs in a subprocess whose progress callback truncates the
file on its first call, while the reader is busy with it."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA, ROOT, SAMPLES

SCRIPT = """
import os, sys
from pathlib import Path
from hipscope.parsers import TraceFormatError, get_reader
path, cut = Path(sys.argv[2]), []
def progress(f):
    if not cut:
        cut.append(f)
        os.truncate(path, 0)
try:
    tr = get_reader(sys.argv[1]).read(path, progress, lambda: False)
    print("read", len(tr.kernels), len(cut))
except TraceFormatError as exc:
    print("refused", len(cut))
"""


def _plain_kineto(tmp: Path) -> Path:
    src = SAMPLES / "kineto" / "nvidia-a100-simple-add-hta"
    gz = next(src.glob("*.json.gz"))
    out = tmp / "trace.json"
    out.write_bytes(gzip.decompress(gz.read_bytes()))
    return out


@pytest.mark.parametrize("reader", ["pftrace", "kineto"])
def test_a_file_truncated_during_the_read_never_kills_the_process(tmp_path, reader):
    if reader == "pftrace":
        path = tmp_path / "4242_results.pftrace"
        shutil.copy(DATA / "pftrace" / "4242_results.pftrace", path)
    else:
        path = _plain_kineto(tmp_path)
    got = subprocess.run([sys.executable, "-c", SCRIPT, reader, str(path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, (got.returncode, got.stderr[-2000:])
    words = got.stdout.split()
    assert words[0] in ("read", "refused") and words[-1] == "1", got.stdout
