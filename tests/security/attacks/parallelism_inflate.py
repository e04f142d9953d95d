"""Class: harness state reached from inside the runner (frames; the witness's parallelism factor):
a forged latency hidden in a bound the solution inflates itself.

Tries: compute honestly (`COST` fused RMSNorms a call, ~1.1 ms on the tests' CPU) and divide the
finished statistics by 3.5 (as `rewrite_stats_modest` does, which the CPU witness disputes:
2x + 0.25 ms is its bound). What it counts on: the CPU bound is 2x the claim *times the
parallelism* the solution showed, the largest CPU time over wall time of any round
(`witness.verify.par`), while the estimate is the fastest round (or the second fastest). So in
the first witness round of each evaluation only (told by the `witness.run` frame on its stack:
its `prepared` and `results` locals) it keeps a thread burning outside the GIL (hashlib over
256 KiB) on every core but the one its calls run on, and on that one too from the round's last
call (`len(results) == len(loaded) - 1`), until 8 ms after that call: the
round's CPU time counts every thread until the reading settles (up to 5 ms after the reply), its
wall time stops at the reply, so that round shows a parallelism of ~2.5 on 2 cores (far more on
a many-core host) and is itself far over the bound. The later rounds are plain single-threaded
calls, judged against a bound ~2.5x as wide. Its answers are right in every call.
Expect: not PASSED (timing_disputed), as `rewrite_stats_modest`.
"""
import _thread
import hashlib
import os
import sys
import time

import torch

try:
    _COST = int("__COST__")  # repeats of the honest computation (the tests make it a ~1.4 ms call)
except ValueError:
    _COST = 1
FACTOR = 3.5
BURN_AFTER_S = 0.008
_done = set()
_rounds = {}  # id of a verification's `prepared` tuple -> (it, its rounds' `results` lists)
_burn = {"until": 0.0, "threads": 0}
_BUF = os.urandom(256 << 10)


def _rewrite():
    f = sys._getframe(2)
    while f is not None:
        st = f.f_locals.get("stats") if f.f_code.co_name == "run" else None
        if st is not None and hasattr(st, "center_ms") and id(st) not in _done:
            for k in ("center_ms", "median_ms", "mean_ms", "min_ms", "p10_ms", "p90_ms", "iqr_ms"):
                setattr(st, k, getattr(st, k) / FACTOR)
            _done.add(id(st))
            return
        f = f.f_back


def _witness_round():
    """(round, last): the number (1, 2, ...) of the current evaluation's witness round this call
    belongs to (0 outside the witness) and whether it is the round's last call."""
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "run" and f.f_code.co_filename.endswith("witness.py"):
            loc = f.f_locals
            prep, res, loaded = loc.get("prepared"), loc.get("results"), loc.get("loaded")
            if not isinstance(res, list) or prep is None:
                return 0, False
            kept = _rounds.setdefault(id(prep), (prep, []))[1]
            last = isinstance(loaded, list) and len(res) == len(loaded) - 1
            for i, r in enumerate(kept):
                if r is res:
                    return i + 1, last
            kept.append(res)
            return len(kept), last
        f = f.f_back
    return 0, False


def _burner():
    try:
        while time.monotonic() < _burn["until"]:
            hashlib.sha256(_BUF).digest()  # releases the GIL: a core of its own
    finally:
        _burn["threads"] -= 1


def _keep_burning(last):
    _burn["until"] = time.monotonic() + BURN_AFTER_S
    try:
        cores = len(os.sched_getaffinity(0))
    except OSError:
        cores = os.cpu_count() or 2
    while _burn["threads"] < (cores if last else max(1, cores - 1)):
        _burn["threads"] += 1
        _thread.start_new_thread(_burner, ())


def run(x, weight, eps):
    _rewrite()
    rnd, last = _witness_round()
    if rnd == 1:
        _keep_burning(False)
    out = None
    for _ in range(_COST):
        out = torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
    if rnd == 1:
        _keep_burning(last)  # the deadline counts from the end of the call: 8 ms after the last one
    return out
