"""Class: harness state reached from inside the runner (wrapping the result sealer).

Tries: find the runner's sealer on the heap and shadow its sealing closure with a wrapper that
rewrites the result (latency / 100, speedup and percentiles to match) before the genuine closure
MACs it with the genuine key: the supervisor receives a correctly sealed forgery. Its own answers
are right. Expect: not PASSED with a gain.
"""
import gc

import torch

try:
    _COST = int("__COST__")  # repeats of the honest computation (the tests make it a ~3 ms call)
except ValueError:
    _COST = 1


def _answer(x, weight, eps):
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out


_FACTOR = 100.0


def _forge(body):
    perf = body.get("performance") or {}
    if body.get("status") == "PASSED" and perf.get("latency_ms"):
        perf["latency_ms"] /= _FACTOR
        perf["speedup_factor"] = perf["reference_latency_ms"] / perf["latency_ms"]
        ex = body.get("extra") or {}
        for k in ("latency_ms_median", "latency_ms_p10", "latency_ms_p90", "latency_ms_mean", "latency_ms_min", "iqr_ms"):
            if isinstance(ex.get(k), float):
                ex[k] /= _FACTOR


def _wrap():
    for o in gc.get_objects():
        if type(o).__name__ == "Sealer" and not getattr(o, "_forging", False):
            real = o._seal

            def seal(nonce, body, _real=real):
                _forge(body)
                return _real(nonce, body)

            o._seal = seal
            o._forging = True


_once = []


def run(x, weight, eps):
    if not _once:  # one heap scan (a scan costs tens of ms)
        _once.append(_wrap())
    return _answer(x, weight, eps)
