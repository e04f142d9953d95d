"""Class: leaks and gaps (an honest solution's convention the witness does not expect: input
addresses that come back).

Tries: nothing dishonest: one fused RMSNorm a call, computed right every call, written into an
output buffer kept per input buffer (keyed by `x.data_ptr()`: one output per input slot, as a
serving engine with static input and output buffers has), and returned. In the evaluation each
timing set has its own input buffer and every call's outputs are read (re-checked, audited) right
after it returns. In the witness's chained round every call after the first gets a new `x` made
by the harness (`_chained`), and the previous call's is freed when its argument list is dropped:
the allocator hands the same address back, so consecutive calls share one output buffer and the
round's rows, saved at its end, hold later calls' outputs. The statistics are not touched.
Expect: PASSED without a gain (a rejection means an honest solution failed as `witness_wrong`
because the witness reuses addresses that the evaluation never reuses).
"""
import torch

_out = {}


def run(x, weight, eps):
    key = (x.data_ptr(), tuple(x.shape), x.dtype)
    out = _out.get(key)
    if out is None:
        if len(_out) > 4096:
            _out.clear()
        out = _out[key] = torch.empty_like(x)
    out.copy_(torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps)))
    return out
