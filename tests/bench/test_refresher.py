"""Timed calls get new input content every call, at the cost of one copy, reproducibly."""
from __future__ import annotations

import random

import torch

from flashinfer_bench.bench.inputs import InputRefresher, make_generator, make_inputs, random_input_mask

from .conftest import rms_definition, rms_workload

CPU = torch.device("cpu")


def _refresher(seed: int = 3):
    d, w = rms_definition(), rms_workload(8)
    xs = make_inputs(d, w, 0, CPU, None)
    return xs, InputRefresher(xs, random_input_mask(d, w), make_generator(seed, CPU), random.Random(seed))


def test_every_call_sees_new_content_at_the_same_address() -> None:
    xs, refresh = _refresher()
    ptr = xs[0].data_ptr()
    rng = random.Random(1)
    seen = set()
    for _ in range(200):
        refresh(xs, rng)
        assert xs[0].data_ptr() == ptr
        seen.add(hash(xs[0].numpy().tobytes()))
    assert len(seen) >= 198, "content repeats far more often than the pool's window count allows"
    assert isinstance(xs[2], float), "scalars stay"


def test_refreshed_content_keeps_the_distribution() -> None:
    xs, refresh = _refresher()
    refresh(xs, random.Random(2))
    x = xs[0].float()
    assert abs(float(x.mean())) > 0.1, "non-zero mean, as drawn"
    assert bool(torch.isfinite(x).all())


def test_same_seeds_same_sequence() -> None:
    a, ra = _refresher(7)
    b, rb = _refresher(7)
    ga, gb = random.Random(9), random.Random(9)
    for _ in range(5):
        ra(a, ga)
        rb(b, gb)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
