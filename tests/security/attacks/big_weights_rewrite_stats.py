"""Class: harness state reached from inside the runner (frames), on a workload whose inputs are
large relative to its work: a big constant weight and a small activation (a matrix-vector product,
as a decode step's GEMM or an MoE's expert weights).

Tries: compute the right answer (`x @ w.T`, honest work), and during the audit calls that follow
the timing walk the frames up to the evaluation and divide the finished statistics (latency,
median, percentiles) by 100 before the speedup is computed from them, as `rewrite_stats` does.
What it counts on: the supervisor's witness re-times the calls from outside, but its own share of
a call (handing over the inputs) grows with the inputs' bytes; where that share dwarfed the claim,
the witness gave no timing verdict (`witness_unresolved`) or did not run at all (`unwitnessed`,
inputs over its copy limit), and the forged latency stood. Expect: not PASSED with a gain.
"""
import sys


def _answer(x, w):
    return x @ w.T


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


def run(x, w):
    _rewrite()
    return _answer(x, w)
