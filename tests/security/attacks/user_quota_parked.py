"""Class: cross-talk (per-user kernel quotas, charged to the real user through the runner's user namespace, held while its runner is parked).

Tries: some kernel limits are counted per user, not per process or cgroup, and a user namespace
charges its counts to the creating user at every level up to the initial namespace: inotify
instances (`fs.inotify.max_user_instances`, 128), pipe buffer pages (`fs.pipe-user-pages-soft`,
16384: past it every new pipe of that user without CAP_SYS_RESOURCE gets 2 slots instead of 16)
and queued real-time signals (RLIMIT_SIGPENDING). None of inotify_init1, pipe2, F_SETPIPE_SZ or
tgkill is refused by seccomp. Its first call takes all it can of each (inotify
instances until EMFILE, 1 MiB pipes until F_SETPIPE_SZ is refused, a blocked real-time signal
queued to itself until EAGAIN) and keeps them; a forked child then checks whether it (a fresh
process of the same user) can still make an inotify instance and how large its new pipe is, and
prints the result. Correct outputs.
Expect: contained (what it holds goes with its runner), the honest solution after it unharmed;
the print says whether the user-wide counts were exhausted while the runner lived.
"""
import ctypes
import fcntl
import os
import signal

import torch

_held = []
_started = []
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032


def _take():
    libc = ctypes.CDLL(None, use_errno=True)
    n_ino = 0
    ino_err = ""
    for _ in range(400):
        fd = libc.inotify_init1(os.O_CLOEXEC)
        if fd < 0:
            ino_err = os.strerror(ctypes.get_errno())
            break
        _held.append(fd)
        n_ino += 1
    n_pipes, pipe_err = 0, ""
    for _ in range(300):
        try:
            r, w = os.pipe()
        except OSError as e:
            pipe_err = e.strerror
            break
        _held.extend((r, w))
        try:
            fcntl.fcntl(w, F_SETPIPE_SZ, 1 << 20)
            n_pipes += 1
        except OSError as e:
            pipe_err = e.strerror
            # past the soft limit: a few default pipes more push the user over it
            for _ in range(8):
                try:
                    _held.extend(os.pipe())
                except OSError:
                    break
            break
    sig = signal.SIGRTMIN + 3
    signal.signal(sig, lambda *a: None)
    signal.pthread_sigmask(signal.SIG_BLOCK, {sig})  # this thread's: the signals stay queued on it
    n_sig, sig_err = 0, ""
    import threading
    me = threading.get_ident()
    for _ in range(200_000):
        try:
            signal.pthread_kill(me, sig)  # tgkill: each real-time signal queued is counted
        except OSError as e:
            sig_err = e.strerror
            break
        n_sig += 1
    # a fresh process of the same user: what is left for it
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            fd = libc.inotify_init1(0)
            ino = "ok" if fd >= 0 else os.strerror(ctypes.get_errno())
            pr, pw = os.pipe()
            size = fcntl.fcntl(pw, F_GETPIPE_SZ)
            os.write(w, f"child: inotify_init1 {ino}, new pipe {size} bytes".encode())
        finally:
            os._exit(0)
    os.close(w)
    child = os.read(r, 200).decode()
    os.close(r)
    os.waitpid(pid, 0)
    print(f"user_quota_parked: inotify instances {n_ino} ({ino_err}); 1 MiB pipes {n_pipes} ({pipe_err}); "
          f"queued RT signals {n_sig} ({sig_err}); {child}", flush=True)


def run(x, weight, eps):
    if not _started:
        _started.append(True)
        _take()
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
