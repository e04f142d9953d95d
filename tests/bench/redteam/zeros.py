# expect: INCORRECT_NUMERICAL  (returns zeros: fails the element rule; the scale guard catches it even on tiny references)
import torch


def run(x, weight, eps):
    return torch.zeros_like(x)
