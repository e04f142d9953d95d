"""Class: cross-talk (page-cache thrash of files every runner shares, from inside a runner).

Tries: reading is all a runner may do outside its scratch, but `posix_fadvise(POSIX_FADV_DONTNEED)`
on a read-only descriptor drops that file's clean, unmapped pages from the page cache for every
process of the machine (no write access, no capability, no seccomp rule: fadvise64 is allowed).
Its first call walks the dataset, the artifact cache and the Python tree (torch's package among
them: its .py files and the libraries no process maps now) and drops every file's pages, at most
__FILES__ files (default 20000) or 5 s; a hidden thread then does it again every 0.5 s while its
runner runs, so that the reference runner, the next runner and the trusted pipeline read them
from disk again (a workload's safetensors inputs, a competitor's artifact, torch's modules). It
measures with mincore how much of one of torch's modules was cached before and after, and prints what
it dropped. Correct outputs.
Expect: contained: no number moves (loading inputs, artifacts and modules is not timed, and a
parked runner is stopped), the honest solution after it keeps its time. What it costs others is
wall time outside the measurement.
"""
import _thread
import ctypes
import json
import mmap
import os
import sys
import time

import torch

T = json.loads(__TARGETS__)
_MAX = int("__FILES__") if "__FILES__".isdigit() else 20000
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_started = []


def _roots():
    return [T.get("dataset", ""), T.get("cache", ""), os.path.dirname(os.path.dirname(torch.__file__)), sys.prefix]


def _cached_fraction(path):
    """The share of `path`'s pages in the page cache (mincore on a read-only mapping of it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return None
        addr = _libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        if addr in (None, ctypes.c_void_p(-1).value):
            return None
        pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
        vec = ctypes.create_string_buffer(pages)
        r = _libc.mincore(ctypes.c_void_p(addr), size, vec)
        _libc.munmap(ctypes.c_void_p(addr), size)
        return round(sum(1 for b in vec.raw if b & 1) / pages, 3) if r == 0 else None
    finally:
        os.close(fd)


def _drop(limit_s):
    n, nbytes, t0 = 0, 0, time.monotonic()
    for root in _roots():
        for dirpath, _, files in os.walk(root):
            for name in files:
                if n >= _MAX or time.monotonic() - t0 > limit_s:
                    return n, nbytes
                p = os.path.join(dirpath, name)
                try:
                    fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                except OSError:
                    continue
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    nbytes += os.fstat(fd).st_size
                    n += 1
                except OSError:
                    pass
                finally:
                    os.close(fd)
    return n, nbytes


def _again():
    while True:
        time.sleep(0.5)
        _drop(1.0)


def run(x, weight, eps):
    if not _started:
        _started.append(True)
        sample = os.path.join(os.path.dirname(torch.__file__), "functional.py")  # read by every runner's import
        before = _cached_fraction(sample)
        n, nbytes = _drop(5.0)
        after = _cached_fraction(sample)
        print(f"PAGE CACHE REPORT dropped the pages of {n} files ({nbytes >> 20} MiB); {os.path.basename(sample)} "
              f"cached {before} -> {after}", flush=True)
        _thread.start_new_thread(_again, ())
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
