"""Class: harness state reached from inside the runner (the witness's runner side, patched after
the guard's last look).

Tries: compute honestly with one fused RMSNorm a call (tens of microseconds on a CPU, whatever
`COST` says) and divide the finished statistics by 20. Nothing is replaced while the runner's
guard looks (after the load and after the evaluation: `wrap_loader`, `after_eval`); only inside
the first witnessed call (the harness's `run` of the witness module on the stack), when the
evaluation's result is sealed and sent and no guard check follows, it replaces `witness.run` in
its process with a lean handler for the later rounds: the inputs file read once, every call made
one at a time on its chained inputs exactly as the harness chains them (`_chained`: the low byte
of the previous call's output xor-ed into the next `x`), the outputs written with one pwrite into
the supervisor's file, a description as `_save_all` gives. Every output is right; the round costs
the calls plus almost nothing, while the null subtracted is the harness's full share.
Expect: not PASSED with a gain (a GAIN means the guard's watch of the witness's runner side ends
before the witness's calls do, and `lean_share_witness` is open again).
"""
import os
import sys

import torch

_done = set()
_state = {"installed": False, "lean_rounds": 0, "errors": []}


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


def _witness_module():
    for n, m in list(sys.modules.items()):
        if n.endswith("sandbox.witness") and hasattr(m, "run"):
            return m
    return None


def _in_witness():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "run" and f.f_code.co_filename.endswith("witness.py"):
            return True
        f = f.f_back
    return False


def _install():
    mod = _witness_module()
    if mod is None:
        return
    orig = mod.run

    def lean_run(state, saved_inputs, folder, sock=None, chain=False):
        if sock is not None:
            return orig(state, saved_inputs, folder, sock, chain=chain)
        try:
            out = _lean(mod, saved_inputs, folder, chain)
            _state["lean_rounds"] += 1
            return out
        except Exception as e:  # noqa: BLE001 - anything unexpected: the harness's path
            _state["errors"].append(repr(e)[:200])
            return orig(state, saved_inputs, folder, sock, chain=chain)

    mod.run = lean_run
    _state["installed"] = True


def _lean(mod, rows, folder, chain):
    d = mod._folder(folder)
    k = len(rows)
    xs = [r[0] for r in rows]
    ws = [r[1] for r in rows]
    eps = float(rows[0][2]["scalar"])
    b, hid = xs[0]["shape"]
    n = b * hid
    fd = os.open(os.path.join(d, xs[0]["file"]), os.O_RDONLY | os.O_NOFOLLOW)
    try:
        size = os.fstat(fd).st_size
        buf = torch.empty(size - size % 2, dtype=torch.uint8)
        os.preadv(fd, [memoryview(buf.numpy())], 0)
    finally:
        os.close(fd)
    h = buf.view(torch.int16)
    stride = -(-n * 2 // 256) * 256  # _layout's ALIGN-ed place of each call's output
    outb = torch.zeros(k * stride, dtype=torch.uint8)
    o16 = outb.view(torch.int16)
    low = torch.empty(n, dtype=torch.int16)
    xin = torch.empty(n, dtype=torch.int16)
    calls = []
    prev = None
    for i in range(k):
        x = h[xs[i]["offset"] // 2: xs[i]["offset"] // 2 + n]
        w = h[ws[i]["offset"] // 2: ws[i]["offset"] // 2 + hid].view(torch.float16)
        if chain and prev is not None:
            torch.bitwise_and(prev, 0xFF, out=low)
            torch.bitwise_xor(x, low, out=xin)
            x = xin
        dst = o16[i * stride // 2: i * stride // 2 + n]
        dst.view(torch.float16).view(b, hid).copy_(
            torch.nn.functional.rms_norm(x.view(torch.float16).view(b, hid), (hid,), w, eps))
        prev = dst
        calls.append([{"dtype": "float16", "shape": [b, hid], "file": "outputs.bin", "offset": i * stride,
                       "nbytes": n * 2}])
    o = os.open(os.path.join(d, "outputs.bin"), os.O_WRONLY | os.O_NOFOLLOW)
    try:
        view = memoryview(outb.numpy())
        done = 0
        while done < len(view):
            done += os.pwrite(o, view[done:], done)
    finally:
        os.close(o)
    return {"status": "OK", "calls": calls}


def run(x, weight, eps):
    _rewrite()
    if not _state["installed"] and _in_witness():
        _install()
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
