"""The job rank of a rocpd database's process, from its recorded environment.

rocprofv3 stores no rank column: ``rocpd_info_process.environment`` is the process's
whole ``environ`` as a JSON object of strings (variables whose value holds ``;`` are
left out), written by ``insert_process_data`` in ROCm/rocm-systems
``projects/rocprofiler-sdk/source/lib/output/generateRocpd.cpp`` @
``b072e7e38cb0fa3fec2caab358ab255503914814``. The rank is read from the launchers'
variables, most specific to this process first:

* ``RANK``/``WORLD_SIZE``: torchrun / torch.distributed's env:// rank of the process;
* ``OMPI_COMM_WORLD_RANK``/``_SIZE`` (Open MPI), ``MV2_COMM_WORLD_RANK``/``_SIZE``
  (MVAPICH2), ``PMI_RANK``/``PMI_SIZE`` (MPICH, Intel MPI, Cray PMI), ``PMIX_RANK``;
* ``MPI_RANK``/``MPI_SIZE``, ``MPI_RANKID``/``MPI_NRANKS``: the generic names
  rocprofiler-sdk's own ``%rank%`` reads (``get_mpi_rank``/``get_mpi_size`` in
  ``source/lib/output/format_path.cpp`` @ ``b097e276a9c8b9cf5a95c01157549e7216eb3c1d``);
* ``SLURM_PROCID``/``SLURM_NTASKS`` last. ``%rank%`` (``output_key.cpp``, same commit)
  puts ``SLURM_PROCID`` first, but under ``mpirun`` or torchrun inside a Slurm job it is
  the batch step's or the node's index, the same for many processes. Its
  ``MPI_LOCALRANKID`` is a node-local rank and is not read.

One process (or several with one rank): ``meta["rank"]``, ``meta["rank_variable"]``
and ``meta["world_size"]`` when its partner variable is set. Processes with different
ranks in one database: no single rank; ``meta["process_ranks"]`` lists ``[pid, rank]``
(whoever uses ranks says so).
"""

from __future__ import annotations

import json
from typing import Any

from .._common import warn
from .db import Db, as_int

__all__ = ["RANK_VARIABLES", "process_rank", "rank_of_environment"]

RANK_VARIABLES = (("RANK", "WORLD_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                  ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE"),
                  ("PMIX_RANK", None), ("MPI_RANK", "MPI_SIZE"), ("MPI_RANKID", "MPI_NRANKS"),
                  ("SLURM_PROCID", "SLURM_NTASKS"))


def _count(v: Any, least: int) -> int | None:
    try:
        n = int(str(v).strip())
    except ValueError:
        return None
    return n if n >= least else None


def rank_of_environment(env: dict[str, Any]) -> tuple[int, str, int | None] | None:
    """(rank, the variable it came from, world size or None), or None without one."""
    for var, size_var in RANK_VARIABLES:
        rank = _count(env.get(var), 0) if var in env else None
        if rank is not None:
            size = _count(env.get(size_var), 1) if size_var else None
            return rank, var, size if size is not None and size > rank else None
    return None


def _environment(text: Any) -> dict[str, Any] | None:
    """The environment JSON object, None where it is not one."""
    try:
        env = json.loads(text) if text else {}   # bytes: a BLOB column, UTF-8 JSON
    except (ValueError, TypeError):
        return None
    return env if isinstance(env, dict) else None


def process_rank(db: Db, meta: dict[str, Any], warnings: list[str]) -> None:
    """The rank of the database's process(es) into ``meta`` (module docstring)."""
    if not db.has("rocpd_info_process") or \
            "environment" not in db.columns("rocpd_info_process"):
        return
    rows = db.fetch("rocpd_info_process", ["pid", "environment"])
    n = len(rows["environment"])
    found: dict[int, tuple[int, str, int | None]] = {}
    bad = []
    for pid, text in zip(as_int(rows.get("pid"), n).tolist(),
                         rows["environment"].to_pylist()):
        env = _environment(text)
        if env is None:
            bad.append(pid)
        elif (got := rank_of_environment(env)) is not None:
            found[pid] = got
    if bad:
        warn(warnings, "rocpd.environment_unread",
             f"{db.path}: rocpd_info_process.environment of pid "
             f"{', '.join(map(str, bad))} is not a JSON object; no rank is read from it",
             db.path)
    if len({r for r, _, _ in found.values()}) == 1:
        rank, var, size = next(iter(found.values()))
        meta.update(rank=rank, rank_variable=var)
        if size is not None:
            meta["world_size"] = size
    elif found:
        meta["process_ranks"] = sorted([pid, r] for pid, (r, _, _) in found.items())
