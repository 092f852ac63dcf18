"""The tables that tell an Nsight Systems export, apart from the reading stack: every
open sniffs with every reader, and this needs only ``sqlite_master``'s names."""

from __future__ import annotations

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
DRIVER = "CUPTI_ACTIVITY_KIND_DRIVER"
GRAPH_TRACE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
NVTX = "NVTX_EVENTS"
GPU = "TARGET_INFO_GPU"
CUDA_DEVICE = "TARGET_INFO_CUDA_DEVICE"
# tables only an nsys export has (besides the CUPTI_ACTIVITY_KIND_* ones)
NSYS_TABLES = {"StringIds", NVTX, GPU, CUDA_DEVICE, "TARGET_INFO_SESSION_START_TIME",
               "META_DATA_EXPORT", "META_DATA_CAPTURE", "ThreadNames", "ENUM_NSYS_EVENT_TYPE"}


def nsys_confidence(names: set[str]) -> float:
    """How surely a set of table names is an nsys export: CUPTI activity tables, or the
    string table with another nsys-only table. rocpd and legacy rocprof tables rule it out."""
    if any(n.startswith("rocpd_") for n in names):
        return 0.0
    if any(n.startswith("CUPTI_ACTIVITY_KIND_") for n in names):
        return 1.0
    if "StringIds" in names and len(names & NSYS_TABLES) >= 2:
        return 0.8
    return 0.0
