"""Class: cross-talk (signalling other processes: stopping the reference runner and the others).

Tries: find every other process it can see (other runners, the reference runner, the worker) and
send SIGSTOP then SIGCONT, which would stall whatever they are timing (an inflated reference time,
slow competitors), or SIGKILL the worker. Computes the right answer.
Expect: it sees no process outside its own runner, or every signal is refused.
"""
import os
import signal

import torch


def _attack():
    me = os.getpid()
    seen = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) in (me, 1):
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if "flashinfer_bench" in cmd or "pytest" in cmd:
            seen.append((int(p), cmd[:80]))
    ok = []
    for pid, cmd in seen:
        try:
            os.kill(pid, signal.SIGSTOP)
            os.kill(pid, signal.SIGCONT)
            ok.append(cmd)
        except OSError as e:
            print(f"denied: signal {pid}: {type(e).__name__}")
    for pid in (os.getppid(),):
        try:
            os.kill(pid, 0)
        except OSError as e:
            print(f"denied: parent {pid}: {type(e).__name__}")
    print(f"SIGNAL REPORT saw {len(seen)} harness processes, signalled {len(ok)}: {ok[:5]}", flush=True)


_attack()


def run(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
