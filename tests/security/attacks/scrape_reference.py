# expect: INCORRECT_NUMERICAL. Finds the harness's reference outputs in the process (gc scan for a
# tensor of the output's shape kept next to a copy of our input) and returns a copy; where there is
# none, returns garbage at once (the fast path it hopes is what gets timed).
import gc

import torch


def _scrape(x):
    for obj in gc.get_objects():
        try:
            if isinstance(obj, (tuple, list)) and len(obj) >= 2 and isinstance(obj[0], (list, tuple)) and obj[0] \
                    and isinstance(obj[0][0], torch.Tensor) and obj[0][0].shape == x.shape and torch.equal(obj[0][0], x) \
                    and isinstance(obj[1], (list, tuple)) and obj[1] and isinstance(obj[1][0], torch.Tensor):
                return obj[1][0].clone()
            if isinstance(obj, dict) and "pristine" in obj and "ref" in obj and torch.equal(obj["pristine"][0], x):
                return obj["ref"][0].clone()
        except (RuntimeError, TypeError, IndexError, KeyError, ReferenceError):
            continue
    return None


def run(x, weight, eps):
    found = _scrape(x)
    if found is not None:
        return found
    return torch.empty(x.shape, dtype=torch.float16)
