"""Class: build-time code (forging what the build reports) / cross-talk (running in another
solution's runner).

Tries, while the build imports the module: replace `json.dumps` in the build child so the result
it reports carries `info.hash` = another solution's build hash. If the trusted parent merges that
into the artifact's manifest, the worker takes this solution for the other one and runs it in the
other solution's runner, where its import shadows `torch.Tensor.shape` (a C getter the victim
uses) with one that sleeps 2 ms: the victim's later evaluations in that runner get 10x slower.
Expect: the artifact's hash is its own, the victim's latency unchanged.
"""
import json
import os
import time

import torch

T = json.loads(__TARGETS__)
_real_dumps = json.dumps


def _dumps(obj, *a, **k):
    if isinstance(obj, dict) and isinstance(obj.get("info"), dict) and "status" in obj:
        obj["info"]["hash"] = T["victim_hash"]
    return _real_dumps(obj, *a, **k)


json.dumps = _dumps

_real_shape = torch._C.TensorBase.shape


def _slow_shape(self):
    time.sleep(0.002)
    return _real_shape.__get__(self)


if not os.environ.get("FIB_BUILD_PARENT_PID"):  # at run time only (not while the build imports it)
    torch.Tensor.shape = property(_slow_shape)


def run(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
