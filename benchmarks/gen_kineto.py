"""Write a synthetic but realistic new-style PyTorch profiler (Kineto) trace.

``write_kineto_json(path, n_events, seed=0)`` writes a Chrome-trace JSON shaped like
what torch >= 2.4 writes on an NVIDIA GPU: ``baseTimeNanoseconds`` with relative µs
timestamps (3 decimals), ``deviceProperties``, CUDA version keys, ``ph:M`` metadata,
and per launch: a ``cpu_op`` (nested in a ``user_annotation`` step), a
``cuda_runtime`` launch, the ``kernel`` on one of several streams, ``ac2g`` flows
(``s`` at the launch, ``f``/``bp:e`` at the kernel), plus ``gpu_memcpy`` /
``gpu_memset``, ``cuda_sync`` and ``gpu_user_annotation`` ranges. ~300 distinct long
(templated C++) kernel names. Kineto's own formatting (indentation, key order) is kept.

Run: ``python benchmarks/gen_kineto.py OUT.json [N_EVENTS] [NAME_PAD]`` then time
``python benchmarks/bench_kineto.py OUT.json``.
"""

from __future__ import annotations

import gzip
import random
import sys
from pathlib import Path

_BASE_NS = 1_790_857_026_000_000_000
_TEMPLATES = (
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
    "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{{lambda()#3}}::operator()() "
    "const::{{lambda()#{i}}}::operator()() const::{{lambda(float)#1}}>(at::TensorIteratorBase&, "
    "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{{lambda()#3}}::operator()() "
    "const::{{lambda()#{i}}}::operator()() const::{{lambda(float)#1}} const&)::{{lambda(int)#1}}>"
    "(int, at::native::gpu_kernel_impl_nocast<...>)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>,"
    " std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
    "std::array<char*, 3ul>) /* variant {i} */",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
    "execute_segment_k_off_kernel__5x_cublas_{i}",
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_nn_"
    "align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_nn_align8::Params) #{i}",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, c10::BFloat16, float, "
    "c10::BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, "
    "c10::BFloat16 const*, int) /* {i} */",
    "triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_{i}",
)
_OPS = ("aten::linear", "aten::addmm", "aten::add", "aten::mul", "aten::softmax",
        "aten::copy_", "aten::layer_norm", "aten::gelu", "aten::matmul", "aten::bmm")


def _kernel_names(rng: random.Random, n: int = 300) -> list[str]:
    return [_TEMPLATES[i % len(_TEMPLATES)].format(i=i) for i in range(n)]


def _header(n_dev: int) -> str:
    props = ",".join(
        f"""
    {{
      "id": {d}, "name": "NVIDIA H200", "totalGlobalMem": 150109880320,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "numSms": 132
    , "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472
    }}""" for d in range(n_dev))
    return f"""
  {{
    "schemaVersion": 1,
    "deviceProperties": [{props}
    ],
      "distributedInfo": {{"backend": "nccl", "rank": 0, "world_size": 8}},
      "record_shapes": 1,
      "cuda_driver_version": 13000,
      "cuda_runtime_version": 13000,
      "cupti_version": 130001,
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": {_BASE_NS},
  "traceEvents": ["""


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def write_kineto_json(path: str | Path, n_events: int, seed: int = 0,
                      name_pad: int = 0) -> Path:
    """Write exactly ``n_events`` elements of traceEvents to ``path`` (gzipped when it
    ends in .gz). ~310 bytes per event; ``name_pad`` adds that many characters of
    template arguments to every kernel name (1400 gives ~570 bytes per event, like
    traces dominated by long at::native lambda kernel names)."""
    rng = random.Random(seed)
    path = Path(path)
    names = _kernel_names(rng)
    if name_pad > 0:
        unit = "at::native::detail::Array<char*, 3>, OffsetCalculator<2, unsigned int, false>, "
        pad = (unit * (name_pad // len(unit) + 1))[:name_pad]
        names = [n[:-1] + ", " + pad + ">" if n.endswith(")") or n.endswith(">")
                 else n + "<" + pad + ">" for n in names]
    pid, tid = 4242, 4242
    streams = (7, 13, 20, 24)
    opener = gzip.open if path.suffix == ".gz" else open
    out: list[str] = []
    written = 0
    t = 5_108_254_345_918_227  # relative ns (~59 days after the base)
    corr = 1000
    ext = 1
    step = 0
    with opener(path, "wt", encoding="utf-8") as fh:
        fh.write(_header(2))
        first = True

        def emit(s: str) -> None:
            nonlocal first, written
            out.append(s if first else "," + s)
            first = False
            written += 1

        # metadata events
        for p, label in ((pid, "CPU"), (0, "GPU 0"), (1, "GPU 1")):
            emit(f"""
  {{
    "name": "process_name", "ph": "M", "ts": {_us(t)}, "pid": {p}, "tid": 0,
    "args": {{
      "name": "python3"
    }}
  }}""")
            emit(f"""
  {{
    "name": "process_labels", "ph": "M", "ts": {_us(t)}, "pid": {p}, "tid": 0,
    "args": {{
      "labels": "{label}"
    }}
  }}""")
        for s in streams:
            emit(f"""
  {{
    "name": "thread_name", "ph": "M", "ts": {_us(t)}, "pid": 0, "tid": {s},
    "args": {{
      "name": "stream {s} "
    }}
  }}""")
        gpu_t = {s: t for s in streams}
        while written < n_events - 12:
            # one step: user_annotation + gpu_user_annotation around ~200 launches
            step_start = t
            n_launch = rng.randint(150, 250)
            step_gpu_start = None
            step_gpu_end = 0
            for _ in range(n_launch):
                if written >= n_events - 12:
                    break
                op = _OPS[rng.randrange(len(_OPS))]
                op_dur = rng.randint(8_000, 40_000)
                op_start = t
                emit(f"""
  {{
    "ph": "X", "cat": "cpu_op", "name": "{op}", "pid": {pid}, "tid": {tid},
    "ts": {_us(op_start)}, "dur": {_us(op_dur)},
    "args": {{
      "External id": {ext},"Record function id": 0, "Concrete Inputs": ["", "", ""], "Input type": ["c10::BFloat16", "c10::BFloat16", "Scalar"], "Input Strides": [[4096, 1], [4096, 1], []], "Input Dims": [[{rng.choice((512, 1024, 2048))}, 4096], [4096, 4096], []], "Ev Idx": {written}
    }}
  }}""")
                rt_start = op_start + rng.randint(1_000, 3_000)
                rt_dur = rng.randint(3_000, 9_000)
                s = streams[rng.randrange(len(streams))] if rng.random() < 0.3 else 7
                kind = rng.random()
                if kind < 0.9:
                    kname = names[int(rng.paretovariate(1.2)) % len(names)]
                    emit(f"""
  {{
    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {pid}, "tid": {tid},
    "ts": {_us(rt_start)}, "dur": {_us(rt_dur)},
    "args": {{
      "External id": {ext},"cbid": 211, "correlation": {corr}
    }}
  }}""")
                    emit(f"""
  {{
    "ph": "s", "id": {corr}, "pid": {pid}, "tid": {tid}, "ts": {_us(rt_start)},
    "cat": "ac2g", "name": "ac2g"
  }}""")
                    k_start = max(gpu_t[s], rt_start + rng.randint(2_000, 20_000))
                    k_dur = rng.randint(1_500, 400_000)
                    gpu_t[s] = k_start + k_dur + rng.randint(500, 3_000)
                    blocks = rng.choice((1, 36, 132, 264, 1024, 65535))
                    bs = rng.choice((128, 256, 512, 1024))
                    emit(f"""
  {{
    "ph": "X", "cat": "kernel", "name": "{kname}", "pid": {s % 2 if s != 7 else 0}, "tid": {s},
    "ts": {_us(k_start)}, "dur": {_us(k_dur)},
    "args": {{
      "External id": {ext},
      "queued": 0, "device": {s % 2 if s != 7 else 0}, "context": 1,
      "stream": {s}, "correlation": {corr},
      "registers per thread": {rng.choice((16, 32, 64, 128, 224))},
      "shared memory": {rng.choice((0, 8192, 18816, 49152))},
      "blocks per SM": {blocks / 132:.6f},
      "warps per SM": {blocks * bs / 32 / 132:.6f},
      "grid": [{blocks}, 1, 1],
      "block": [{bs}, 1, 1],
      "est. achieved occupancy %": {rng.randint(0, 100)}
    }}
  }}""")
                    emit(f"""
  {{
    "ph": "f", "id": {corr}, "pid": {s % 2 if s != 7 else 0}, "tid": {s}, "ts": {_us(k_start)},
    "cat": "ac2g", "name": "ac2g", "bp": "e"
  }}""")
                else:
                    is_set = kind > 0.97
                    rname = "cudaMemsetAsync" if is_set else "cudaMemcpyAsync"
                    emit(f"""
  {{
    "ph": "X", "cat": "cuda_runtime", "name": "{rname}", "pid": {pid}, "tid": {tid},
    "ts": {_us(rt_start)}, "dur": {_us(rt_dur)},
    "args": {{
      "External id": {ext},"cbid": {51 if is_set else 41}, "correlation": {corr}
    }}
  }}""")
                    k_start = max(gpu_t[s], rt_start + rng.randint(2_000, 20_000))
                    nbytes = rng.choice((4, 1024, 65536, 4194304, 67108864))
                    k_dur = 1_000 + nbytes // 20_000
                    gpu_t[s] = k_start + k_dur + 1_000
                    dev = s % 2 if s != 7 else 0
                    if is_set:
                        name, cat = "Memset (Device)", "gpu_memset"
                    else:
                        name = rng.choice(("Memcpy HtoD (Pageable -> Device)",
                                           "Memcpy DtoH (Device -> Pinned)",
                                           "Memcpy DtoD (Device -> Device)"))
                        cat = "gpu_memcpy"
                    emit(f"""
  {{
    "ph": "X", "cat": "{cat}", "name": "{name}", "pid": {dev}, "tid": {s},
    "ts": {_us(k_start)}, "dur": {_us(k_dur)},
    "args": {{
      "External id": {ext},
      "device": {dev}, "context": 1,
      "stream": {s}, "correlation": {corr},
      "bytes": {nbytes}, "memory bandwidth (GB/s)": {nbytes / k_dur:.6f}
    }}
  }}""")
                if step_gpu_start is None:
                    step_gpu_start = k_start
                step_gpu_end = max(step_gpu_end, k_start + k_dur)
                corr += 1
                ext += 1
                t = op_start + op_dur + rng.randint(500, 5_000)
            if written < n_events - 12 and rng.random() < 0.5:
                emit(f"""
  {{
    "ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": {pid}, "tid": {tid},
    "ts": {_us(t)}, "dur": {_us(10_000)},
    "args": {{
      "cbid": 131, "correlation": {corr}
    }}
  }}""")
                emit(f"""
  {{
    "ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7,
    "ts": {_us(t + 2_000)}, "dur": {_us(7_000)},
    "args": {{
      "External id": {ext}, "cuda_sync_kind": "Stream Sync", "stream": 7, "correlation": {corr}, "device": 0, "context": 1
    }}
  }}""")
                corr += 1
                t += 12_000
            emit(f"""
  {{
    "ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": {pid}, "tid": {tid},
    "ts": {_us(step_start)}, "dur": {_us(t - step_start)},
    "args": {{
      "External id": {ext},"Record function id": 0, "Ev Idx": {written}
    }}
  }}""")
            if step_gpu_start is not None:
                emit(f"""
  {{
    "ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#{step}", "pid": 0, "tid": 7,
    "ts": {_us(step_gpu_start)}, "dur": {_us(max(step_gpu_end - step_gpu_start, 0))},
    "args": {{
      "External id": {ext}
    }}
  }}""")
            ext += 1
            step += 1
            if len(out) > 4096:
                fh.write("".join(out))
                out.clear()
        while written < n_events:
            emit(f"""
  {{
    "name": "Record Window End", "ph": "i", "s": "g",
    "pid": "", "tid": "", "ts": {_us(t)}
  }}""")
        fh.write("".join(out))
        fh.write('\n  ],\n  "traceName": "synthetic_kineto.json"\n}')
    return path


if __name__ == "__main__":
    out_path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/kineto_1m.json")
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    pad = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    write_kineto_json(out_path, n, name_pad=pad)
    print(out_path, out_path.stat().st_size)
