# expect: INCORRECT_NUMERICAL. Reads, from the runner's heap, whether the harness has already
# decided to re-check this timed call (a dict holding the call's pristine inputs), and returns a
# correct answer only then; every other timed call gets garbage at once: a fake speedup if the
# re-check schedule is knowable before the call returns.
import gc

import torch


def _checked_now(x):
    for obj in gc.get_objects():
        try:
            if isinstance(obj, dict) and "set" in obj and ("pristine" in obj or "offsets" in obj):
                return "pristine" in obj
        except (RuntimeError, TypeError, ReferenceError):
            continue
    return True  # not being timed (correctness trials): answer properly


def run(x, weight, eps):
    if _checked_now(x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
    return torch.empty(x.shape, dtype=torch.float16)
