"""Class: harness state reached from inside the runner (the witness's runner side: its helpers,
patched after the guard's last look).

Tries: what `witness_midround_patch` does, without touching `witness.run` itself (a defence that
binds the runner loop's `witness.run` once, before any solution loads, still calls these): inside
the first witnessed call, when no guard check follows, it replaces the module globals the
harness's `run` looks up at each use (`_chained`, `_save_all`) with leaner ones of the same
results (the chain's xor in two in-place ops on a kept buffer; the outputs packed into one buffer
and written with one pwrite), and shadows the prepared EvalRun's `_call_solution` (its instance,
found in the frame) with a direct call. One fused RMSNorm a call, every output right; the
statistics divided by 20. Every later round runs the harness's `run` with the solution's helpers
while the null subtracted pays the harness's own.
Expect: not PASSED with a gain (a GAIN means the helpers the witness's `run` calls are as open as
`run` once the guard has looked for the last time).
"""
import os
import sys

import torch

_done = set()
_state = {"installed": False}


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


def _witness_frame():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "run" and f.f_code.co_filename.endswith("witness.py"):
            return f
        f = f.f_back
    return None


_bufs = {}


def _lean_chained(args, j, previous):
    x = args[j]
    first = previous[0]
    key = (x.shape, x.dtype)
    b = _bufs.get(key)
    if b is None:
        b = _bufs[key] = (torch.empty(x.numel(), dtype=torch.int16), )
    low = b[0]
    torch.bitwise_and(first.reshape(-1).view(torch.int16), 0xFF, out=low)
    moved = torch.bitwise_xor(x.reshape(-1).view(torch.int16), low).view(x.dtype).view(x.shape)
    out = list(args)
    out[j] = moved
    return out


def _install(frame):
    mod = sys.modules[frame.f_globals["__name__"]]
    orig_chained, orig_save, layout = mod._chained, mod._save_all, mod._layout

    def chained(args, j, previous):
        x = args[j]
        first = previous[0] if previous else None
        if (x.dtype == torch.float16 and isinstance(first, torch.Tensor) and first.dtype == torch.float16
                and first.numel() == x.numel() and first.is_contiguous() and x.is_contiguous()):
            return _lean_chained(args, j, previous)
        return orig_chained(args, j, previous)

    def save_all(rows, path):
        if any(t.device.type != "cpu" for r in rows for t in r if isinstance(t, torch.Tensor)):
            return orig_save(rows, path)
        meta, chunks, end = layout(rows, os.path.basename(path))
        buf = torch.zeros(end, dtype=torch.uint8)
        for at, n, c in chunks:
            buf[at:at + n].copy_(c.reshape(-1).view(torch.uint8))
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
        try:
            os.ftruncate(fd, end)
            view = memoryview(buf.numpy())
            done = 0
            while done < len(view):
                done += os.pwrite(fd, view[done:], done)
        finally:
            os.close(fd)
        return meta

    mod._chained = chained
    mod._save_all = save_all
    ev = frame.f_locals.get("ev")
    if ev is not None:
        def direct(runnable, args, outs):
            x, weight, eps = args
            return [torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))]

        ev._call_solution = direct
    _state["installed"] = True


def run(x, weight, eps):
    _rewrite()
    if not _state["installed"]:
        f = _witness_frame()
        if f is not None:
            _install(f)
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
