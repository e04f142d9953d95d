"""Class: cross-talk in a shared runner (another process's scheduling and limits).

Tries: every process it can name (its parent: the worker or the runner zygote on a GPU, where a
runner has no pid namespace; pids near its own: the reference runner, other runners; all of its
user's processes at once through `PRIO_USER`): lower its priority to 19, pin it to CPU 0, give it
SCHED_IDLE, set its I/O priority to idle, move its pages and cut its limits (open files 16: the
worker could not open the next runner's pipes; CPU time 600 s: the reference runner killed later).
Any of these slows or breaks the measurements of solutions evaluated after it. Computes the right
answer.
Expect: every call on a process other than its own refused; on its own process they still work.
"""
import ctypes
import ctypes.util
import os
import resource

import torch

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_SYS_IOPRIO_SET = 251
_SYS_MIGRATE_PAGES = 256
_IOPRIO_WHO_PROCESS, _IOPRIO_WHO_USER = 1, 3
_IDLE_IOPRIO = 3 << 13  # IOPRIO_CLASS_IDLE


def _try(changed, what, fn):
    try:
        fn()
        changed.append(what)
    except OSError as e:
        print(f"denied: {what}: {e.strerror}", flush=True)


def _syscall(nr, *args):
    def call():
        if _libc.syscall(nr, *args) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
    return call


def _targets():
    me = os.getpid()
    pids = {os.getppid()} | {p for p in range(max(2, me - 64), me + 64) if p != me}
    alive = []
    for p in sorted(pids):
        try:
            os.getpriority(os.PRIO_PROCESS, p)
            alive.append(p)
        except OSError:
            continue
    return alive


def _attack():
    changed = []
    for p in _targets():
        _try(changed, f"prlimit {p}", lambda p=p: resource.prlimit(p, resource.RLIMIT_NOFILE, (16, 16)))
        _try(changed, f"cpu limit {p}", lambda p=p: resource.prlimit(p, resource.RLIMIT_CPU, (600, 600)))
        _try(changed, f"nice {p}", lambda p=p: os.setpriority(os.PRIO_PROCESS, p, 19))
        _try(changed, f"affinity {p}", lambda p=p: os.sched_setaffinity(p, {0}))
        _try(changed, f"idle class {p}", lambda p=p: os.sched_setscheduler(p, os.SCHED_IDLE, os.sched_param(0)))
        _try(changed, f"ioprio {p}", _syscall(_SYS_IOPRIO_SET, _IOPRIO_WHO_PROCESS, p, _IDLE_IOPRIO))
        one = ctypes.c_ulong(1)
        _try(changed, f"migrate pages {p}", _syscall(_SYS_MIGRATE_PAGES, p, 64, ctypes.byref(one), ctypes.byref(one)))
    _try(changed, "nice every process of the user", lambda: os.setpriority(os.PRIO_USER, 0, 19))
    _try(changed, "ioprio every process of the user", _syscall(_SYS_IOPRIO_SET, _IOPRIO_WHO_USER, 0, _IDLE_IOPRIO))
    # its own process: allowed (a library may renice or pin itself)
    own = []
    _try(own, "own nice", lambda: os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0)))
    _try(own, "own affinity", lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))
    _try(own, "own limit", lambda: resource.setrlimit(resource.RLIMIT_CORE, resource.getrlimit(resource.RLIMIT_CORE)))
    print(f"TAMPER REPORT changed {len(changed)}: {changed[:8]}; own {own}", flush=True)


_attack()


def run(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
