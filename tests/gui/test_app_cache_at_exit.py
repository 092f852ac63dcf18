"""The app leaves what it read in the cache when it quits right after its first frame
(issue 14): the trace entry it held back for that frame, still being stored when the
window closes, and the timeline frame it wrote behind are on disk before the process
ends, so the next open of the trace is a cache hit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hipscope.parsers import open_trace
from tests.conftest import DATA

ROOT = Path(__file__).resolve().parents[2]
TRACE = DATA / "gpu" / "launch_bound.json.gz"


# the app, its cache store slowed down as a big trace's is (1.2 GB for 5M kernels):
# still under way when the window closes at the first frame
SLOW_STORE = """
import sys, time
from hipscope.parsers import cache
real = cache.store
def slow(*a, **k):
    time.sleep(1.0)
    return real(*a, **k)
cache.store = slow
from hipscope.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_quitting_at_the_first_frame_leaves_the_entry_and_its_frame(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", HOME=str(tmp_path),
               XDG_CONFIG_HOME=str(tmp_path / "config"), HIPSCOPE_CACHE_DIR=str(cache),
               HIPSCOPE_DATA_DIR=str(tmp_path / "data"), HIPSCOPE_FIRST_FRAME="exit")
    out = subprocess.run([sys.executable, "-c", SLOW_STORE, str(TRACE)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert "HIPSCOPE_FIRST_FRAME " in out.stderr, out.stderr[-2000:]
    assert "cannot store" not in out.stderr
    entries = [p for p in cache.iterdir() if p.is_dir()]
    assert len(entries) == 1
    frames = list((entries[0] / "analyses").glob("timeline_frame-*.hsan"))
    assert len(frames) == 1 and frames[0].stat().st_size > 0
    monkeypatch.setenv("HIPSCOPE_CACHE_DIR", str(cache))
    again = open_trace(TRACE, use_cache=True)
    assert again.meta.get("cached") and again.meta["cache_key"] == entries[0].name
