"""Class: leaks and gaps (an honest solution's convention the witness does not expect).

Tries: nothing dishonest: one fused RMSNorm a call, computed right, in a solution that calls
`torch.set_default_device` for the device its inputs are on when it is first called (as model
code that allocates scratch with factory functions does). That leaves a torch function mode
(DeviceContext) active in its runner: every torch operation there, the harness's own included,
then goes through the mode's Python handler. The statistics are not touched.
Expect: PASSED without a gain (a rejection means an honest solution is disputed because the
witness's own operations in its runner cost more than the same operations in the null's: session
23 measured an honest 16 us RMSNorm witnessed at 61.7 us and disputed).
"""
import torch

_set = []


def run(x, weight, eps):
    if not _set:
        torch.set_default_device(x.device)
        _set.append(True)
    scratch = torch.empty(x.shape, dtype=torch.float32)  # a factory call: where the default device says
    scratch.copy_(x)
    return (scratch * torch.rsqrt(scratch.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
