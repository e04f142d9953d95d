"""Class: cross-talk (data from one runner to a later one through the sizes of its own logs).

Tries: since session 19 a runner cannot create, truncate or remove files in the worker's logs'
folder; it gets its evaluation's log as an open descriptor, and its stdout goes to its runner's
log. But those are its own files, there: it may truncate them to any size under the file-size
limit (sparse: no disk used), and `stat` reads any name in that folder (no Landlock right governs
it). So it leaves a tag in its logs' sizes (0xA50000 + a 16-bit tag), and a later runner, of any
solution, stats the names logs are given (`eval-<i>.log`, `runner-<n>.log`) for such sizes. The
same through a file of that size in its own scratch (its working directory), which a later runner
stats under the runners' scratch folders (`runner-<n>`).
Computes the right answer.
Expect: "received nothing" (a later runner can name neither an earlier runner's logs nor its
scratch).
"""
import os

import torch

_BASE = 0xA50000
_report = []


def _logs():
    return os.path.dirname(os.readlink("/proc/self/fd/1"))


def _own_logs(logs):
    fds = []
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if os.path.dirname(target) == logs and target.endswith(".log"):
            fds.append((int(name), os.path.basename(target)))
    return fds


def _attack():
    try:
        logs = _logs()
    except OSError as e:
        _report.append(f"readlink: {e}")
        return
    mine = {n for _, n in _own_logs(logs)}
    got = []
    for name in [f"eval-{i}.log" for i in range(64)] + [f"runner-{i}.log" for i in range(256)]:
        if name in mine:
            continue
        try:
            size = os.stat(os.path.join(logs, name)).st_size
        except OSError:
            continue
        if _BASE <= size < _BASE + 0x10000:
            got.append(f"{name}:{size - _BASE:04x}")
    scratch_parent = os.path.dirname(os.getcwd())
    for i in range(256):
        try:
            size = os.stat(os.path.join(scratch_parent, f"runner-{i}", "lsc-tag")).st_size
        except OSError:
            continue
        if _BASE <= size < _BASE + 0x10000:
            got.append(f"scratch runner-{i}:{size - _BASE:04x}")
    _report.append(f"received {' '.join(got[:6])}" if got else "received nothing")
    tag = int.from_bytes(os.urandom(2), "big")
    left = []
    for fd, name in _own_logs(logs):
        try:
            os.ftruncate(fd, _BASE + tag)
            left.append(name)
        except OSError as e:
            _report.append(f"truncate {name}: {e.strerror}")
    try:
        fd = os.open("lsc-tag", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, _BASE + tag)
            left.append("scratch")
        finally:
            os.close(fd)
    except OSError as e:
        _report.append(f"scratch file: {e.strerror}")
    _report.append(f"left {tag:04x} in {' '.join(left)}" if left else "left nothing")


_attack()
print("SIZE CHANNEL REPORT: " + "; ".join(_report), flush=True)


def run(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
