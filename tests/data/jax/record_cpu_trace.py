"""Record the real JAX CPU trace fixture (tests/data/jax/cpu/): see tests/data/README.md.

Usage: python record_cpu_trace.py OUTDIR (in a venv with jax and jaxlib; no GPU needed).
"""
import sys

import jax
import jax.numpy as jnp


@jax.jit
def layer(x, w):
    return jnp.tanh(x @ w).sum()


x = jnp.ones((64, 64))
w = jnp.ones((64, 64))
layer(x, w).block_until_ready()          # compile outside the trace
with jax.profiler.trace(sys.argv[1], create_perfetto_trace=True):
    for i in range(3):
        with jax.profiler.TraceAnnotation(f"step{i}"):
            layer(x, w).block_until_ready()
from importlib.metadata import version  # noqa: E402

print("jax", version("jax"), "jaxlib", version("jaxlib"))
