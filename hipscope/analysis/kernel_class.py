"""A vendor-neutral class for every GPU kernel, from documented name rules.

Two runs of one model on different GPUs launch kernels of different names
(hipBLASLt ``Cijk_...`` against cuBLAS ``sm90_xmma_gemm_...``), but both spend their
time in GEMMs, attention, elementwise work... The class makes those comparable. The
rules are regexes tried in order (the first match wins), each citing the library
whose naming it follows (table in docs/analysis.md, "Kernel classes"). Names are
classified once per distinct name, so a trace of millions of kernels costs one regex
pass per name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

GEMM, ATTENTION, CONV = "GEMM", "attention", "convolution"
ELEMENTWISE, REDUCTION, NORM = "elementwise", "reduction", "normalization"
COPY, COMM, OTHER = "copy/memset", "communication", "other"
#: every class, in the order reports list them
CLASSES = (GEMM, ATTENTION, CONV, ELEMENTWISE, REDUCTION, NORM, COPY, COMM, OTHER)


@dataclass(frozen=True)
class ClassRule:
    """Kernels whose name matches ``pattern`` (re.search, case-insensitive) are ``cls``."""

    cls: str
    pattern: str
    source: str


# Order matters: communication and copies first (their names may contain "reduce" or
# "gemm"), attention before GEMM (FlashAttention kernels are built on CUTLASS),
# convolution before GEMM (implicit-GEMM convolutions say "gemm"), normalization
# before reduction/elementwise (Triton and PyTorch norm kernels are both).
RULES: tuple[ClassRule, ...] = (
    ClassRule(COMM, r"nccl|rccl|msccl|cross_device_reduce|all_?reduce|all_?gather|"
              r"reduce_?scatter|all_?to_?all",
              "NCCL/RCCL device kernels (ncclKernel_*, ncclDevKernel_*); vLLM custom all-reduce"),
    ClassRule(COPY, r"__amd_rocclr_(copy|fill)|direct_copy_kernel|CatArrayBatchedCopy|"
              r"FillFunctor|\bmem(cpy|set)|SubTensorOpWith",
              "ROCclr blit kernels behind hipMemcpy/hipMemset (rocclr/device/blit*); "
              "PyTorch copy_/cat/fill_ kernels (aten/src/ATen/native/cuda/Copy.cu, "
              "Shape.cu, FillKernel.cu); MIOpen's set/copy/cast tensor kernels "
              "(SubTensorOpWithScalar/SubTensor/CastTensor*d behind miopenSetTensor, "
              "miopenCopyTensor, miopenCastTensor)"),
    ClassRule(ATTENTION, r"flash|fmha|attn_(fwd|bwd)|_attn\b|attention|sdpa|mha_(fwd|bwd)",
              "FlashAttention (flash_fwd_kernel), CK/aiter fmha, Triton attn_fwd "
              "(ROCm flash-attention Triton backend), xformers/cuDNN fmha, paged_attention"),
    ClassRule(CONV, r"(?<![a-z])conv(?!ert)|igemm_(fwd|bwd|wrw)|implicit_gemm|"
              r"xmma_(fprop|dgrad|wgrad)|scudnn|fft2d_|winograd|naive_conv",
              "MIOpen (igemm_fwd/bwd/wrw_gtc*, naive_conv), cuDNN (scudnn, "
              "xmma_fprop/dgrad/wgrad implicit GEMM, fft2d, winograd), CK grouped_conv"),
    ClassRule(NORM, r"layer_?norm|batch_?norm|group_?norm|rms_?norm|instance_?norm|"
              r"GammaBetaBackward|RowwiseMoments|ComputePartGradGammaBeta",
              "PyTorch layer_norm_kernel.cu / Normalization.cuh / group_norm_kernel.cu, "
              "apex/TE fused norms, Triton *_native_layer_norm_*"),
    ClassRule(GEMM, r"Cijk_|(?<!fb)gemm|gemv|xmma|cutlass|^(ampere|volta|turing|hopper)_|cublas|"
              r"hipblaslt|rocblas|ck_tile|device_gemm|wvSplitK|nvjet|splitKreduce|"
              r"epilogue::impl|triton_tem_fused_(addmm|mm|bmm)",
              "Tensile/hipBLASLt/rocBLAS (Cijk_ = C[i,j] += A*B over k), CK device_gemm and "
              "ck_tile, cuBLAS/cuBLASLt (sm90_xmma_gemm, ampere_sgemm, nvjet, "
              "splitKreduce, epilogue), CUTLASS, Triton inductor mm templates"),
    ClassRule(REDUCTION, r"reduce|triton_(red|per)_|softmax|DeviceScan|DeviceReduce|"
              r"DeviceSegmentedReduce|argmax|argmin|topk|cumsum",
              "PyTorch Reduce.cuh reduce_kernel, SoftMax.cu, cub scans/reductions; "
              "Triton inductor triton_red_ (reduction) and triton_per_ (persistent reduction)"),
    ClassRule(ELEMENTWISE, r"elementwise|triton_poi_|Functor|pointwise|multi_tensor_apply|"
              r"dropout|index|gather|scatter",
              "PyTorch Loops.cuh (elementwise_kernel, vectorized_/unrolled_elementwise_kernel),"
              " ForeachFunctors multi_tensor_apply, indexing/gather kernels; Triton inductor "
              "triton_poi_ (pointwise)"),
)

_COMPILED = tuple((r.cls, re.compile(r.pattern, re.IGNORECASE)) for r in RULES)


def kernel_class(name: str | None) -> str:
    """The class of one kernel name (:data:`OTHER` when no rule matches)."""
    if not name:
        return OTHER
    for cls, rx in _COMPILED:
        if rx.search(name):
            return cls
    return OTHER


def class_codes(categories: Sequence[str | None]) -> np.ndarray:
    """Index into :data:`CLASSES` for each distinct name (categorical table)."""
    index = {c: i for i, c in enumerate(CLASSES)}
    return np.array([index[kernel_class(n)] for n in categories], dtype=np.int8)


def classes_of(codes: np.ndarray | Sequence[int], categories: Sequence[str | None]) -> np.ndarray:
    """Class index per row from a name column's codes (-1 = null name: other)."""
    table = np.append(class_codes(categories), np.int8(CLASSES.index(OTHER)))
    codes = np.asarray(codes, dtype=np.int64)
    return table[np.where(codes < 0, len(categories), codes)]
