"""The parsed-trace cache: hits skip parsing, any change to the files misses."""

from __future__ import annotations

import os
import shutil

from hipscope.parsers import open_trace
from tests.conftest import SAMPLES

SET = SAMPLES / "rocprofv3-csv" / "sdk-docs-2025-08-rocm7.0"


def test_hit_is_marked_and_equal(tmp_path):
    src = SAMPLES / "legacy-rocprof" / "spatter-kernel-stats" / "results.csv"
    first = open_trace(src, use_cache=True)
    again = open_trace(src, use_cache=True)
    assert not first.meta.get("cached") and again.meta.get("cached")
    assert again.kernels.data.equals(first.kernels.data)
    assert again.devices.data.equals(first.devices.data)


def test_changed_sibling_file_misses(tmp_path):
    d = tmp_path / "set"
    shutil.copytree(SET, d)
    one = d / "kernel_trace.csv"
    a = open_trace(one, use_cache=True)
    assert open_trace(one, use_cache=True).meta.get("cached")
    # the set's API trace changes: opening the same kernel file must re-read the set
    api = d / "hip_runtime_trace.csv"
    api.write_text(api.read_text().splitlines()[0] + "\n")
    st = api.stat()
    os.utime(api, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    b = open_trace(one, use_cache=True)
    assert not b.meta.get("cached")
    assert len(b.api) < len(a.api)
