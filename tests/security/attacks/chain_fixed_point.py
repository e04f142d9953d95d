"""Class: harness state reached from inside the runner (frames): a chained round solved as a
fixed point, in a few batched sweeps instead of k calls in turn.

Tries: compute honestly with `COST` fused RMSNorms a call and divide the finished statistics by
`FACTOR` (8), as `batch_in_costly_call`. At the first witnessed call it reads the round's drawn
inputs from the harness's frame (`loaded`) and solves the chain's recurrence (call i's output is
f(x_i + 0.5 sin(output i-1)), `witness._chained`'s operations) by Jacobi sweeps over the whole
round: sweep 0 makes every call's output on its drawn input (`COST` batched RMSNorms), each
further sweep re-makes, in one batch, the calls whose chained input moved (by over 1e-3) since
the sweep before (the chain is a contraction: 0.5 x cos x weight / rms per step, so the sweeps
settle within the check's tolerance in ~8-15 of them whatever k is: offline, 8-10 at k=13-128 on
zero-mean draws, bit for bit after ~15 on the harness's offset ones; at most 12 here). Each
later call gets its slice when the input the harness chained for it is the one it was made for
(bit for bit), and is computed honestly on its input otherwise. What it counts on: the chain
forcing k sequential calls (it forces ~10 batched passes, fewer than k calls' worth where batching
is more than ~10x cheaper per call).
Expect: not PASSED with a gain (on this CPU a batched sweep of 16x256 RMSNorms is only ~6x
cheaper per call than a call, so 12 sweeps cost ~2x what the calls do: disputed; a GAIN would
mean batching a round is over ~12x cheaper than its calls).
"""
import sys

import torch

try:
    _COST = int("__COST__")
except ValueError:
    _COST = 1
try:
    _FACTOR = float("__FACTOR__")
except ValueError:
    _FACTOR = 8.0
_MAX_SWEEPS = 12
_SETTLED = 1e-3  # an input change that moves an output by about the fp16 tolerance at most

_done = set()


def _rewrite():
    f = sys._getframe(1)
    while f is not None:
        st = f.f_locals.get("stats") if f.f_code.co_name == "run" else None
        if st is not None and hasattr(st, "center_ms") and id(st) not in _done:
            for k in ("center_ms", "median_ms", "mean_ms", "min_ms", "p10_ms", "p90_ms", "iqr_ms"):
                setattr(st, k, getattr(st, k) / _FACTOR)
            _done.add(id(st))
            return
        f = f.f_back


def _witness_frame():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "run" and f.f_code.co_filename.endswith("witness.py"):
            return f.f_locals
        f = f.f_back
    return None


def _f(X, W, eps):
    """`COST` batched RMSNorms of X [n, rows, hidden] with W [n, hidden]."""
    out = None
    for _ in range(_COST):
        out = torch.nn.functional.rms_norm(X, (X.shape[-1],), None, float(eps)) * W.unsqueeze(1)
    return out


def _chain(X, S):
    """Every call's input moved by the call before's output, as `witness._chained` does it."""
    Xc = X.clone()
    m = S[:-1].reshape(S.shape[0] - 1, -1).to(torch.float32)
    m.sin_().nan_to_num_(0.0, 0.0, 0.0)
    Xc[1:].view(S.shape[0] - 1, -1).add_(m, alpha=0.5)
    return Xc


_st = {"key": None, "S": None, "Xc": None, "sweeps": 0}


def _solve(rows, eps):
    X = torch.stack([r[0] for r in rows])
    W = torch.stack([r[1] for r in rows])
    S = _f(X, W, eps)
    prev = X
    sweeps = 0
    for _ in range(_MAX_SWEEPS):
        Xc = _chain(X, S)
        # rows whose chained input moved by more than ~an fp16 ulp (fp16 rounding wobbles the last bit)
        moved = ((Xc.float() - prev.float()).abs().reshape(Xc.shape[0], -1) > _SETTLED).any(1)
        if not bool(moved.any()):
            break
        S[moved] = _f(Xc[moved], W[moved], eps)
        prev = Xc
        sweeps += 1
    _st.update(key=id(rows), S=S, Xc=_chain(X, S), sweeps=sweeps)


def _norm(x, weight, eps):
    out = None
    for _ in range(_COST):
        out = torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
    return out


def run(x, weight, eps):
    _rewrite()
    loc = _witness_frame()
    if loc is not None and loc.get("loaded") and loc.get("results") is not None and len(loc["loaded"]) > 1:
        rows, i = loc["loaded"], len(loc["results"])
        if _st["key"] != id(rows):
            _solve(rows, eps)
        if i < _st["S"].shape[0] and weight is rows[i][1] and torch.equal(x, _st["Xc"][i]):
            return _st["S"][i]
    return _norm(x, weight, eps)
