"""Class: leaks and gaps (what the supervisor does with a runner message it cannot parse).

Tries: from its first call, write one well-framed message that is not JSON to the runner's own
channel socket (found as the `sock` of the runner's main loop, up the frames), before the runner's
real reply: `__KIND__` = "bytes" (not UTF-8), "deep" (an array nested 100,000 deep: the parser's
RecursionError, not a ValueError), "digits" (a 5,000-digit number: Python refuses to convert it).
A parse error the worker does not expect would end its job with no trace (the client sees a lost
worker and runs the solution again). Computes the right answer.
Expect: the solution's own trace fails (`forged_result`), the worker answers the next request.
"""
import struct
import sys

import torch

_KIND = "__KIND__" if not "__KIND__".startswith("__") else "deep"
_sent = []


def _garbage():
    f = sys._getframe(1)
    while f is not None:
        s = f.f_locals.get("sock")
        if s is not None and hasattr(s, "sendall") and f.f_code.co_name == "main":
            data = {"bytes": b"\xff\xfe{", "deep": b"[" * 100_000 + b"]" * 100_000,
                    "digits": b"[" + b"9" * 5000 + b"]"}[_KIND]
            s.sendall(struct.pack(">I", len(data)) + data)
            return
        f = f.f_back


def run(x, weight, eps):
    if not _sent:
        _sent.append(1)
        _garbage()
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
