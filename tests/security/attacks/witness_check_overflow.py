"""Class: harness state reached from inside the runner (module attributes of the witness's runner
side): opting out of the witness by making the reference runner's check raise, not fail.

Tries: divide the finished timing statistics by 100 (as `rewrite_stats`), and wrap the runner's
own `witness._save_all` (the witness module is not among the modules the guard watches) so that
the description of the outputs it saves for the supervisor says `Infinity` for each output's
first dimension; the same for `_StepWriter.finish`, which describes a stepped round's outputs
(the default since session 21). JSON carries infinities both ways; the reference runner's check reads the shape
with `int(x)`, which raises OverflowError for an infinity, and the check only turns ValueError,
TypeError, KeyError, OSError and RuntimeError into "unreadable outputs" (witness_wrong). Anything
else fails the whole check message, and a check that does not answer OK aborts the witness with
"unwitnessed", which leaves the result PASSED and not suspect. The outputs themselves (in
outputs.bin) are right. PASSED at 125x until session 19. Expect: not PASSED with a gain (a
description the check cannot read is witness_wrong, and a check that fails is witness_failed,
never unwitnessed).
"""
import sys

import torch

FACTOR = 100.0
_done = set()


def _rewrite():
    f = sys._getframe(2)
    while f is not None:
        st = f.f_locals.get("stats") if f.f_code.co_name == "run" else None
        if st is not None and hasattr(st, "center_ms") and id(st) not in _done:
            for k in ("center_ms", "median_ms", "mean_ms", "min_ms", "p10_ms", "p90_ms", "iqr_ms"):
                setattr(st, k, getattr(st, k) / FACTOR)
            _done.add(id(st))
            return
        f = f.f_back


def _install():
    w = sys.modules.get("flashinfer_bench.bench.sandbox.witness")
    if w is None or getattr(w._save_all, "_h19", False):
        return
    real = w._save_all

    def save_all(rows, path):
        meta = real(rows, path)
        if str(path).endswith("outputs.bin"):
            for row in meta:
                for d in row:
                    if isinstance(d, dict) and d.get("shape"):
                        d["shape"] = [float("inf")] + list(d["shape"][1:])
        return meta

    save_all._h19 = True
    w._save_all = save_all
    finish = w._StepWriter.finish

    def finish_inf(self):
        meta = finish(self)
        for row in meta:
            for d in row:
                if isinstance(d, dict) and d.get("shape"):
                    d["shape"] = [float("inf")] + list(d["shape"][1:])
        return meta

    w._StepWriter.finish = finish_inf


_install()


def run(x, weight, eps):
    _rewrite()
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
