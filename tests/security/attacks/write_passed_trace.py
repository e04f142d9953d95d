# expect: RUNTIME_ERROR (PermissionError), dataset unchanged. Writes a forged PASSED trace into the
# dataset's traces, a new traces file, and a pipeline result next to the dataset.
import json
import os

import torch

T = json.loads(__TARGETS__)
FORGED = {
    "definition": "rmsnorm_h256", "solution": "write_passed_trace", "workload": {"uuid": "rms_b16", "axes": {"batch_size": 16}, "inputs": {}},
    "evaluation": {"status": "PASSED", "environment": {"hardware": "NVIDIA H100"}, "timestamp": "2026-01-01T00:00:00Z", "log": "",
                   "correctness": {"max_relative_error": 0.0, "max_absolute_error": 0.0},
                   "performance": {"latency_ms": 1e-6, "reference_latency_ms": 1.0, "speedup_factor": 1e6}},
}


def run(x, weight, eps):
    with open(os.path.join(T["dataset"], "traces", "rmsnorm", "rmsnorm_h256.jsonl"), "a") as f:
        f.write(json.dumps(FORGED) + "\n")
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
