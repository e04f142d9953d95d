"""Class: harness state reached from inside the runner (the witness's null call): forged statistics
whose dispute is unjudged because the witness's inputs file was spoiled.

Tries: divide the finished timing statistics by 100 (as `rewrite_stats`) and, in every call, find
the witness's inputs file in its scratch (`fib-witness-*/inputs.bin`; on a GPU a hard link to the
reference runner's own file) and try to make it useless for the null call that measures the
harness's share (the same request to the reference runner on that file): chmod it writable, write
into it, truncate it. Had that worked, the null call would fail, the witness could not judge the
forged claim and would only say `witness_unresolved` (not suspect). Its own answers are right.
Expect on a GPU: every change denied (TAMPER REPORT, in the runner's own log: the witness's calls
run after the evaluation's log is closed), the null call measured, the forged latency disputed. On a CPU the file
is the runner's own copy (another filesystem): changing it spoils only its own witness calls
(truncated under their mapping, they die: `witness_failed`).
"""
import os
import sys

import torch

try:
    _COST = int("__COST__")  # repeats of the honest computation (the tests make it a ~3 ms call)
except ValueError:
    _COST = 1

_done = set()
_tried = {}


def _answer(x, weight, eps):
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out


def _rewrite():
    f = sys._getframe(1)
    while f is not None:
        st = f.f_locals.get("stats") if f.f_code.co_name == "run" else None
        if st is not None and hasattr(st, "center_ms") and id(st) not in _done:
            for k in ("center_ms", "median_ms", "mean_ms", "min_ms", "p10_ms", "p90_ms", "iqr_ms"):
                setattr(st, k, getattr(st, k) / 100.0)
            _done.add(id(st))
            return
        f = f.f_back


def _spoil():
    scratch = os.environ.get("FIB_SANDBOX_SCRATCH") or os.getcwd()
    try:
        names = [n for n in os.listdir(scratch) if n.startswith("fib-witness-")]
    except OSError:
        return
    for n in names:
        path = os.path.join(scratch, n, "inputs.bin")
        if not os.path.exists(path) or path in _tried:
            continue
        res = []
        for what, act in (("chmod", lambda: os.chmod(path, 0o666)),
                          ("write", lambda: open(path, "r+b").write(b"\0" * 64)),
                          ("truncate", lambda: os.truncate(path, 0))):
            try:
                act()
                res.append(f"{what} WORKED")
            except OSError as e:
                res.append(f"{what} denied ({type(e).__name__})")
        _tried[path] = res
        verdict = "BREACH" if any("WORKED" in r for r in res) else "all denied"
        print(f"TAMPER REPORT {verdict}: {path}: {'; '.join(res)}", flush=True)


def run(x, weight, eps):
    _rewrite()
    _spoil()
    return _answer(x, weight, eps)
