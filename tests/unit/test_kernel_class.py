"""Kernel classes (hipscope.analysis.kernel_class) on real kernel names of both
vendors: each expected class below is written by hand; the full name is read from
the sample file it comes from (so every name is one a profiler really printed):
../shared/samples/kineto/<folder>, or tests/data/<folder> for "data:<folder>"."""

from __future__ import annotations

import gzip
import json
from functools import cache

import pytest

from hipscope.analysis.kernel_class import CLASSES, RULES, classes_of, kernel_class
from tests.conftest import DATA, SAMPLES

# (sample folder, a distinctive part of the real name, expected class)
EXPECTED = [
    # AMD: hipBLASLt/Tensile, Triton attention, MIOpen, PyTorch on ROCm, inductor
    ("amd-mi300x-bert-tracelens", "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT128x144x64",
     "GEMM"),
    ("amd-mi210-gpu-only-tracelens", "Cijk_Ailk_Bjlk_BBS_BH_Bias_HAS_SAV_UserArgs_MT128x64x32",
     "GEMM"),
    ("amd-mi300x-bert-tracelens", "attn_fwd", "attention"),
    ("amd-mi300x-bert-tracelens", "vectorized_layer_norm_kernel", "normalization"),
    ("amd-mi300x-bert-tracelens", "indexSelectLargeIndex", "elementwise"),
    ("amd-mi300x-bert-tracelens", "GeluCUDAKernelImpl", "elementwise"),
    ("amd-mi300x-bert-tracelens", "reduce_kernel<512, 1, at::native::ReduceOp<bool", "reduction"),
    ("amd-mi300x-rocm7.2-triton-tracelens", "triton_poi_fused__unsafe_view_mul_silu_2",
     "elementwise"),
    ("amd-mi300x-rocm7.2-triton-tracelens", "triton_red_fused_add_mean_mul_pow_rsqrt_0",
     "reduction"),
    ("amd-mi210-gpu-only-tracelens", "igemm_fwd_gtcx2_nhwc_bf16", "convolution"),
    ("amd-mi210-gpu-only-tracelens", "igemm_wrw_gtcx2", "convolution"),
    ("amd-mi210-gpu-only-tracelens", "batch_norm_backward_kernel", "normalization"),
    ("amd-mi210-gpu-only-tracelens", "batched_transpose_4x64_half", "other"),
    ("amd-mi210-gpu-only-tracelens", "max_pool_forward_nchw<c10::BFloat16>", "other"),
    ("amd-mi210-gpu-only-tracelens", "SubTensorOpWithScalar1d", "copy/memset"),
    ("amd-mi210-gpu-only-tracelens", "SubTensorOpWithCastTensor1d", "copy/memset"),
    ("amd-mi250-rocm6.2-hta", "direct_copy_kernel_cuda", "copy/memset"),
    ("amd-mi250-rocm6.2-hta", "multi_tensor_apply_kernel", "elementwise"),
    # NVIDIA: cuBLAS/cuBLASLt, CUTLASS, FlashAttention, cuDNN, NCCL, cub, inductor
    ("nvidia-h100-bert-tracelens", "sm90_xmma_gemm_bf16bf16", "GEMM"),
    ("nvidia-h100-bert-tracelens", "cutlass_80_tensorop_bf16_s16816gemm_relu", "GEMM"),
    ("nvidia-h100-bert-tracelens", "flash_fwd_kernel", "attention"),
    ("multirank-sampled-hta", "ampere_sgemm_128x64_nn", "GEMM"),
    ("multirank-sampled-hta", "splitKreduce_kernel", "GEMM"),
    ("multirank-sampled-hta", "ncclKernel_SendRecv", "communication"),
    ("multirank-sampled-hta", "softmax_warp_forward", "reduction"),
    ("multirank-sampled-hta", "CatArrayBatchedCopy<float, unsigned int, 1, 128, 1>",
     "copy/memset"),
    ("multirank-sampled-hta", "GammaBetaBackwardCUDAKernel<float", "normalization"),
    ("multirank-sampled-hta", "DeviceScanKernel", "reduction"),
    ("multirank-sampled-hta", "split_embedding_codegen_forward_unweighted_kernel", "other"),
    ("nvidia-a100-simple-add-hta", "sm80_xmma_fprop_implicit_gemm", "convolution"),
    ("nvidia-a100-simple-add-hta", "cudnn_ampere_scudnn_128x64", "convolution"),
    ("nvidia-a100-simple-add-hta", "fft2d_r2c_32x32<float, false, 0u", "convolution"),
    ("nvidia-h200-generated", "FillFunctor<float>, std::array", "copy/memset"),
    ("nvidia-a100-triton-hta", "triton_poi_fused_add_cos_sin_0", "elementwise"),
    # H200, torch 2.11 / CUDA 13 (tests/data/ops): cuBLAS's nvjet GEMMs, Inductor
    ("data:ops", "nvjet_sm90_tst_", "GEMM"),
    ("data:ops", "triton_per_fused_add_native_layer_norm_view_2", "normalization"),
    ("data:ops", "triton_per_fused__softmax_exp_prepare_softmax_online", "reduction"),
]


@cache
def _names(folder: str) -> tuple[str, ...]:
    out: set[str] = set()
    where = DATA / folder[5:] if folder.startswith("data:") else SAMPLES / "kineto" / folder
    for p in where.glob("*.json.gz"):
        out |= {e["name"] for e in json.loads(gzip.open(p).read())["traceEvents"]
                if e.get("cat") == "kernel"}
    return tuple(sorted(out))


@pytest.mark.parametrize("folder,part,expected", EXPECTED, ids=[e[1][:40] for e in EXPECTED])
def test_real_kernel_names_get_their_class(folder, part, expected):
    real = [n for n in _names(folder) if part in n]
    assert real, f"no kernel named like {part!r} in {folder}"
    assert {kernel_class(n) for n in real} == {expected}


def test_classes_of_maps_codes_and_null_names():
    cats = ["attn_fwd", "Cijk_Alik_Bljk_x", "mystery"]
    got = classes_of([0, 1, 2, -1, 1], cats)
    assert [CLASSES[i] for i in got] == ["attention", "GEMM", "other", "other", "GEMM"]
    assert kernel_class(None) == kernel_class("") == "other"


def test_every_rule_names_its_source_and_a_known_class():
    for rule in RULES:
        assert rule.cls in CLASSES and rule.source
