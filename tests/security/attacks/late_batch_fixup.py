"""Class: harness state reached from inside the runner (frames): a stepped round's calls are
answered before they are computed, and their outputs put right once every input is there.

Tries: compute honestly with one RMSNorm a call (tens of microseconds on a CPU, whatever `COST`
says: a cheap call's cost is mostly per-call overhead, which a batch saves) and divide the
finished statistics by 20.
In a stepped witness round (inputs handed over call by call, session 19) every call but the last
returns at once an unfilled buffer of the right shape; by the last call the whole round's inputs
are in the harness's frame (`loaded`), so it computes them in one batch, fills every earlier
call's buffer in place (the harness's list of results holds those very tensors) and rewrites
their bytes in the round's outputs file (through the harness's own writer, its descriptor and
the offsets it described): at the end the file and the description hold the right outputs, each
call having cost the witness a buffer's allocation. Where the round is not stepped, it is honest
in the witness (its forged statistics then meet the whole round).
Expect: not PASSED with a gain (the outputs the supervisor checks must be those that existed
when each call returned).
"""
import os
import sys

import torch


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).half()


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


def _stepped_round():
    """The witness's frame locals where the round is stepped (its writer is there), else None."""
    f = sys._getframe(2)
    for _ in range(6):  # the witness's run is a few frames up; the evaluation's stack is deeper
        if f is None:
            break
        if f.f_code.co_name == "run" and f.f_code.co_filename.endswith("witness.py"):
            loc = f.f_locals
            return loc if loc.get("steps") is not None and loc.get("loaded") is not None else None
        f = f.f_back
    return None


_pending = {}  # id(round's inputs) -> [(call number, buffer)]


def run(x, weight, eps):
    loc = _stepped_round()
    if loc is None:
        _rewrite()
        return _rms(x, weight, float(eps))
    rows, results, writer = loc["loaded"], loc["results"], loc["steps"]
    pending = _pending.setdefault(id(rows), [])
    i = len(results)
    if i < len(rows) - 1:
        buf = torch.empty_like(x)
        pending.append((i, buf))
        return buf
    out = _rms(torch.stack([r[0] for r in rows]), torch.stack([r[1] for r in rows]).unsqueeze(1), float(eps))
    for j, buf in pending:
        buf.copy_(out[j])
        entry = writer.meta[j][0]
        os.pwrite(writer.fd, buf.contiguous().view(torch.uint8).numpy().tobytes(), entry["offset"])
    _pending.pop(id(rows), None)
    return out[i].clone()
