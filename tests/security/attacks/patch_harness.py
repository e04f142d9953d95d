# expect: RUNTIME_ERROR with timer_patched. Replaces the harness's own captured clock and its
# output comparison so that a garbage answer passes and every call seems to take no time.
import sys

import torch

bench = "flashinfer_bench.bench."
timing = sys.modules[bench + "timing"]
evaluate = sys.modules[bench + "evaluate"]
timing._perf_counter = lambda: 0.0
torch.cuda.synchronize = lambda *a, **k: None
evaluate.mismatch_count = lambda *a, **k: torch.zeros((), dtype=torch.int64)


def run(x, weight, eps):
    return torch.zeros(x.shape, dtype=torch.float16)
