"""A tiny transformer-style model whose kernels go through @apply: the example of the cycle.

    python examples/tiny_model.py                       # plain run: every kernel is its fallback
    python examples/tiny_model.py --trace DIR           # record the workloads it runs into DIR
    flashinfer-bench run --local DIR                    # benchmark them (only the new ones)
    python examples/tiny_model.py --apply DIR           # run the fastest measured solutions

The model uses three definitions of the example dataset: rmsnorm_d4096 (input norm),
gemm_n4096_k4096 (the two projections of each block) and fused_add_rmsnorm_d4096 (residual add +
norm after each block). The definitions fix hidden = 4096; on a CPU keep --tokens small (1-8)
and --blocks at 1-2 and it runs in seconds. Each decorated function's body is the fallback: the
same math as the definition's reference.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Dict, List, Optional, Sequence

import torch

import flashinfer_bench as fb
from flashinfer_bench import apply

HIDDEN = 4096
EPS = 1e-6


@apply("rmsnorm_d4096")
def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.to(torch.float32)
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (xf * rstd * weight.to(torch.float32)).to(torch.float16)


@apply("fused_add_rmsnorm_d4096")
def fused_add_rmsnorm(input: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float):
    s = input.to(torch.float32) + residual.to(torch.float32)
    rstd = torch.rsqrt(s.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (s * rstd * weight.to(torch.float32)).to(torch.float16), s.to(torch.float16)


@apply("gemm_n4096_k4096")
def gemm(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    return torch.matmul(A, B.T)


class TinyModel:
    """Pre-norm blocks: h = gemm(silu(gemm(h, W1)), W2); h, residual = fused_add_rmsnorm(h, residual)."""

    def __init__(self, blocks: int = 2, hidden: int = HIDDEN, device: str = "cpu", seed: int = 0):
        if hidden != HIDDEN:
            raise ValueError(f"the example definitions fix hidden = {HIDDEN}; got {hidden}")
        self.device = torch.device(device)
        g = torch.Generator(device=self.device).manual_seed(seed)
        scale = hidden ** -0.5

        def weight(*shape: int, std: float) -> torch.Tensor:
            return (torch.randn(*shape, generator=g, device=self.device) * std).to(torch.float16)

        self.norm0 = (1 + weight(hidden, std=0.1)).to(torch.float16)
        self.blocks = [
            {
                "w1": weight(hidden, hidden, std=scale),
                "w2": weight(hidden, hidden, std=scale),
                "norm": (1 + weight(hidden, std=0.1)).to(torch.float16),
            }
            for _ in range(blocks)
        ]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = rmsnorm(x, self.norm0, EPS)
        residual = x
        for b in self.blocks:
            a = torch.nn.functional.silu(gemm(h, b["w1"]))
            a = gemm(a, b["w2"])
            h, residual = fused_add_rmsnorm(a, residual, b["norm"], EPS)
        return h

    __call__ = forward


def inputs(tokens: Sequence[int], device: str, seed: int = 1) -> List[torch.Tensor]:
    g = torch.Generator(device="cpu").manual_seed(seed)
    return [torch.randn(t, HIDDEN, generator=g).to(torch.float16).to(device) for t in tokens]


def run(model: TinyModel, xs: Sequence[torch.Tensor], repeat: int = 1) -> Dict[str, object]:
    """Forward every input `repeat` times; the outputs of the last pass and the time per pass."""
    sync = torch.cuda.synchronize if model.device.type == "cuda" else (lambda: None)
    outs: List[torch.Tensor] = []
    times: List[float] = []
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        outs = [model(x) for x in xs]
        sync()
        times.append(time.perf_counter() - t0)
    return {"outputs": outs, "seconds": times}


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trace", metavar="DIR", help="trace the kernels' workloads into this dataset")
    p.add_argument("--apply", metavar="DIR", help="route the kernels to the best solutions of this dataset")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--blocks", type=int, default=2)
    p.add_argument("--hidden", type=int, default=HIDDEN)
    p.add_argument("--tokens", default="1,4,8", help="comma-separated token counts, one forward each")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", metavar="FILE", help="torch.save the outputs (to compare runs)")
    args = p.parse_args(argv)
    tokens = [int(t) for t in args.tokens.split(",") if t]
    model = TinyModel(args.blocks, args.hidden, args.device, args.seed)
    xs = inputs(tokens, args.device)
    tracing = fb.enable_tracing(dataset_dir=args.trace) if args.trace else None
    applying = fb.enable_apply(args.apply) if args.apply else None
    try:
        result = run(model, xs, args.repeat)
    finally:
        if applying is not None:
            fb.disable_apply()
        if tracing is not None:
            fb.disable_tracing()
    secs = result["seconds"]
    summary = {
        "tokens": tokens, "blocks": args.blocks, "device": args.device,
        "seconds_per_pass_median": sorted(secs)[len(secs) // 2],
    }
    if applying is not None:
        from flashinfer_bench.apply import stats

        summary["apply_calls"] = stats()
    if tracing is not None:
        summary["traced"] = tracing.stats
    print(json.dumps(summary, indent=1, default=str))
    if args.save:
        torch.save([o.cpu() for o in result["outputs"]], args.save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
