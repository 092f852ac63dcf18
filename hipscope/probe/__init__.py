"""The GPU probe: measures on a target what the tuner's estimates need (Qt-free).

* :mod:`.run` (standalone; ``python -m hipscope.probe.run --json``): launch overhead,
  graph replay cost per node, stream concurrency, pageable vs pinned copy bandwidth.
* :mod:`.backends` (standalone): one small GPU interface, cuda-python and hip-python
  backends, the kernel source both compile at run time.
* :mod:`.store`: results per target + GPU + driver in ``<data dir>/probe.json``; the
  figures the tuner reads (``graph_node_ns``, ``pinned_speedup``) for a trace's GPU.
* :mod:`.remote`: runs the probe through ``hipscope.launchers`` (local, SSH, Slurm).

Nothing here imports a GPU library at import time.
"""
