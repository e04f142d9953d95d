"""Class: cross-talk (file-descriptor exhaustion beyond the runner).

Tries: raise its own open-files limit to the hard limit and have __N__ forked children do the same,
each opening /dev/null until the kernel refuses: kernel memory (one struct file each) that no
memory watch counts, and a system-wide file table every other process on the host shares. Then
computes the right answer. Expect: each process is held to a small hard limit, so the total stays
bounded; the next honest solution is unaffected.
"""
import os
import resource
import time

import torch

_report = []


def _grab():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):
        pass
    held = []
    try:
        while len(held) < 2_000_000:
            held.append(os.open("/dev/null", os.O_RDONLY))
    except OSError:
        pass
    return held, hard


def _attack():
    r, w = os.pipe()
    kids = []
    for _ in range(__N__):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            held, _ = _grab()
            os.write(w, f"{len(held)}\n".encode())
            time.sleep(2)
            os._exit(0)
        kids.append(pid)
    held, hard = _grab()
    total = len(held)
    data = b""
    deadline = time.monotonic() + 20
    while data.count(b"\n") < len(kids) and time.monotonic() < deadline:
        data += os.read(r, 4096)
    total += sum(int(x) for x in data.split())
    for fd in held:
        os.close(fd)
    for pid in kids:
        os.waitpid(pid, 0)
    print(f"FD REPORT hard limit {hard}, {len(kids) + 1} processes held {total} descriptors", flush=True)


_done = []


def run(x, weight, eps):
    if not _done:
        _done.append(1)
        _attack()
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
