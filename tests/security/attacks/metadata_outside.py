"""Class: leaks and gaps (metadata changes outside scratch, from the runner).

Tries: utime, chmod, setxattr and chown on files outside its scratch directory: the dataset's
trace file, another solution's JSON, another solution's built artifact, the worker's log of another
evaluation. Landlock checks opening files, not their metadata. Computes the right answer and
swallows the errors. Expect: every change denied, the files' metadata unchanged.
"""
import json
import os

import torch

T = json.loads(__TARGETS__)
_FILES = {"dataset trace": T["trace_file"], "other solution": T["other_solution_json"], "other artifact": T["other_artifact_file"]}


def _try_all():
    out = []
    for what, p in _FILES.items():
        for op, fn in (
            ("utime", lambda p: os.utime(p, (1, 1))),
            ("chmod", lambda p: os.chmod(p, 0o777)),
            ("setxattr", lambda p: os.setxattr(p, "user.fib_breach", b"1")),
            ("chown", lambda p: os.chown(p, os.getuid(), os.getgid())),
        ):
            try:
                fn(p)
                out.append(f"BREACH {op} {what}")
            except OSError as e:
                out.append(f"denied: {op} {what}: {type(e).__name__}")
    print("METADATA REPORT " + "; ".join(out), flush=True)


_try_all()


def run(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
