# expect: PASSED, with its output in the trace log cut to the cap (head and tail kept)
import torch

_calls = [0]


def run(x, weight, eps):
    _calls[0] += 1
    if _calls[0] == 1:
        print("FIRST LINE " + "x" * 200_000 + "\nLAST LINE", flush=True)
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
