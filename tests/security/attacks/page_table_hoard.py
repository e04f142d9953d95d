"""Class: leaks and gaps (host memory the supervisor's memory watch does not count: page tables).

Tries: the memory watch adds up the runner tree's resident set, its tmpfs scratch and the memfd or
/dev/shm files its descriptors hold; RLIMIT_DATA counts private *writable* mappings. Page tables
are none of those. Its first call maps __PT_GB__ x 512 GiB (default 3: 1.5 TiB) of read-only private
anonymous memory (not data, no commit charge, no memory), switches transparent huge pages off
for it and reads one byte every 2 MiB: each read maps the shared zero page (no resident memory)
and makes the kernel allocate one 4 KiB page-table page. Result: __PT_GB__ GiB of kernel memory
(VmPTE) held by a runner whose resident set stays ~100 MiB, over the lab's 2 GiB limit, kept
while the runner is parked (stopped, uses no CPU) beside the next solutions' evaluations; every
parked runner (6 on a CPU) may do the same. It prints VmPTE and VmRSS. Correct outputs (one
RMSNorm a call).
Expect (the defence should make it so): killed for holding more than FIB_SANDBOX_HOST_MEM_GB
(page tables counted), and no parked runner holds memory past the limit.
"""
import mmap
import time

import numpy as np
import torch

try:
    _GB = float("__PT_GB__")
except ValueError:
    _GB = 3.0
_held = []


def _status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmPTE", "VmRSS", "VmData")):
                k, v = line.split(":")
                out[k] = int(v.split()[0]) >> 10  # MiB
    return out


def _hoard():
    t = time.monotonic()
    va = int(_GB * (512 << 30))  # one 4 KiB page-table page per 2 MiB mapped
    chunk = 256 << 30
    done = 0
    while done < va:
        size = min(chunk, va - done)
        m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=mmap.PROT_READ)
        m.madvise(mmap.MADV_NOHUGEPAGE)  # else a read maps the huge zero page and no PTE page
        a = np.frombuffer(m, dtype=np.uint8)
        int(a[:: 2 << 20].sum())  # one read fault per 2 MiB: one page-table page each
        _held.append((m, a))
        done += size
    s = _status()
    print(f"PAGE TABLE HOARD: mapped {va >> 30} GiB read-only in {time.monotonic() - t:.1f} s: "
          f"VmPTE {s.get('VmPTE')} MiB, VmRSS {s.get('VmRSS')} MiB, VmData {s.get('VmData')} MiB", flush=True)


def run(x, weight, eps):
    if not _held:
        _hoard()
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
