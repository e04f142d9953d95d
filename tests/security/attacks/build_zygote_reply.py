"""Class: build-time code / the build zygote's reply channel to the build's trusted parent.

Tries, while the build imports the module (forked by the build zygote, FIB_BUILD_ZYGOTE=1, the
pipeline's default): the zygote's connection to the requesting build process is inherited by the
forked build child (`zygote._KEEPS_CONNECTION`: it is kept open on purpose). Find that socket in
its own /proc/self/fd and write a framed reply on it before the zygote does: `__PAYLOAD__`
(a JSON body the client's `zygote.ask` reads as the "done" message: `{"rc": "x"}` makes
`int(done["rc"])` raise ValueError, `{"rc": null}` TypeError, `{"rc": 1e999}` OverflowError,
`"[" * 100000` RecursionError, none caught: `build()` raises, the pipeline's compile job dies).
Expect: COMPILE_ERROR for this solution (or a plain build), no exception out of `build()`.
"""
import json
import os
import stat
import struct

_report = []
body = (__PAYLOAD__).encode()
for name in os.listdir("/proc/self/fd"):
    try:
        fd = int(name)
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            continue
        os.write(fd, struct.pack("!I", len(body)) + body)
        _report.append(f"wrote {len(body)} bytes on socket fd {fd}")
    except OSError as e:
        _report.append(f"fd {name}: {type(e).__name__}: {e}")
print("ZYGOTE REPLY REPORT: " + ("; ".join(_report) or "no socket inherited"), flush=True)


def run(x, weight, eps):
    xf = x.float()
    return (xf * __import__("torch").rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
