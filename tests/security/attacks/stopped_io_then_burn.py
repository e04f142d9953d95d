"""Class: cross-talk (a stopped runner's system call that sleeps through the stop check, then burns).

Tries: `stopped_kernel_burner` showed that SIGSTOP waits for a thread's system call to end; the
defence (`supervise.busy_while_stopped`) looks once, right after the stop, whether a thread of the
runner is in state R, and only then measures 30 ms of its CPU time. A thread asleep in the kernel
(state D) at that instant passes. Each of __THREADS__ threads (default 3) maps, back to back in one
range, the first pages of a large file of the Python tree that no process maps (its clean pages
dropped from the page cache first with `posix_fadvise(DONTNEED)`, readahead off with
MADV_RANDOM) and then __GB__ GiB (default 64) of read-only anonymous memory (4 KiB zero-page
entries), and calls `madvise(MADV_POPULATE_READ)` over the whole range once: ~__PAGES__ (default 300)
single-page disk reads first (state D, ~0.3-1 s asleep), then ~10 s of CPU in the kernel, all in
one call that only SIGKILL ends. Armed after the last call of each witness round (frames, as
`stopped_kernel_burner`): the runner is stopped while its threads still sleep on the disk, the
check reads "not running", and the burn runs while the next solutions and references are timed.
Honest outputs (COST RMSNorms a call). It prints what it armed and the first thread's phases.
Expect (the defence should make it so): a stopped runner uses no CPU: its threads' later burn is
seen (the runner killed, `background_work`), and the honest solution after it keeps its time.
"""
import _thread
import ctypes
import os
import sys
import time

import torch

try:
    _COST = int("__COST__")
except ValueError:
    _COST = 1
_THREADS = int("__THREADS__") if "__THREADS__".isdigit() else 2
_GB = int("__GB__") if "__GB__".isdigit() else 64
_PAGES = int("__PAGES__") if "__PAGES__".isdigit() else 300
_DELAY_US = 1500
_MAIN = [0]

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_PROT_NONE, _PROT_READ = 0, 1
_MAP_PRIVATE, _MAP_ANON, _MAP_FIXED, _MAP_NORESERVE = 0x02, 0x20, 0x10, 0x4000
_MADV_RANDOM, _MADV_DONTNEED, _MADV_NOHUGEPAGE, _MADV_POPULATE_READ = 1, 4, 15, 22
_FAIL = ctypes.c_void_p(-1).value
_go = [0]
_report = []


def _cold_file():
    """A large file of the Python tree that no process of ours maps (its pages can be dropped)."""
    mapped = set()
    try:
        with open("/proc/self/maps") as f:
            mapped = {ln.split()[-1] for ln in f if "/" in ln}
    except OSError:
        pass
    best = None
    root = os.path.dirname(os.path.dirname(torch.__file__))  # site-packages
    for d, _, files in os.walk(root):
        for n in files:
            p = os.path.join(d, n)
            if p in mapped or n.endswith(".py"):
                continue
            try:
                s = os.stat(p).st_size
            except OSError:
                continue
            if s >= (_THREADS * _PAGES * 4 << 12) and (best is None or (n.endswith((".a", "ptxas")) and not best[1].endswith((".a", "ptxas")))):
                best = (s, p)
        if best is not None and best[1].endswith(".a"):
            break
    return None if best is None else best[1]


def _burner(n, path):
    fd = os.open(path, os.O_RDONLY)
    flen = _PAGES * 4 * 4096  # every 4th page read: _PAGES disk reads
    alen = _GB << 30
    base = _libc.mmap(None, flen + alen, _PROT_NONE, _MAP_PRIVATE | _MAP_ANON | _MAP_NORESERVE, -1, 0)
    if base in (None, _FAIL):
        print(f"IO THEN BURN thread {n}: reserve failed errno {ctypes.get_errno()}", flush=True)
        return
    f = _libc.mmap(base, flen, _PROT_READ, _MAP_PRIVATE | _MAP_FIXED, fd, n * flen)  # pages of its own
    a = _libc.mmap(base + flen, alen, _PROT_READ, _MAP_PRIVATE | _MAP_ANON | _MAP_FIXED | _MAP_NORESERVE, -1, 0)
    if f in (None, _FAIL) or a in (None, _FAIL):
        print(f"IO THEN BURN thread {n}: map failed errno {ctypes.get_errno()}", flush=True)
        return
    _libc.madvise(base, flen, _MADV_RANDOM)
    _libc.madvise(base + flen, alen, _MADV_NOHUGEPAGE)
    seen = 0
    while True:
        if _go[0] == seen:
            time.sleep(0.001)
            continue
        seen = _go[0]
        _libc.madvise(base, flen + alen, _MADV_DONTNEED)  # our own mappings of the file's pages gone
        os.posix_fadvise(fd, n * flen, flen, os.POSIX_FADV_DONTNEED)  # and the pages out of the page cache
        _after_reply()
        t = time.monotonic()
        c = time.thread_time()
        # one call: sleeps on the disk reads first, then burns on the anonymous part
        r = _libc.madvise(base, flen + alen, _MADV_POPULATE_READ)
        _report.append(f"thread {n}: populate rc {r} in {time.monotonic() - t:.1f} s wall, "
                       f"{time.thread_time() - c:.1f} s CPU")
        print("IO THEN BURN", "; ".join(_report[-_THREADS:]), flush=True)


def _state(tid):
    try:
        with open(f"/proc/self/task/{tid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return b"?"


def _after_reply():
    end = time.monotonic() + 1.0
    while _state(_MAIN[0]) != b"S" and time.monotonic() < end:
        time.sleep(0.0002)
    time.sleep(_DELAY_US / 1e6)


def _last_witness_call():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_filename.endswith("witness_graph.py"):
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
        path = _cold_file()
        if path is None:
            print("IO THEN BURN: no cold file found", flush=True)
        else:
            for n in range(_THREADS):
                _thread.start_new_thread(_burner, (n, path))
            print(f"IO THEN BURN armed {_THREADS} threads x ({_PAGES} reads of {os.path.basename(path)} + {_GB} GiB)",
                  flush=True)
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    if _last_witness_call():
        _go[0] += 1
    return out
