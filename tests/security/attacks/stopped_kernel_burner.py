"""Class: cross-talk (work a stopped runner keeps doing inside the kernel: SIGSTOP waits for a syscall to end).

Tries: a runner that has run a solution is stopped (SIGSTOP, `proctree.stop_tree`) whenever its
solution is not being evaluated, so that nothing it left runs beside the reference's timing or
another solution's evaluation. A stop takes effect when a thread returns to user space; a
syscall that checks only for *fatal* signals runs to its end first. `madvise(MADV_POPULATE_READ)`
over a huge read-only anonymous mapping (no memory: every page maps the shared zero page, only
page tables are made) is such a call: ~4.3 s of kernel CPU per 32 GiB on the 2-core VM, and
`stop_tree` judges a process by its leader's state (T) alone. Honest outputs (COST RMSNorms a call,
like the other costly attacks); in the last call of each witness round (found in the frames; on a GPU
any call of the graph witness) it
arms __THREADS__ threads (default 3) that wait until the main thread sleeps in its next receive,
__DELAY_US__ us more (default 1500: after the supervisor's settled CPU reading of the round, before
its check in the reference runner ends and the runner is stopped), and then each populate __GB__
GiB (default 64): measured, both cores busy (1.99 CPU s a second) for ~14.5 s while the runner
is "stopped", beside the reference timing of the next workload and the next evaluations. The
page tables (2 MiB per GiB mapped) are memory the supervisor's watch (resident set, tmpfs,
memfd) does not see. It prints what it armed.
Expect (the defence should make it so): a stopped runner uses no CPU (a thread still running
after the stop is found and the runner killed, SIGKILL ends the populate), and the honest
solution and the reference timed after it keep their times.
"""
import _thread
import ctypes
import sys
import time

import torch

try:
    _COST = int("__COST__")
except ValueError:
    _COST = 1
_THREADS = int("__THREADS__") if "__THREADS__".isdigit() else 3
_GB = int("__GB__") if "__GB__".isdigit() else 64
_DELAY_US = int("__DELAY_US__") if "__DELAY_US__".isdigit() else 1500
_MAIN = [0]

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_PROT_READ, _MAP_PRIVATE_ANON_NORESERVE = 1, 0x02 | 0x20 | 0x4000
_MADV_DONTNEED, _MADV_NOHUGEPAGE, _MADV_POPULATE_READ = 4, 15, 22
_go = [0]  # generation of the trigger: each armed round starts one populate per thread
_report = []


def _burner(n):
    size = _GB << 30
    addr = _libc.mmap(None, size, _PROT_READ, _MAP_PRIVATE_ANON_NORESERVE, -1, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        print(f"KERNEL BURNER thread {n}: mmap failed errno {ctypes.get_errno()}", flush=True)
        return
    _libc.madvise(addr, size, _MADV_NOHUGEPAGE)  # 4 KiB zero-page entries: the slow kind
    seen = 0
    while True:
        if _go[0] == seen:
            time.sleep(0.001)
            continue
        seen = _go[0]
        _after_reply()
        t = time.monotonic()
        r = _libc.madvise(addr, size, _MADV_POPULATE_READ)  # runs to its end: SIGSTOP is not fatal
        _report.append(f"thread {n}: populate {_GB} GiB rc {r} in {time.monotonic() - t:.1f} s")
        _libc.madvise(addr, size, _MADV_DONTNEED)  # page tables freed, ready for the next trigger
        print("KERNEL BURNER", "; ".join(_report[-_THREADS:]), flush=True)


def _state(tid):
    try:
        with open(f"/proc/self/task/{tid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return b"?"


def _after_reply():
    """Wait until the main thread sleeps in its next receive (its reply is sent), then a little
    more: the supervisor reads the round's CPU time as soon as no thread of the runner is on a CPU
    (this one sleeps meanwhile), checks the outputs in the reference runner and stops the runner."""
    end = time.monotonic() + 1.0
    while _state(_MAIN[0]) != b"S" and time.monotonic() < end:
        time.sleep(0.0002)
    time.sleep(_DELAY_US / 1e6)


def _last_witness_call():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_filename.endswith("witness_graph.py"):  # a GPU's witness: any of its calls
            return True
        if f.f_code.co_name == "run" and f.f_code.co_filename.endswith("witness.py"):
            loaded, i = f.f_locals.get("loaded"), f.f_locals.get("i")
            return isinstance(loaded, list) and i == len(loaded) - 1
        f = f.f_back
    return False


_started = []


def run(x, weight, eps):
    if not _started:
        _started.append(True)
        import threading
        _MAIN[0] = threading.get_native_id()
        for n in range(_THREADS):
            _thread.start_new_thread(_burner, (n,))
        print(f"KERNEL BURNER armed {_THREADS} threads x {_GB} GiB", flush=True)
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    if _last_witness_call():
        _go[0] += 1
        print(f"KERNEL BURNER triggered ({_go[0]})", flush=True)
    return out
