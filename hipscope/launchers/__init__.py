"""Launching profiled runs locally, over SSH and through Slurm (Qt-free)."""
