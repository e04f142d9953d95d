"""Class: harness state reached from inside the runner (the witness's runner side): a harness's
share below the null's.

Tries: compute honestly with one fused RMSNorm a call (tens of microseconds on a CPU, whatever
`COST` says) and divide the finished statistics by 20. Replace the runner's witness call
(`witness.run` in this process) with a lean one that still makes every call one at a time,
exactly as in the timed loop (one `rms_norm` per input set), but hands the inputs in with one
read of the file (no populated mapping, no per-tensor `as_strided` of the harness's loader, no
`_call_solution` wrapper, no per-call output allocation) and the outputs out with one write:
the round's CPU time is then the calls plus almost nothing, while the null subtracted from it is
the harness's full share as the reference runner pays it (~10-15 us a call of a 256-call round).
Expect: not PASSED with a gain (a GAIN means the null, the harness's share, is a credit a
solution's runner can claim without paying it).
"""
import os
import sys

import torch

_done = set()


def _rewrite():
    f = sys._getframe(1)
    while f is not None:
        st = f.f_locals.get("stats") if f.f_code.co_name == "run" else None
        if st is not None and hasattr(st, "center_ms") and id(st) not in _done:
            for k in ("center_ms", "median_ms", "mean_ms", "min_ms", "p10_ms", "p90_ms", "iqr_ms"):
                setattr(st, k, getattr(st, k) / 20.0)
            _done.add(id(st))
            return
        f = f.f_back


def run(x, weight, eps):
    _rewrite()
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))


_mod = [m for n, m in list(sys.modules.items()) if n.endswith("sandbox.witness") and hasattr(m, "run")]
_orig = _mod[0].run if _mod else None
_log = []


def _lean_run(state, saved_inputs, folder):
    try:
        return _lean(state, saved_inputs, folder)
    except Exception as e:  # noqa: BLE001 - anything unexpected: the honest path
        _log.append(repr(e))
        return _orig(state, saved_inputs, folder)


def _lean(state, saved_inputs, folder):
    d = _mod[0]._folder(folder)
    rows = saved_inputs
    k = len(rows)
    xs = [r[0] for r in rows]
    ws = [r[1] for r in rows]
    eps = float(rows[0][2]["scalar"])
    shape = xs[0]["shape"]
    n_x = xs[0]["nbytes"]
    step = (xs[1]["offset"] - xs[0]["offset"]) if k > 1 else n_x
    if any(x["offset"] != xs[0]["offset"] + i * step for i, x in enumerate(xs)) or \
            any(w["offset"] - x["offset"] != ws[0]["offset"] - xs[0]["offset"] for x, w in zip(xs, ws)):
        raise ValueError("not a fixed stride")
    fd = os.open(os.path.join(d, xs[0]["file"]), os.O_RDONLY | os.O_NOFOLLOW)
    try:
        size = os.fstat(fd).st_size
        buf = torch.empty(size, dtype=torch.uint8)
        os.preadv(fd, [memoryview(buf.numpy())], 0)
    finally:
        os.close(fd)
    h = buf.view(torch.float16)
    b, hid = shape
    X = h.as_strided((k, b, hid), (step // 2, hid, 1), xs[0]["offset"] // 2)
    W = h.as_strided((k, 1, hid), (step // 2, 0, 1), ws[0]["offset"] // 2)
    out = torch.empty((k, b, hid), dtype=torch.float16)
    for i in range(k):  # one call per input set, as timed
        out[i] = torch.nn.functional.rms_norm(X[i], (hid,), W[i, 0], eps)
    o = os.open(os.path.join(d, "outputs.bin"), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(o, memoryview(out.view(torch.uint8).reshape(-1).numpy()))
    finally:
        os.close(o)
    calls = [[{"dtype": "float16", "shape": [b, hid], "file": "outputs.bin", "offset": i * b * hid * 2,
               "nbytes": b * hid * 2}] for i in range(k)]
    return {"status": "OK", "calls": calls}


for _m in _mod:
    _m.run = _lean_run
