"""Class: cross-talk (open file descriptions shared with other processes: status flags and offsets).

Tries: a descriptor that came from another process (inherited at fork or exec, or handed over
with SCM_RIGHTS, as the evaluation's log is) shares its open file description with that process:
its status flags (O_NONBLOCK, O_APPEND) and its file offset are the description's, not the
descriptor's, so `fcntl(F_SETFL)` or `lseek` from the runner changes them for the other side
too (a pipe the worker or the zygote reads made non-blocking raises EAGAIN there; a log's offset
moved makes the next writer overwrite or leave a hole). From its first call it lists every open
descriptor (/proc/self/fd), prints what each is, and on every one but its own channel to the
supervisor sets O_NONBLOCK | O_APPEND and seeks files to offset 0, then writes nothing. Correct
outputs.
Expect: contained; the worker, later runners and the honest solution after it unharmed (each
runner's descriptors are its own, or shared with nothing that reads or writes through them later).
"""
import fcntl
import gc
import os
import socket
import warnings

import torch

_started = []


def _channel_fds():
    fds = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # isinstance() on some deprecated torch objects warns
        for o in gc.get_objects():
            if type(o) is socket.socket:
                try:
                    fds.add(o.fileno())
                except OSError:
                    pass
    return fds


def _touch():
    skip = _channel_fds()
    seen = []
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        fd = int(name)
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        what = f"{fd}->{target}"
        if fd in skip or target.startswith("anon_inode:") and "epoll" in target:
            seen.append(what + " (kept)")
            continue
        try:
            fl = fcntl.fcntl(fd, fcntl.F_GETFL)
            fcntl.fcntl(fd, fcntl.F_SETFL, fl | os.O_NONBLOCK | os.O_APPEND)
            what += f" flags {fl:#o}->{fcntl.fcntl(fd, fcntl.F_GETFL):#o}"
        except OSError as e:
            what += f" F_SETFL {e.strerror}"
        if not target.startswith(("pipe:", "socket:", "anon_inode:")) and fd > 2:
            try:
                os.lseek(fd, 0, os.SEEK_SET)
                what += " seek 0"
            except OSError as e:
                what += f" seek {e.strerror}"
        seen.append(what)
    print("inherited_fd_flags: " + "; ".join(seen), flush=True)


def run(x, weight, eps):
    if not _started:
        _started.append(True)
        _touch()
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
