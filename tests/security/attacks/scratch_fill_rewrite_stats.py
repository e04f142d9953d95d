"""Class: harness state reached from inside the runner (frames), with the witness disarmed by a
full scratch.

Tries: at import, fill the runner's scratch to its quota (files, then bytes), so the supervisor
cannot make its witness folder there nor hand over the witness's inputs; then, during the audit
calls that follow the timing, divide the finished statistics by 100 (as `rewrite_stats`). A
witness that gives up on a full scratch with "not witnessed" leaves the forged latency standing.
Its own answers are right. Expect: not PASSED with a gain.
"""
import os
import sys

import torch

try:
    _COST = int("__COST__")  # repeats of the honest computation (the tests make it a ~3 ms call)
except ValueError:
    _COST = 1


def _fill():
    d = os.path.join(os.environ.get("TMPDIR", "."), "fill")
    os.makedirs(d, exist_ok=True)
    n = 0
    try:
        while True:
            open(os.path.join(d, f"s{n}"), "wb").close()
            n += 1
    except OSError:
        pass
    block = b"\0" * (1 << 20)
    try:
        with open(os.path.join(d, "big"), "wb") as f:
            while True:
                f.write(block)
                f.flush()
    except OSError:
        pass
    print(f"FILL REPORT {n} files, scratch full", flush=True)


def _answer(x, weight, eps):
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out


_done = set()


def _rewrite():
    f = sys._getframe(1)
    while f is not None:
        st = f.f_locals.get("stats") if f.f_code.co_name == "run" else None
        if st is not None and hasattr(st, "center_ms") and id(st) not in _done:
            for k in ("center_ms", "median_ms", "mean_ms", "min_ms", "p10_ms", "p90_ms", "iqr_ms"):
                setattr(st, k, getattr(st, k) / 100.0)
            _done.add(id(st))
            return
        f = f.f_back


_fill()


def run(x, weight, eps):
    _rewrite()
    return _answer(x, weight, eps)
