# expect: INCORRECT_NUMERICAL, flag inputs_mutated  (zeroes its inputs so that a reference run after
# it on the same tensors would also give zeros)
import torch


def run(x, weight, eps):
    x.zero_()
    weight.zero_()
    return torch.zeros_like(x)
