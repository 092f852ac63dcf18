#!/usr/bin/env python3
"""A small LLM-style decode loop (one token per step, static KV cache); ``--cuda-graph on``
replays one captured decode step (issue 12 section 5, workload a).

Each step embeds the current token, runs ``--layers`` pre-norm transformer blocks (bf16;
attention of the one new query over a ``--ctx``-slot KV cache whose slot ``pos % ctx`` the
step overwrites; a 4x MLP), takes the argmax of the logits as the next token and advances
``pos``, all on the GPU with static shapes, so that the whole step can be captured with
``torch.cuda.CUDAGraph`` and replayed. Eager, the step is some 60 small kernels launched
from Python: launch-bound. After ``--warmup`` untimed steps it times ``--steps`` steps with
CUDA events and prints the mean step time as ``HIPSCOPE_RESULT {"wall_s": ...}``. Every
step is a ``record_function`` range ``step#<i>`` so that a profiler trace has steps.

    python3 decode_graph.py [--cuda-graph off|on] [--layers 4] [--dim 512] [--heads 8]
                            [--ctx 256] [--vocab 8192] [--steps 200] [--warmup 20]
"""

from __future__ import annotations

import argparse
import json
import sys


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cuda-graph", choices=("off", "on"), default="off")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--ctx", type=int, default=256, help="KV-cache slots")
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--steps", type=int, default=200, help="timed steps")
    p.add_argument("--warmup", type=int, default=20, help="untimed steps first")
    return p.parse_args(argv)


def build(torch, a):
    """Weights, KV caches and the static token/position tensors (seeded)."""
    dev, dt = torch.device("cuda"), torch.bfloat16
    g = torch.Generator(device=dev).manual_seed(0)
    d = a.dim

    def w(*shape):
        return (torch.randn(*shape, device=dev, generator=g) * shape[0] ** -0.5).to(dt)
    layers = [{"wqkv": w(d, 3 * d), "wo": w(d, d), "w1": w(d, 4 * d), "w2": w(4 * d, d),
               "k": w(1, a.ctx, d), "v": w(1, a.ctx, d)} for _ in range(a.layers)]
    emb = w(a.vocab, d)
    tok = torch.zeros(1, dtype=torch.long, device=dev)
    pos = torch.zeros(1, dtype=torch.long, device=dev)
    return emb, layers, tok, pos


def decode_step(torch, a, emb, layers, tok, pos) -> None:
    """One token: reads ``tok`` and ``pos``, writes the caches, the next token and pos."""
    F = torch.nn.functional  # noqa: N806 - the usual torch alias
    d, h = a.dim, a.heads
    x = emb[tok]                                              # (1, d)
    for L in layers:  # noqa: N806 - one layer's weights
        q, k, v = (F.layer_norm(x, (d,)) @ L["wqkv"]).split(d, dim=-1)
        L["k"].index_copy_(1, pos, k.view(1, 1, d))
        L["v"].index_copy_(1, pos, v.view(1, 1, d))
        kk = L["k"].view(1, a.ctx, h, d // h).transpose(1, 2)
        vv = L["v"].view(1, a.ctx, h, d // h).transpose(1, 2)
        att = F.scaled_dot_product_attention(q.view(1, h, 1, d // h), kk, vv)
        x = x + att.reshape(1, d) @ L["wo"]
        x = x + F.gelu(F.layer_norm(x, (d,)) @ L["w1"]) @ L["w2"]
    logits = F.layer_norm(x, (d,)) @ emb.t()
    tok.copy_(logits.argmax(dim=-1))
    pos.copy_((pos + 1) % a.ctx)


def capture(torch, fn):
    """A CUDA graph of ``fn`` (warmed up on a side stream first, as PyTorch requires)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


def main(argv: list[str]) -> int:
    a = parse(argv)
    import torch

    emb, layers, tok, pos = build(torch, a)

    def fn():
        decode_step(torch, a, emb, layers, tok, pos)
    step = capture(torch, fn).replay if a.cuda_graph == "on" else fn
    for i in range(a.warmup):
        with torch.profiler.record_function(f"step#{i}"):
            step()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(a.warmup, a.warmup + a.steps):
        with torch.profiler.record_function(f"step#{i}"):
            step()
    end.record()
    torch.cuda.synchronize()
    step_s = start.elapsed_time(end) / 1000.0 / a.steps
    print(f"cuda-graph={a.cuda_graph} layers={a.layers} step={step_s * 1e3:.3f} ms "
          f"token={int(tok.item())} pos={int(pos.item())}", file=sys.stderr)
    print("HIPSCOPE_RESULT " + json.dumps({"wall_s": step_s, "steps": a.steps,
                                           "cuda_graph": a.cuda_graph}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
