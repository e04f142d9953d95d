"""Class: leaks and gaps (memory the supervisor spends on a runner's behalf).

Tries: from its first call, write one well-framed message to the runner's own channel socket
(found as the `sock` of the runner's main loop, up the frames) before the runner's real reply:
__MB__ MiB (default 200) of valid JSON, `[{},{},...]`, which the supervisor must read whole and
parse before it can tell that it is not a sealed result. Every 3 bytes become an empty dict of
64 bytes plus a list slot in the trusted worker: ~27x the message (200 MiB -> ~5.5 GiB), in the
worker, which no memory watch or limit covers (the runner itself is held to its own limit, 2 GiB
in the tests, and never holds more than the message). Several workers (one per GPU) do this at
once. Expect: the supervisor's memory stays bounded (a cap on replies or on what a reply may
cost to parse); the honest solution after it unaffected.
"""
import struct
import sys

import torch

try:
    _COST = int("__COST__")
except ValueError:
    _COST = 1
try:
    _MB = int("__MB__")
except ValueError:
    _MB = 200

_sent = []


def _answer(x, weight, eps):
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out


def _bomb():
    f = sys._getframe(1)
    sock = None
    while f is not None:
        s = f.f_locals.get("sock")
        if s is not None and hasattr(s, "sendall") and f.f_code.co_name == "main":
            sock = s
            break
        f = f.f_back
    if sock is None:
        return
    n = (_MB << 20) // 3
    data = b"[" + b"{}," * n + b"{}]"
    sock.sendall(struct.pack(">I", len(data)) + data)
    del data


def run(x, weight, eps):
    if not _sent:
        _sent.append(1)
        _bomb()
    return _answer(x, weight, eps)
