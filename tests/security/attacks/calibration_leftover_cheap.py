"""Class: cross-talk (work the stop cannot stop): a 5x forgery of a cheap call whose runner leaves
kernel work running across the reference run after each of its rounds (session 22).

Tries: honest ~12 us RMSNorm calls (rounds of 128 calls), statistics divided by 5 (its witnessed
time, ~24 us a call, is then over its ~20 us bound, 2x + 15.6 us), and the hidden thread of
`calibration_leftover_thread`: once no witnessed call came for 4 ms it frees a 768 MiB buffer it
had filled (one long munmap) and fills a new one, while the supervisor stops the runner and times
the null and the reference on the round's inputs (`_Witness._reference_after`), hoping the
reference reads slower than its latency and that round's time is divided by up to 3x. Expect:
disputed, never PASSED.
"""
import _thread
import ctypes
import mmap
import sys
import time

import torch

_COST = 1  # a cheap call: the attack table leaves it so
_MB = 768
_last = [0.0]
_armed = [False]
_started = []


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
                setattr(st, k, getattr(st, k) / 5.0)
            _done.add(id(st))
            return
        f = f.f_back


def _witnessed():
    f = sys._getframe(2)
    for _ in range(8):
        if f is None:
            return False
        if f.f_code.co_name == "run" and f.f_code.co_filename.endswith("witness.py"):
            return True
        f = f.f_back
    return False


def _fill():
    m = mmap.mmap(-1, _MB << 20)
    buf = (ctypes.c_char * (_MB << 20)).from_buffer(m)
    ctypes.memset(ctypes.addressof(buf), 1, _MB << 20)  # one call, every page faulted in
    del buf
    return m


def _leftover():
    m = None
    while True:
        time.sleep(0.001)
        if not _armed[0] or time.monotonic() - _last[0] < 0.004:
            continue
        _armed[0] = False
        try:
            if m is not None:
                m.close()  # one long munmap
            m = _fill()
        except Exception:
            m = None


def run(x, weight, eps):
    _rewrite()
    if _witnessed():
        if not _started:
            _started.append(True)
            _thread.start_new_thread(_leftover, ())
        out = _answer(x, weight, float(eps))
        _last[0] = time.monotonic()
        _armed[0] = True
        return out
    return _answer(x, weight, float(eps))
