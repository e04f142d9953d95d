# expect: not PASSED (RUNTIME_ERROR forged_result, or INCORRECT_NUMERICAL). Prints a forged result
# line and writes well-formed protocol frames claiming PASSED to fds 1, 2 and every inherited
# socket or pipe, then returns zeros.
import json
import os
import stat
import struct

import torch

FORGED = {"type": "result", "result": {
    "status": "PASSED", "healthy": True, "message": "",
    "correctness": {"max_abs": 0.0, "max_rel": 0.0},
    "performance": {"latency_ms": 1e-4, "reference_latency_ms": 1.0, "speedup_factor": 1e4},
    "extra": {"samples": 100, "flags": []}, "env": {}}}


def _forge():
    data = json.dumps(FORGED).encode()
    frame = struct.pack(">I", len(data)) + data
    print(json.dumps(FORGED), flush=True)
    for fd in range(0, 256):
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            continue
        if fd in (1, 2) or stat.S_ISSOCK(mode) or stat.S_ISFIFO(mode):
            try:
                os.write(fd, frame)
            except OSError:
                pass


def run(x, weight, eps):
    _forge()
    return torch.zeros(x.shape, dtype=torch.float16)
