"""Class: leaks and gaps (an honest solution's convention the witness does not expect).

Tries: nothing dishonest: one fused RMSNorm a call, computed right, written into one output
buffer the solution keeps and returns every call (a static output, as a CUDA-graph or
workspace-caching kernel returns; the harness's own trials and timed re-checks read each call's
outputs right after it returns, and its audit clones them there). The statistics are not touched.
The witness keeps every call's returned tensor until the end of its round and saves them then:
every row is then the last call's outputs, and a chained round's later inputs are rebuilt from
them in the reference runner.
Expect: PASSED without a gain (a rejection means an honest, correct solution is failed as
wrong by the witness: `witness_wrong` on outputs that were right when each call returned).
"""
import torch

_buf = {}


def run(x, weight, eps):
    out = _buf.get((x.shape, x.dtype))
    if out is None:
        out = _buf[(x.shape, x.dtype)] = torch.empty_like(x)
    out.copy_(torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps)))
    return out
