"""Knob facts the rules rely on, each with where it is documented (see docs/tuning.md).

Every number here was checked against the vendor's documentation or source; where a
fact could not be established the rule that uses it is conservative and says so.
"""

from __future__ import annotations

import re

from .proposals import Citation

# ---------------------------------------------------------------- citations
HIP_ENV_DOCS = Citation(
    "HIP environment variables (ROCm docs, debug variables table)",
    "https://rocm.docs.amd.com/projects/HIP/en/latest/reference/env_variables.html",
    "GPU_MAX_HW_QUEUES: default 4, hardware queues per process per device; more streams "
    "reuse queues round-robin. AMD_SERIALIZE_KERNEL / AMD_SERIALIZE_COPY: 1 wait before "
    "enqueue, 2 after, 3 both. HIP_LAUNCH_BLOCKING: serialises kernel enqueue like "
    "AMD_SERIALIZE_KERNEL. HIP_FORCE_DEV_KERNARG: kernel arguments in device memory, "
    "'2-3 us for some kernels'.")
CLR_FLAGS = Citation(
    "ROCm/clr rocclr/utils/flags.hpp",
    "https://github.com/ROCm/clr/blob/develop/rocclr/utils/flags.hpp",
    "HIP_LAUNCH_BLOCKING: 'Wait for completion after enqueue, same as "
    "AMD_SERIALIZE_KERNEL=2'; GPU_MAX_HW_QUEUES default 4.")
CLR_KERNARG = Citation(
    "ROCm/clr rocclr/device/rocm/rocsettings.cpp, Settings::setKernelArgImpl",
    "https://github.com/ROCm/clr/blob/develop/rocclr/device/rocm/rocsettings.cpp",
    "'Enable device kernel args for gfx94x for now': gfx940/941/942 and gfx950-952 use "
    "device kernel arguments by default; HIP_FORCE_DEV_KERNARG only changes that when "
    "set explicitly.")
IREE_KERNARG_NOTE = Citation(
    "iree-org/iree ROCm HAL driver comment (third party, not AMD documentation)",
    "https://github.com/iree-org/iree",
    "sets HIP_FORCE_DEV_KERNARG=1: 'This option will become the default in ROCm 6.1.'")
MI300X_WORKLOAD = Citation(
    "AMD Instinct MI300X workload optimization (ROCm docs)",
    "https://rocm.docs.amd.com/en/latest/how-to/rocm-for-ai/inference-optimization/"
    "workload.html",
    "recommends HIP_FORCE_DEV_KERNARG=1; TunableOp two-pass workflow "
    "(PYTORCH_TUNABLEOP_ENABLED=1 tuning pass, then PYTORCH_TUNABLEOP_TUNING=0), PyTorch "
    ">= 2.3, one tunableop_results file per GPU.")
OVERSUBSCRIPTION = Citation(
    "Oversubscription of hardware resources in AMD Instinct accelerators (ROCm docs)",
    "https://rocm.docs.amd.com/en/latest/conceptual/oversubscription.html",
    "oversubscription when user-mode compute queues exceed the hardware limit of 24 "
    "queues for current Instinct accelerators.")
CUDA_ENV_DOCS = Citation(
    "CUDA Programming Guide, CUDA environment variables",
    "https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/"
    "environment-variables.html",
    "CUDA_LAUNCH_BLOCKING=1 disables asynchronous kernel launches (debugging only); "
    "CUDA_DEVICE_MAX_CONNECTIONS: compute and copy engine concurrent connections "
    "(work queues) from the host to the device, 1-32, default 8.")
TUNABLEOP_README = Citation(
    "PyTorch TunableOp README (aten/src/ATen/cuda/tunable/README.md)",
    "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/cuda/tunable/README.md",
    "PYTORCH_TUNABLEOP_ENABLED default 0; PYTORCH_TUNABLEOP_TUNING default 1; "
    "PYTORCH_TUNABLEOP_FILENAME default tunableop_results.csv, the device ordinal is "
    "inserted into the name (tunableop_results0.csv ...); results are rejected when "
    "PyTorch/ROCm/library versions change.")
CUDA_GRAPHS = Citation(
    "CUDA Programming Guide, CUDA Graphs; PyTorch torch.cuda.graphs / CUDAGraph",
    "https://pytorch.org/docs/stable/notes/cuda.html#cuda-graphs",
    "capture a sequence of launches once, replay it with one launch call; "
    "torch.compile(mode='reduce-overhead') uses CUDA graphs (HIP graphs on ROCm).")
HIP_GRAPHS = Citation(
    "HIP graphs (ROCm docs)",
    "https://rocm.docs.amd.com/projects/HIP/en/latest/how-to/hip_runtime_api/hipgraph.html",
    "hipStreamBeginCapture / hipStreamEndCapture / hipGraphInstantiate / hipGraphLaunch.")
PINNED_MEMORY = Citation(
    "PyTorch CUDA semantics: use pinned memory buffers",
    "https://pytorch.org/docs/stable/notes/cuda.html#use-pinned-memory-buffers",
    "copies from pinned host memory are much faster; pin_memory() and "
    "non_blocking=True let the copy overlap with computation.")
PYTORCH_TUNING_GUIDE = Citation(
    "PyTorch performance tuning guide: avoid unnecessary CPU-GPU synchronization",
    "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html",
    "tensor.item(), .cpu(), print(cuda_tensor), torch.cuda.synchronize() and similar "
    "calls make the host wait for the GPU.")

# ---------------------------------------------------------------- facts
GPU_MAX_HW_QUEUES_DEFAULT = 4          # HIP_ENV_DOCS, CLR_FLAGS
INSTINCT_USER_QUEUE_LIMIT = 24         # OVERSUBSCRIPTION
CUDA_MAX_CONNECTIONS_DEFAULT = 8       # CUDA_ENV_DOCS
CUDA_MAX_CONNECTIONS_MAX = 32          # CUDA_ENV_DOCS
DEV_KERNARG_SAVING_NS = 2_000          # HIP_ENV_DOCS: "2-3 us for some kernels" (low end)
# First ROCm release in which clr defaults to device kernel arguments on gfx94x.
# Not stated in AMD's documentation; the only statement found is IREE's driver comment
# (IREE_KERNARG_NOTE). Used with that caveat; see docs/tuning.md.
DEV_KERNARG_DEFAULT_FROM = (6, 1)
MI300_CLASS_ARCHS = ("gfx940", "gfx941", "gfx942")
SERIALIZATION_VARS = ("AMD_SERIALIZE_KERNEL", "AMD_SERIALIZE_COPY", "HIP_LAUNCH_BLOCKING",
                      "CUDA_LAUNCH_BLOCKING")


def parse_version(text: object) -> tuple[int, int] | None:
    """'6.4.43483' -> (6, 4); None when there is no major.minor."""
    if text is None:
        return None
    m = re.match(r"\s*(\d+)\.(\d+)", str(text))
    return (int(m[1]), int(m[2])) if m else None


def env_flag_on(value: object) -> bool:
    """True for a knob value that turns a switch on ('1', '3', 'true', 'yes')."""
    if value is None:
        return False
    s = str(value).strip().lower()
    if s in ("", "0", "false", "no", "off"):
        return False
    return True
