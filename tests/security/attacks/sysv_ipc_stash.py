"""Class: leaks and gaps (System V shared memory and POSIX message queues): memory and data
that outlive the runner, unseen by the memory watch.

Tries: at import, look for a System V shared memory segment and a POSIX message queue left by
an earlier runner under a fixed key (`__KEY__`) and name (a channel from one evaluation, or one
solution, to the next: a content cache or answers passed on); then make a segment of `__MB__`
MiB under that key, touch every page, detach it without removing it (no process maps it any
more, so no resident set shows it and it lives on after the runner: /dev/shm's leak by another
door) and leave a message queue with a message in it. Computes the right answer.
Expect: every call refused (seccomp), nothing of it exists after the evaluation.
"""
import ctypes
import ctypes.util
import os

import torch

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.shmat.restype = ctypes.c_void_p
_libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
_libc.shmdt.argtypes = [ctypes.c_void_p]
_IPC_CREAT = 0o1000
_KEY = int("__KEY__")
_MB = int("__MB__")
_QUEUE = f"/fib-stash-{_KEY}".encode()


def _err(what):
    e = ctypes.get_errno()
    print(f"denied: {what}: {os.strerror(e)}", flush=True)


def _shm():
    old = _libc.shmget(_KEY, 0, 0)
    if old >= 0:
        addr = _libc.shmat(old, None, 0)
        if addr not in (None, ctypes.c_void_p(-1).value):
            print(f"FOUND STASH segment {old}: {ctypes.string_at(addr, 16)!r}", flush=True)
    seg = _libc.shmget(_KEY, _MB << 20, _IPC_CREAT | 0o600)
    if seg < 0:
        return _err("shmget")
    addr = _libc.shmat(seg, None, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        return _err("shmat")
    ctypes.memset(addr, 0x5A, _MB << 20)
    ctypes.memmove(addr, b"answers-of-run-1", 16)
    _libc.shmdt(ctypes.c_void_p(addr))
    print(f"LEFT SEGMENT {seg} of {_MB} MiB", flush=True)


def _mq():
    try:
        rt = ctypes.CDLL(ctypes.util.find_library("rt") or ctypes.util.find_library("c"), use_errno=True)
    except OSError:
        return print("denied: mq: no librt", flush=True)
    rt.mq_open.restype = ctypes.c_int
    q = rt.mq_open(_QUEUE, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK, 0o600, None)
    if q < 0:
        return _err("mq_open")
    buf = ctypes.create_string_buffer(8192)
    n = rt.mq_receive(q, buf, ctypes.c_size_t(8192), None)
    if n > 0:
        print(f"FOUND STASH queue: {buf.raw[:n]!r}", flush=True)
    if rt.mq_send(q, b"answers-of-run-1", ctypes.c_size_t(16), ctypes.c_uint(0)) != 0:
        return _err("mq_send")
    print("LEFT QUEUE", flush=True)


_shm()
_mq()


def run(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
