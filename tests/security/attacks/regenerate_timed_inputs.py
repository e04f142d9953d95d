"""Class: predictable inputs (regenerating the timed input sequence).

Tries: read the evaluation's secret timing seed from the runner's memory (frames), regenerate the
sequence of timed inputs the harness will draw (its own refresher, called with a copy of the
random generator it will use: whatever the refresh scheme), and in the first (warm-up)
timed call precompute the answers of the next few thousand calls. Every later call returns its
precomputed answer: right outputs (every re-check passes), near-zero time.
Expect: not PASSED with a gain.
"""
import random
import sys

import torch

_st = {"k": 0, "answers": None}
M = 4000


try:
    _COST = int("__COST__")  # repeats of the honest computation (the tests make it a ~3 ms call)
except ValueError:
    _COST = 1


def _answer(x, weight, eps):
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out


def _timing_frame():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "_time_solution":
            return f
        f = f.f_back
    return None


def _precompute(frame, x, weight, eps):
    from flashinfer_bench.bench.inputs import derive_seed

    ev, refresh = frame.f_locals["self"], frame.f_locals["refresh"]
    rng = random.Random(derive_seed(ev.timing_seed, ev.workload.uuid, 20_002))
    bufs = [x.clone(), weight.clone(), eps]  # the harness's own refresher, on our copy of its rng
    answers = []
    for _ in range(min(M, (256 << 20) // (2 * x.numel() * x.element_size()), max(50, 4000 // _COST))):
        refresh(bufs, rng)
        answers.append(_answer(bufs[0], bufs[1], eps))
    return answers


def run(x, weight, eps):
    frame = _timing_frame()
    if frame is None:
        return _answer(x, weight, eps)
    if _st["answers"] is None:
        _st["answers"] = _precompute(frame, x, weight, eps)
        print("precomputed", len(_st["answers"]), "answers; first matches:", torch.equal(_st["answers"][0], _answer(x, weight, eps)))
    k = _st["k"]
    _st["k"] += 1
    if k < len(_st["answers"]):
        return _st["answers"][k]
    return _answer(x, weight, eps)
