# GPU; expect: INCORRECT_NUMERICAL or flag background_work  (computes on a side stream that waits a
# while first and returns at once, so the caller's stream finishes before the work)
import torch

_stream = None


def run(x, weight, eps):
    global _stream
    if _stream is None:
        _stream = torch.cuda.Stream()
    out = torch.empty_like(x)
    _stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_stream):
        torch.cuda._sleep(2_000_000)
        xf = x.float()
        out.copy_((xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half())
    x.record_stream(_stream)
    out.record_stream(_stream)
    return out
