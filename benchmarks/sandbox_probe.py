"""Which Linux confinement mechanisms keep CUDA working on this machine? (one subprocess per case)

    python benchmarks/sandbox_probe.py
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap

CASE = r'''
import ctypes, os, sys, socket
libc = ctypes.CDLL(None, use_errno=True)
NEWUSER, NEWNET, NEWPID, NEWNS = 0x10000000, 0x40000000, 0x20000000, 0x00020000
def unshare(f):
    if libc.unshare(f) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
def ll_restrict(write_ok):
    # Landlock ABI: handle fs write rights; allow them only beneath write_ok
    class Attr(ctypes.Structure):
        _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64)]
    class Rule(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]
    WRITE = (1<<1)|(1<<4)|(1<<5)|(1<<6)|(1<<7)|(1<<8)|(1<<9)|(1<<10)|(1<<11)|(1<<12)|(1<<13)|(1<<14)
    abi = libc.syscall(444, None, 0, 1)
    attr = Attr(WRITE | (1<<14) if abi >= 2 else WRITE, 0)
    fd = libc.syscall(444, ctypes.byref(attr), ctypes.sizeof(Attr) if abi >= 4 else 8, 0)
    if fd < 0: raise OSError(ctypes.get_errno(), "create_ruleset")
    for p in write_ok:
        pfd = os.open(p, os.O_PATH)
        r = Rule(attr.handled_access_fs, pfd)
        if libc.syscall(445, fd, 1, ctypes.byref(r), 0) != 0: raise OSError(ctypes.get_errno(), "add_rule " + p)
        os.close(pfd)
    libc.prctl(38, 1, 0, 0, 0)
    if libc.syscall(446, fd, 0) != 0: raise OSError(ctypes.get_errno(), "restrict_self")
    return abi
case = sys.argv[1]
before, after = case.split("|")
def apply(spec):
    for s in filter(None, spec.split("+")):
        if s == "user": unshare(NEWUSER)
        elif s == "net": unshare(NEWNET)
        elif s == "usernet": unshare(NEWUSER | NEWNET)
        elif s == "pid":
            unshare(NEWPID)
            pid = os.fork()
            if pid: _, st = os.waitpid(pid, 0); os._exit(os.waitstatus_to_exitcode(st))
        elif s == "landlock": ll_restrict(["/tmp", "/dev", "/proc", "/root/.triton", os.path.expanduser("~/.cache")])
        elif s == "setuid":
            os.setgid(65534); os.setuid(65534)
apply(before)
import torch, triton, triton.language as tl
x = torch.randn(1 << 20, device="cuda")
torch.cuda.synchronize()
apply(after)
@triton.jit
def k(X, Y, N, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(Y + i, tl.load(X + i, mask=i < N) * 2, mask=i < N)
y = torch.empty_like(x)
k[(x.numel() // 1024,)](x, y, x.numel(), B=1024)
torch.cuda.synchronize()
assert torch.equal(y, x * 2)
z = torch.randn(256, 256, device="cuda", dtype=torch.float16) @ torch.randn(256, 256, device="cuda", dtype=torch.float16)
torch.cuda.synchronize()
net = "ok"
try:
    socket.create_connection(("127.0.0.1", 22), timeout=0.5)
except OSError as e:
    net = type(e).__name__
try:
    open("/work/probe-write", "w").write("x"); w = "write-outside-OK"
except OSError as e:
    w = "write-outside-" + type(e).__name__
print("OK", net, w)
'''

CASES = [
    "|", "net|", "usernet|", "user|", "pid|", "net+pid|", "|net", "|usernet", "|landlock", "|net+landlock",
    "|pid", "|setuid", "|landlock+net",
]


def main() -> None:
    env = dict(os.environ, TRITON_CACHE_DIR="/tmp/probe-triton")
    print(f"{'before CUDA init | after':28s} result")
    for c in CASES:
        p = subprocess.run([sys.executable, "-c", CASE, c], capture_output=True, text=True, timeout=120, env=env)
        out = (p.stdout.strip().splitlines() or [""])[-1]
        err = (p.stderr.strip().splitlines() or [""])[-1]
        print(f"{c:28s} rc={p.returncode} {out if p.returncode == 0 else err[:150]}")


if __name__ == "__main__":
    main()
