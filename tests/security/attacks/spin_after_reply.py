"""Class: harness state reached from inside the runner (the witness's clock): work hidden in the
lag of the kernel's CPU accounting.

Tries: compute the right answer (~0.4 ms a call with the tests' `COST`), divide the finished
statistics by 100 from the frames (as `rewrite_stats` does), and rewrite the code of the runner's
`send_msg` so that after every reply the runner's main thread stays on the CPU for 10 ms more.
What it counts on: the kernel adds a running thread's time to its cgroup only at a tick (4 ms at
HZ=250) or when the thread leaves the CPU. The supervisor read the runner's CPU time right after
the reply, while the main thread still ran: a witness round of a few milliseconds that no tick
fell into was missing from that reading, and a tick during the spin counted it after the reading,
outside every window; with 8 rounds and the fastest counting, one such round passes the forgery.
Expect: not PASSED with a gain (the supervisor now reads once no thread of the runner is running,
up to 5 ms, by when a tick has counted what ran before). Measured on the 2-core CPU VM with ~0.3 ms
calls forged 100x: the old reading witnessed 350-500 us a call, about half of what the settled one
does (690-1200 us, the spin's first 5 ms included); both disputed it there.
"""
import sys
import time
import types

try:
    _COST = int("__COST__")  # repeats of the honest computation
except ValueError:
    _COST = 1

_done = set()
_patched = []


def _answer(x, weight, eps):
    for _ in range(_COST):
        xf = x.float()
        out = (xf * (xf.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * weight.float()).half()
    return out


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


def _spin_after_send(sock, obj, *args, **kwargs):
    # runs as protocol.send_msg: its globals are the protocol module's (see _patch)
    r = _fib_orig_send(sock, obj, *args, **kwargs)
    t = _fib_clock()
    while _fib_clock() - t < 0.01:
        pass
    return r


def _patch():
    if _patched:
        return
    _patched.append(True)
    try:
        from flashinfer_bench.bench import protocol
    except ImportError:
        return
    f = protocol.send_msg
    g = f.__globals__
    g["_fib_orig_send"] = types.FunctionType(f.__code__, g, "send_msg", f.__defaults__, f.__closure__)
    g["_fib_clock"] = time.thread_time
    try:
        f.__code__ = _spin_after_send.__code__
    except (TypeError, ValueError, AttributeError):
        pass


def run(x, weight, eps):
    _patch()
    _rewrite()
    return _answer(x, weight, eps)
