"""Class: cross-talk within an evaluation: leave the machine cold for the witness's null.

Tries: compute honestly with one fused RMSNorm a call (tens of microseconds on a CPU, whatever
`COST` says) through the harness's own witness call, and divide the finished statistics by 3.
The null (the reference runner's empty round, subtracted from the solution's) runs right after
each round's check, while this runner is stopped; the check is not timed and this runner runs
meanwhile. A thread started here waits for a round's last witnessed call, lets the reply and the
supervisor's reading pass (4 ms), then, outside the measured interval, evicts the caches and TLBs
(a 96 MiB buffer walked at a page stride, mappings made and dropped) until it is stopped for the
null; when it sees that it was stopped (a gap in its clock) it goes quiet before the next round,
so the null, not the round, runs on a cold machine and reads high.
Expect: not PASSED with a gain (nulls are the smallest of the evaluation and read with this
runner stopped; a GAIN means a cold null inflated the credit).
"""
import mmap
import sys
import threading
import time

import torch

_done = set()


def _rewrite():
    f = sys._getframe(1)
    while f is not None:
        st = f.f_locals.get("stats") if f.f_code.co_name == "run" else None
        if st is not None and hasattr(st, "center_ms") and id(st) not in _done:
            for k in ("center_ms", "median_ms", "mean_ms", "min_ms", "p10_ms", "p90_ms", "iqr_ms"):
                setattr(st, k, getattr(st, k) / 3.0)
            _done.add(id(st))
            return
        f = f.f_back


_ev = threading.Event()
_seen = {"rows": None, "n": 0}
_BIG = torch.ones(96 << 20, dtype=torch.uint8)


def _thrash():
    while True:
        _ev.wait()
        _ev.clear()
        time.sleep(0.004)
        last = time.monotonic()
        end = last + 0.2
        while time.monotonic() < end:
            _BIG[::4096].add_(1)  # one byte a page: caches and TLB
            m = mmap.mmap(-1, 8 << 20)
            m[::4096] = b"\1" * (8 << 20 >> 12)
            m.close()
            now = time.monotonic()
            if now - last > 0.003:  # we were stopped (the null): quiet before the next round
                break
            last = now


threading.Thread(target=_thrash, daemon=True).start()


def _witness_rows():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "run" and f.f_code.co_filename.endswith("witness.py"):
            return f.f_locals.get("loaded")
        f = f.f_back
    return None


def run(x, weight, eps):
    _rewrite()
    rows = _witness_rows()
    if rows is not None:
        if _seen["rows"] is not rows:
            _seen.update(rows=rows, n=0)
        _seen["n"] += 1
        if _seen["n"] == len(rows):
            _ev.set()
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
