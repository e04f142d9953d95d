"""Class: harness state reached from inside the runner (the witness's runner side): the witness
times a batch, the claim is a latency.

Tries: compute honestly with one fused RMSNorm a call (tens of microseconds on a CPU, whatever
`COST` says) and divide the finished statistics by 20. Replace the runner's witness call
(`witness.run` in this process) with a lean one that does all the round's work right: it reads
the inputs file once (no populate, no per-tensor views) into a buffer faulted in at import, computes the round's up to 256 calls as
batched RMSNorms (16 calls each) over a strided view of the file (the calls' inputs lie at a fixed stride),
and writes every output with one write. Each call's output is correct, so every checked call
passes; the round's CPU time is a fraction of the honest harness's per-call share that the null
(the reference runner's empty calls through the harness's own `run`) then subtracts.
Expect: not PASSED with a gain (a GAIN means the witness's estimate, round less null, fell
under the forged claim's bound: the null is the harness's share as the reference runner pays
it, not as the solution's runner must).
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


torch.set_num_threads(1)  # a pool's spinning threads would be counted by the cgroup's clock
# buffers faulted in now (the evaluation's time, not the witness's)
_BUF = torch.zeros(16 << 20, dtype=torch.uint8)
_OUT = torch.zeros(8 << 20, dtype=torch.float16)

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
        if _BUF.numel() < size:
            _BUF.resize_(size)
        buf = _BUF[:size]
        os.preadv(fd, [memoryview(buf.numpy())], 0)
    finally:
        os.close(fd)
    h = buf.view(torch.float16)
    b, hid = shape
    X = h.as_strided((k, b, hid), (step // 2, hid, 1), xs[0]["offset"] // 2)
    W = h.as_strided((k, 1, hid), (step // 2, 0, 1), ws[0]["offset"] // 2)
    if _OUT.numel() < k * b * hid:
        _OUT.resize_(k * b * hid)
    out = _OUT[: k * b * hid].view(k, b, hid)
    for i in range(0, k, 16):  # chunks: small temporaries (no fresh pages, no thread pool)
        xf = X[i:i + 16].float()
        out[i:i + 16] = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * W[i:i + 16].float()
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
