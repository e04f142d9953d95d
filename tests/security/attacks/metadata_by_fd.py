"""Class: leaks and gaps (metadata changes outside scratch, through descriptors and *at calls).

Tries, on the dataset's trace file, another solution's JSON and another solution's built
artifact: open each read-only (Landlock lets a runner read them) and change its metadata through
the descriptor (fchmod, futimens, fchown, fsetxattr), then through the *at variants that do not
follow links (utimensat and fchownat with AT_SYMLINK_NOFOLLOW, fchmodat with a directory fd).
A defence that checks paths, or only the path-taking calls, misses these. Computes the right
answer and swallows the errors. Expect: every change denied, the files' metadata unchanged.
"""
import json
import os

import torch

T = json.loads(__TARGETS__)
_FILES = {"dataset trace": T["trace_file"], "other solution": T["other_solution_json"], "other artifact": T["other_artifact_file"]}


_FD_OPS = ("fchmod", "futimens", "fchown", "fsetxattr")
_AT_OPS = ("utimensat_nofollow", "fchownat_nofollow", "fchmodat_dirfd")


def _by_fd(op, path):
    fd = os.open(path, os.O_RDONLY)
    try:
        if op == "fchmod":
            os.fchmod(fd, 0o777)
        elif op == "futimens":
            os.utime(fd, (2, 2))
        elif op == "fchown":
            os.fchown(fd, os.getuid(), os.getgid())
        elif op == "fsetxattr":
            os.setxattr(fd, "user.fib_breach", b"1")
    finally:
        os.close(fd)


def _by_at(op, path):
    if op == "utimensat_nofollow":
        os.utime(path, (3, 3), follow_symlinks=False)
    elif op == "fchownat_nofollow":
        os.chown(path, os.getuid(), os.getgid(), follow_symlinks=False)
    elif op == "fchmodat_dirfd":
        d = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.chmod(os.path.basename(path), 0o777, dir_fd=d)
        finally:
            os.close(d)


def _try_all():
    out = []
    for what, p in _FILES.items():
        for op in (*_FD_OPS, *_AT_OPS):
            try:
                (_by_fd if op in _FD_OPS else _by_at)(op, p)
                out.append(f"BREACH {op} {what}")
            except (OSError, NotImplementedError) as e:
                out.append(f"denied: {op} {what}: {type(e).__name__}")
    print("METADATA REPORT " + "; ".join(out), flush=True)


_try_all()


def run(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
