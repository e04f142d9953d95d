"""Class: harness state reached from inside the runner (the witness's runner side, patched between
rounds by a thread).

Tries: `witness_midround_patch` made to survive a guard check after every witness round: the lean
handler (the round read once, each call made on its chained inputs, one pwrite) puts the
harness's `witness.run` back before it returns, so the module looks untouched when the round's
reply is made and sealed; a thread started in the first witnessed call waits until the round's
folder is removed (the supervisor has read and checked the round) and installs the lean handler
again for the next round. One fused RMSNorm a call, every output right; statistics divided by 20.
Expect: not PASSED with a gain (a GAIN means checking the witness's functions only when a round
ends does not keep the harness's handler in place while the rounds run).
"""
import os
import sys
import threading
import time

import torch

_done = set()
_state = {"installed": False, "lean_rounds": 0, "errors": [], "folders": []}


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
        mod.run = orig  # looks untouched when the round's reply is made
        _state["folders"].append(mod._folder(folder))
        try:
            out = _lean(mod, saved_inputs, folder, chain)
            _state["lean_rounds"] += 1
            return out
        except Exception as e:  # noqa: BLE001 - anything unexpected: the harness's path
            _state["errors"].append(repr(e)[:200])
            return orig(state, saved_inputs, folder, sock, chain=chain)

    def again():
        seen = 0
        while True:
            if len(_state["folders"]) > seen and not os.path.exists(_state["folders"][-1]):
                seen = len(_state["folders"])
                mod.run = lean_run
            time.sleep(0.001)

    mod.run = lean_run
    _state["installed"] = True
    threading.Thread(target=again, daemon=True).start()


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
