"""Class: leaks and gaps (unbounded scratch).

Tries: fill its scratch directory: __FILES__ files of __MB__ MiB each (every one under the per-file
size limit, together far over any sane share of the disk), then __INODES__ empty files (inodes).
Prints how far it got, then computes the right answer.
Expect: stopped by a scratch quota (bytes and files), and the scratch gone with the runner.
"""
import os

import torch

_report = []


def _fill():
    d = os.path.join(os.environ.get("TMPDIR", "."), "fill")
    os.makedirs(d, exist_ok=True)
    block = b"\xab" * (1 << 20)
    written = 0
    try:
        for i in range(__FILES__):
            with open(os.path.join(d, f"big{i}"), "wb") as f:
                for _ in range(__MB__):
                    f.write(block)
                    written += 1
    except OSError as e:
        _report.append(f"bytes stopped at {written} MiB: {type(e).__name__}: {e.strerror}")
    else:
        _report.append(f"BREACH wrote {written} MiB")
    n = 0
    try:
        for n in range(__INODES__):
            open(os.path.join(d, f"s{n}"), "wb").close()
    except OSError as e:
        _report.append(f"files stopped at {n}: {type(e).__name__}: {e.strerror}")
    else:
        _report.append(f"BREACH made {__INODES__} files")
    print("SCRATCH REPORT " + "; ".join(_report), flush=True)


_fill()


def run(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
