# expect: INCORRECT_NUMERICAL  (returns a constant near the outputs' typical magnitude)
import torch


def run(x, weight, eps):
    return torch.full_like(x, 0.5)
