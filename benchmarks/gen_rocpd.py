"""Generate a large, realistic rocpd SQLite database (ROCm 7.0 ``<pid>_results.db``).

Used to measure the rocpd reader at scale::

    python benchmarks/gen_rocpd.py /tmp/big/4242_results.db 5000000
    python -c "from hipscope.parsers import open_trace; open_trace('/tmp/big/4242_results.db')"

Uses the fixture schema (tests/data/fixtures/rocpd_schema.py: suffixed physical tables,
the unsuffixed ``rocpd_*`` views, the data views). One process on one node; 1 CPU and 4
GPU agents; 4 queues per GPU with one HIP stream each; a launching thread per stream;
``n`` kernel dispatches, each launched by a ``hipLaunchKernel`` region
(``HIP_RUNTIME_API_EXT``) with the same ``stack_id``; ~300 long kernel names (the CSV
generator's); CLOCK_BOOTTIME-like timestamps. Rows go in with ``executemany`` in large
batches inside one transaction (journal off): 5M kernels (~20M rows, ~2.5 GB) take
about a minute.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))

from benchmarks.gen_rocprofv3_csv import kernel_names  # noqa: E402
from tests.data.fixtures.rocpd_schema import schema_sql  # noqa: E402

UUID = "0195a1b2_c3d4_7e5f_8a9b_0c1d2e3f4a5b"
GUID = "0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
PID, PPID, NID = 4242, 4200, 1
N_GPUS, QUEUES_PER_GPU = 4, 4
T0 = 1_550_151_853_029_637


def write_rocpd(path: str | Path, n_kernels: int, seed: int = 0, *,
                chunk_rows: int = 250_000) -> Path:
    """Write a rocpd database with ``n_kernels`` dispatches and as many launch regions."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    rng = np.random.default_rng(seed)
    sfx = "_" + UUID
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.executescript(schema_sql(sfx, GUID))

    def ins(table: str, cols: str, rows) -> None:
        names = cols.split()
        conn.executemany(
            f'INSERT INTO "{table}{sfx}" ({", ".join(chr(34) + c + chr(34) for c in names)}) '
            f'VALUES ({", ".join("?" * len(names))})', rows)

    conn.execute("BEGIN")
    ins("rocpd_metadata", "tag value",
        [("schema_version", "3"), ("uuid", sfx), ("guid", GUID)])
    knames = kernel_names(300, seed)
    strings = ["", "HIP_RUNTIME_API_EXT", "KERNEL_DISPATCH", "hipLaunchKernel",
               "gfx942", "AMD Instinct MI300X", "AMD EPYC 9654 96-Core Processor", *knames]
    sid = {s: i + 1 for i, s in enumerate(strings)}
    ins("rocpd_string", "id string", [(i, s) for s, i in sid.items()])
    ins("rocpd_info_node", "id hash machine_id system_name hostname release version "
        "hardware_name domain_name",
        [(NID, 123456789, "0123456789abcdef0123456789abcdef", "Linux", "bench-node",
          "6.8.0-60-generic", "#63-Ubuntu SMP", "x86_64", "(none)")])
    ins("rocpd_info_process", "id nid ppid pid init fini start end command",
        [(PID, NID, PPID, PID, T0 - 10**9, T0 + n_kernels * 5_000 + 10**9, T0 - 10**9,
          T0 + n_kernels * 5_000 + 10**9, "python3 train.py --bench")])
    tids = [PID + 1 + i for i in range(N_GPUS * QUEUES_PER_GPU)]
    ins("rocpd_info_thread", "id nid ppid pid tid",
        [(PID, NID, PPID, PID, PID)] + [(t, NID, PPID, PID, t) for t in tids])
    cpu = "AMD EPYC 9654 96-Core Processor"
    agents = [(1, NID, PID, "CPU", 0, 0, 0, cpu, cpu, json.dumps({"cu_count": 192}))]
    for g in range(N_GPUS):
        agents.append((2 + g, NID, PID, "GPU", 2 + g, 1 + g, g, "gfx942",
                       "AMD Instinct MI300X",
                       json.dumps({"cu_count": 304, "mem_banks": [
                           {"size_in_bytes": 206_141_652_992}]})))
    ins("rocpd_info_agent", "id nid pid type absolute_index logical_index type_index "
        "name product_name extdata", agents)
    n_q = N_GPUS * QUEUES_PER_GPU
    ins("rocpd_info_queue", "id nid pid name", [(q + 1, NID, PID, f"Queue {q}")
                                                for q in range(n_q)])
    ins("rocpd_info_stream", "id nid pid name", [(q + 1, NID, PID, f"Stream {q}")
                                                 for q in range(n_q)])
    ins("rocpd_info_code_object", "id nid pid agent_id uri load_base load_size load_delta",
        [(1 + g, NID, PID, 2 + g, f"file:///opt/app/lib.so#offset=0&size={1 << 24}",
          0x7F0000000000 + g * (1 << 28), 1 << 24, 0) for g in range(N_GPUS)])
    syms = []
    for i, nm in enumerate(knames):
        syms.append((i + 1, NID, PID, 1, nm, nm, 0x7F0000001000 + 256 * i, 64, 8,
                     16384 if i % 3 == 0 else 0, 256 if i % 11 == 0 else 0, 32,
                     8 + (i * 13) % 120, 64 if i % 5 == 0 else 0))
    ins("rocpd_info_kernel_symbol", "id nid pid code_object_id kernel_name display_name "
        "kernel_object kernarg_segment_size kernarg_segment_alignment group_segment_size "
        "private_segment_size sgpr_count arch_vgpr_count accum_vgpr_count", syms)

    cat_api, cat_k, op_launch = sid["HIP_RUNTIME_API_EXT"], sid["KERNEL_DISPATCH"], \
        sid["hipLaunchKernel"]
    done = 0
    while done < n_kernels:
        n = min(chunk_rows, n_kernels - done)
        idx = np.arange(done, done + n, dtype=np.int64)
        corr = idx + 1                                     # stack_id (internal corr id)
        name_code = (rng.zipf(1.3, n) - 1) % len(knames)
        gpu = rng.integers(0, N_GPUS, n)
        q = gpu * QUEUES_PER_GPU + rng.integers(0, QUEUES_PER_GPU, n)   # 0-based
        tid = np.asarray(tids, dtype=np.int64)[q]
        launch = T0 + idx * 5_000 + rng.integers(0, 500, n)
        launch_end = launch + 2_000 + rng.integers(0, 3_000, n)
        start = launch_end + rng.integers(1_000, 50_000, n)
        end = start + (rng.lognormal(9.0, 1.2, n)).astype(np.int64) + 1_000
        wg = np.array([64, 128, 256, 512, 1024], dtype=np.int64)[name_code % 5]
        gx = wg * (1 + (name_code * 37 + idx) % 4096)
        gy = np.where(name_code % 7 == 0, 4, 1)
        ones = np.ones(n, dtype=np.int64)
        ev_region = corr                                   # events 1..N: regions
        ev_kernel = n_kernels + corr                       # events N+1..2N: kernels
        # events: regions' then kernels' (category, stack_id, parent_stack_id, corr_id)
        ins("rocpd_event", "id category_id stack_id parent_stack_id correlation_id",
            zip(ev_region.tolist(), [cat_api] * n, corr.tolist(), [0] * n, [0] * n))
        ins("rocpd_event", "id category_id stack_id parent_stack_id correlation_id",
            zip(ev_kernel.tolist(), [cat_k] * n, corr.tolist(), corr.tolist(), [0] * n))
        ins("rocpd_region", "id nid pid tid start end name_id event_id",
            zip(corr.tolist(), [NID] * n, [PID] * n, tid.tolist(), launch.tolist(),
                launch_end.tolist(), [op_launch] * n, ev_region.tolist()))
        kid = name_code + 1
        ins("rocpd_kernel_dispatch",
            "id nid pid tid agent_id kernel_id dispatch_id queue_id stream_id start end "
            "private_segment_size group_segment_size workgroup_size_x workgroup_size_y "
            "workgroup_size_z grid_size_x grid_size_y grid_size_z region_name_id event_id",
            zip(corr.tolist(), [NID] * n, [PID] * n, tid.tolist(), (gpu + 2).tolist(),
                kid.tolist(), corr.tolist(), (q + 1).tolist(), (q + 1).tolist(),
                start.tolist(), end.tolist(),
                np.where(name_code % 11 == 0, 256, 0).tolist(),
                np.where(name_code % 3 == 0, 16384, 0).tolist(),
                wg.tolist(), ones.tolist(), ones.tolist(), gx.tolist(), gy.tolist(),
                ones.tolist(), [sid[""]] * n, ev_kernel.tolist()))
        done += n
    conn.commit()
    conn.close()
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("kernels", type=int)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    p = write_rocpd(a.path, a.kernels, a.seed)
    print(f"wrote {a.kernels:,} kernels, {p.stat().st_size / 1e9:.2f} GB to {p}")


if __name__ == "__main__":
    main()
