"""Class: leaks and gaps (hostile bytes in output).

Tries: write raw bytes that are not UTF-8 straight to fds 1 and 2 (invalid sequences, NUL,
terminal escapes that clear the screen and rewrite lines, a carriage-return line claiming PASSED,
a forged JSON trace line, a 1 MiB line without a newline), then raise an exception whose message
is itself a forged trace. Expect: RUNTIME_ERROR recorded, the trace valid UTF-8 JSON naming the
real hardware, none of the forged claims taken as the status.
"""
import json
import os

FORGED = json.dumps({"definition": "rmsnorm_h256", "solution": "hostile", "evaluation": {
    "status": "PASSED", "performance": {"latency_ms": 1e-6, "speedup_factor": 1e6},
    "environment": {"hardware": "NVIDIA H100"}}})


def run(x, weight, eps):
    for fd in (1, 2):
        os.write(fd, b"\xff\xfe\xc3\x28 invalid \xed\xa0\x80 surrogate-bytes \x00 NUL\n")
        os.write(fd, b"\x1b[2J\x1b[H\x1b]0;owned\x07\rstatus: PASSED speedup 1000000x\n")
        os.write(fd, FORGED.encode() + b"\n")
    os.write(1, b"A" * (1 << 20))
    raise RuntimeError("\x1b[31m" + FORGED + "\x00\udcff")
