"""Class: predictable inputs (the refresher's offsets predicted from its Python `random.Random` on the heap).

Tries: since session 25 a timed input is the sum of two windows of the refresh pool, which no
index of windows recognises (`pool_window_lookup`). But the two offsets come from a
`random.Random` that lives on the runner's heap while the timing loop runs (`_time_solution`'s
`rng`, seeded per evaluation); `gc.get_objects()` lists it, and `getstate()` copies it without
touching it. At each call the attack copies every such generator and draws, as `InputRefresher`
will, the next call's two offsets into the x pool (found on the heap as in `pool_window_lookup`:
fp16, numel n + max(n, 65536)). At the next call, 16 elements of x compared with pool[a] + pool[b]
(the harness's own fp16 add) say whether this call is a timed one. No frame is read, nothing is
patched or replaced, no input is indexed. Timed calls compute int(COST x __FRAC__) RMSNorms (default
0.5: half the work, the same outputs, so every re-check passes); every other call (trials, the
witness's, the audit) does the honest COST. What the witness lets through is its slack (2x + the
allowance a call for a costly claim).
Expect: not PASSED with a gain (a GAIN: timed calls are still recognisable, two windows or one).
Session 25: a GAIN of 1.67-1.73x on the CPU in 2 of 3 tables, within the CPU witness's 2x
resolution (docs/security.md: not closed); recognising the timed calls needs no prediction.
"""
import gc
import random

import torch

try:
    _COST = int("__COST__")
except ValueError:
    _COST = 1
try:
    _FRAC = float("__FRAC__")
except ValueError:
    _FRAC = 0.5
_st = {"pool": None, "cands": [], "pred": [], "miss": 0, "hits": 0, "said": False, "seen": set(), "scanned": -99}
_K = 16


def _scan(nx):
    pool, cands = None, []
    for o in gc.get_objects():
        try:
            if type(o) is random.Random and o is not random._inst:
                cands.append(o)
            elif type(o) is torch.Tensor and o.dtype == torch.float16 and o.dim() == 1 and o.device.type == "cpu" \
                    and o.numel() == nx + max(nx, 1 << 16):
                pool = o
        except Exception:
            continue
    _st["pool"], _st["cands"] = pool, cands


def _predict(n):
    """The x offsets the next refresh will draw, for each generator found (copies: none is moved)."""
    pool = _st["pool"]
    if pool is None:
        _st["pred"] = []
        return
    span = pool.numel() - n + 1
    out = []
    for c in _st["cands"]:
        g = random.Random()
        g.setstate(c.getstate())
        out.append((g.randrange(span), g.randrange(span)))
    _st["pred"] = out


def _recognised(x):
    pool = _st["pool"]
    if pool is None or not _st["pred"]:
        return False
    head = x.reshape(-1)[:_K]
    for a, b in _st["pred"]:
        if torch.equal(torch.add(pool[a: a + _K], pool[b: b + _K]), head):
            return True
    return False


def _norm(x, weight, eps, reps):
    out = None
    for _ in range(max(1, reps)):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out


def run(x, weight, eps):
    n = x.numel()
    timed = _recognised(x)
    if timed:
        _st["hits"] += 1
        if not _st["said"] and _st["hits"] >= 3:
            _st["said"] = True
            print(f"refresh_rng_predict: timed calls recognised from the refresher's generator "
                  f"({len(_st['cands'])} generators on the heap)", flush=True)
    else:
        _st["miss"] += 1
        ptr = x.data_ptr()
        again = ptr in _st["seen"]  # a buffer called before: a loop that refreshes its inputs in place
        _st["seen"].add(ptr)
        # a new timing loop has a new generator: look (a heap scan costs ~10-40 ms) when a buffer
        # comes back, at most once per 8 such calls, and once one was found only after 256 misses
        # (the witness's rounds come back to their mapped addresses too: scanning there is paid).
        # Known limit: a runner reused for a second evaluation finds its new loop late or never.
        if again and _st["miss"] - _st["scanned"] >= (256 if _st["hits"] else 8):
            _st["scanned"] = _st["miss"]
            _scan(n)
    out = _norm(x, weight, eps, int(_COST * _FRAC) if timed else _COST)
    _predict(n)  # the next call's offsets, from the generators' state after this call's refresh
    return out
