"""hipscope: a GPU trace viewer and tuner for ROCm and CUDA."""

__version__ = "0.1.0"
