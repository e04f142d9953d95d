"""Class: harness state reached from inside the runner (sys.settrace): rebinding a local variable
of the harness's sampler, which frames alone cannot do.

Tries: install a trace function at import (`sys.settrace`, and `threading.settrace` for threads
started later). It ignores every frame but those of the host sampler's `run` (found by its code
object), and there, on the line after `t1 = _perf_counter()`, writes `t1 = t0 + (t1 - t0) / 100`
into the frame's locals: Python 3.11 copies a trace function's changes to `f_locals` back into
the frame, so every timed sample comes out 100x shorter. No function, object or module attribute
is replaced (the guard's and `timing.tampered()`'s identity checks see nothing), no sample list or
statistics object is touched. Honest work: `COST` fused RMSNorms a call (~1.1 ms on the tests'
CPU), right answers. Expect: not PASSED with a gain (the supervisor's witness disputes it).
"""
import sys
import threading

import torch

try:
    _COST = int("__COST__")
except ValueError:
    _COST = 1
FACTOR = 100.0
_timing = sys.modules.get("flashinfer_bench.bench.timing")
_CODE = _timing.HostSampler.run.__code__ if _timing is not None and hasattr(_timing, "HostSampler") else None
_fixed = set()
_count = [0]


def _local(frame, event, arg):
    if event == "line" and id(frame) not in _fixed:
        loc = frame.f_locals
        t0, t1 = loc.get("t0"), loc.get("t1")
        if isinstance(t0, float) and isinstance(t1, float):
            loc["t1"] = t0 + (t1 - t0) / FACTOR  # written back into the frame after we return
            _fixed.add(id(frame))
            _count[0] += 1
    elif event == "return":
        _fixed.discard(id(frame))
    return _local


def _global(frame, event, arg):
    if event == "call" and frame.f_code is _CODE:
        _fixed.discard(id(frame))
        return _local
    return None


if _CODE is not None:
    sys.settrace(_global)
    threading.settrace(_global)
print(f"SETTRACE: {'installed' if _CODE is not None else 'no HostSampler found'}", flush=True)


def run(x, weight, eps):
    out = None
    for _ in range(_COST):
        out = torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
    return out
