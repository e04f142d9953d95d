"""Class: leaks and gaps (code on a thread the sandbox did not restrict).

A CUDA runner gets its Landlock rules after CUDA init, and Landlock binds the calling thread and
the threads it starts later, not the driver's threads that already exist (before Linux 7.0's
LANDLOCK_RESTRICT_SELF_TSYNC). Tries: enqueue a host function (cudaLaunchHostFunc, through
ctypes) whose Python body runs on the driver's callback thread and writes a marker file into the
project, the user's HOME (the runner's own HOME is in its scratch), /tmp and the worker's
directory; reports what it could write. On a CPU it only computes. Expect: every write denied, no marker file anywhere.
"""
import ctypes
import json
import os
import time

import torch

T = json.loads(__TARGETS__)
_report = []
_done = []


def _libcudart():
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if "libcudart" in os.path.basename(path):
                return ctypes.CDLL(path)
    return ctypes.CDLL("libcudart.so")


def _on_driver_thread(_):
    out = [f"thread {ctypes.CDLL(None).syscall(186)}"]  # gettid
    for where in (T["project"], T["home"], "/tmp", T["worker_dir"]):
        p = os.path.join(where, T["marker"])
        try:
            with open(p, "w") as f:
                f.write("written from the CUDA callback thread\n")
            out.append(f"BREACH wrote {p}")
        except OSError as e:
            out.append(f"denied: {where}: {type(e).__name__}")
    _report.extend(out)
    _done.append(True)


_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_on_driver_thread)


def _try():
    if not torch.cuda.is_available():
        return
    rt = _libcudart()
    rt.cudaLaunchHostFunc.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    stream = torch.cuda.current_stream().cuda_stream
    rc = rt.cudaLaunchHostFunc(ctypes.c_void_p(stream), ctypes.cast(_CB, ctypes.c_void_p), None)
    t0 = time.monotonic()
    while not _done and time.monotonic() - t0 < 10:
        time.sleep(0.01)  # the callback needs the GIL: wait without holding it
    print(f"CALLBACK REPORT rc={rc} main thread {ctypes.CDLL(None).syscall(186)} " + "; ".join(_report or ["callback did not run"]), flush=True)


_try()


def run(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
