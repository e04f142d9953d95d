"""Class: harness state reached from inside the runner (module attributes): answer the witness's
timed round before its work is done.

Tries: replace the device-time round's replay in the runner's own copy of the harness
(`witness_graph._Staged.replay`) so that the supervisor's timed request is answered at once with
made-up digests, and run the calls only when their outputs are asked for (`save`), after the
clock stopped; the statistics divided by 3.5 as well, so a pass would be a gain.
Expect: not PASSED with a gain (the outputs do not hash to the digests replied while timed).
"""
import sys

import torch

try:
    _COST = int("__COST__")  # repeats on a CPU (the tests make the honest call ~3 ms there)
except ValueError:
    _COST = 1
_done = set()


def _rewrite():
    f = sys._getframe(1)
    while f is not None:
        st = f.f_locals.get("stats") if f.f_code.co_name == "run" else None
        if st is not None and hasattr(st, "center_ms") and id(st) not in _done:
            for k in ("center_ms", "median_ms", "mean_ms", "min_ms", "p10_ms", "p90_ms", "iqr_ms"):
                setattr(st, k, getattr(st, k) / 3.5)
            _done.add(id(st))
            return
        f = f.f_back


def _patch():
    m = sys.modules.get("flashinfer_bench.bench.sandbox.witness_graph")
    if m is None or getattr(m, "_late_patched", False):
        return
    replay, save = m._Staged.replay, m.save

    def quick_replay(self, seed, key, m=None):
        self._late = (seed, key, m)
        return [0] * (self.k * (m or self.m))

    def late_save(state, calls, folder):
        st = getattr(state, "_witness_graph", None)
        if st is not None and getattr(st, "_late", None):
            replay(st, *st._late)  # the calls, after the timed reply
        return save(state, calls, folder)

    m._Staged.replay = quick_replay
    m.save = late_save
    m._late_patched = True


_patch()


def run(x, weight, eps):
    _rewrite()
    out = None
    for _ in range(_COST if x.device.type == "cpu" else 1):  # a CPU has no graph round: the coarse one judges
        out = torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
    return out
