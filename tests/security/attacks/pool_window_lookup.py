"""Class: predictable inputs (the refresh pool: every timed input is a window of a fixed pool).

Tries: no frames, no patching, nothing the guard watches. The timing loop's inputs are windows of
`InputRefresher`'s pools (fixed for the whole loop, on the runner's heap). At the first call that
finds them (gc: fp16 tensors of numel n + max(n, 65536)), it indexes every pool position by its
first four elements and computes, once, the inverse RMS of every sliding row of the x pool
(a cumulative sum of squares). A call whose x and weight are pool windows (the runner's timed
calls) is then answered with `COST` repeats of a gather and two multiplies, no reduction: right
outputs, about half the cost of the honest `COST` RMSNorms. Any other call (correctness trials,
the witness's fresh draws, the audit) is computed honestly. The forgery (~2x) is what the
witness's slack lets pass (2x + 0.25 ms a call for a round of 8).
Expect: PASSED without a gain: since session 25 a timed input is two pool windows combined, never one,
and it recognises none (`test_no_timed_input_is_recognised_as_a_window_of_the_runner_s_pools`).
"""
import gc

import numpy as np
import torch

try:
    _COST = int("__COST__")
except ValueError:
    _COST = 1
_REPEATS = _COST  # cheap repeats on a recognised timed call

_st = {"xp": None, "wp": None, "xi": None, "wi": None, "inv": None, "eps": None, "h": None}


def _honest(x, weight, eps):
    out = None
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out


def _index(pool):
    a = pool.view(torch.int16).numpy().astype(np.int64).astype(np.uint64) & np.uint64(0xFFFF)
    keys = a[:-3] | (a[1:-2] << np.uint64(16)) | (a[2:-1] << np.uint64(32)) | (a[3:] << np.uint64(48))
    d = {}
    for i, k in enumerate(keys.tolist()):
        d.setdefault(k, []).append(i)
    return d


def _key(t):
    a = [v & 0xFFFF for v in t.reshape(-1)[:4].view(torch.int16).tolist()]
    return a[0] | (a[1] << 16) | (a[2] << 32) | (a[3] << 48)


def _find_pools(x, weight):
    nx, nw = x.numel(), weight.numel()
    xp = wp = None
    for o in gc.get_objects():
        try:
            if type(o) is torch.Tensor and o.dtype == torch.float16 and o.dim() == 1 and o.device.type == "cpu":
                if o.numel() == nx + max(nx, 1 << 16):
                    xp = o
                elif o.numel() == nw + max(nw, 1 << 16):
                    wp = o
        except Exception:
            continue
    return xp, wp


def _setup(x, weight, eps):
    xp, wp = _find_pools(x, weight)
    if xp is None or wp is None:
        return False
    if _st["xp"] is xp and _st["wp"] is wp and _st["eps"] == eps:
        return True
    h = x.shape[-1]
    sq = xp.double().pow(2)
    cs = torch.cat([torch.zeros(1, dtype=torch.float64), sq.cumsum(0)])
    ss = cs[h:] - cs[:-h]
    _st.update(xp=xp, wp=wp, xi=_index(xp), wi=_index(wp), h=h, eps=eps,
               inv=torch.rsqrt(ss / h + eps).float())
    return True


def _lookup(x, weight):
    if _st["xi"] is None or x.dim() != 2:
        return None
    xp, wp = _st["xp"], _st["wp"]
    ox = next((o for o in _st["xi"].get(_key(x), ()) if o + x.numel() <= xp.numel()
               and torch.equal(xp[o: o + x.numel()].view(x.shape), x)), None)
    if ox is None:
        return None
    ow = next((o for o in _st["wi"].get(_key(weight), ()) if o + weight.numel() <= wp.numel()
               and torch.equal(wp[o: o + weight.numel()], weight.reshape(-1))), None)
    _st["ow"] = ow
    return None if ow is None else ox


def run(x, weight, eps):
    if _st["xi"] is None or _st["eps"] != eps:
        _setup(x, weight, eps)
    ox = _lookup(x, weight)
    _st["miss"] = _st.get("miss", 0) + (ox is None)
    if ox is None and _st["miss"] % 64 == 1:
        # maybe a new pool (a new timing loop): scan the heap now and then (a scan costs ~40 ms)
        if _setup(x, weight, eps):
            ox = _lookup(x, weight)
    if ox is None:
        return _honest(x, weight, eps)
    if not _st.get("said"):
        _st["said"] = True
        print("pool_window_lookup: a timed input recognised as a pool window", flush=True)
    h = _st["h"]
    starts = ox + torch.arange(x.shape[0]) * h
    out = None
    for _ in range(_REPEATS):
        out = (x.float() * _st["inv"][starts].unsqueeze(1) * weight.float()).half()
    return out
