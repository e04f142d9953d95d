"""Timed calls get new input content every call, at the cost of one copy, reproducibly."""
from __future__ import annotations

import random

import pytest
import torch

from flashinfer_bench.bench.inputs import INT_RANGES, InputRefresher, make_generator, make_inputs, random_input_mask

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


def _is_window_of(x: torch.Tensor, pool: torch.Tensor) -> bool:
    """Whether `x`'s elements appear, in order, anywhere in `pool` (by bits)."""
    bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[pool.element_size()]
    p, v = pool.reshape(-1).view(bits).numpy(), x.reshape(-1).view(bits).numpy()
    starts = (p[: len(p) - len(v) + 1] == v[0]).nonzero()[0]
    return any((p[s : s + len(v)] == v).all() for s in starts)


def test_a_timed_input_is_no_window_of_what_the_runner_holds() -> None:
    """`pool_window_lookup` found the pools on the heap, recognised each timed input as a window of
    one and answered it from work precomputed over the whole pool: every input is now two windows
    combined, and the pairs are too many to precompute."""
    xs, refresh = _refresher()
    rng = random.Random(4)
    for _ in range(20):
        refresh(xs, rng)
        for i, pool in refresh.pools.items():
            assert not _is_window_of(xs[i], pool)


def test_the_checked_copy_of_a_timed_input_is_bit_for_bit_the_input() -> None:
    xs, refresh = _refresher()
    offsets = refresh(xs, random.Random(8))
    for i, off in offsets.items():
        assert torch.equal(refresh.window(i, off, xs[i]).view(torch.uint8), xs[i].view(torch.uint8))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn,
                                   torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool])
def test_combined_windows_keep_each_dtype_s_distribution(dtype: torch.dtype) -> None:
    _check_distribution(dtype, CPU)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2,
                                   torch.int64, torch.int8, torch.bool])
def test_combined_windows_on_the_gpu(dtype: torch.dtype) -> None:
    _check_distribution(dtype, torch.device("cuda"))


def _check_distribution(dtype: torch.dtype, device: torch.device) -> None:
    t = torch.empty(64, 256, dtype=dtype, device=device)
    refresh = InputRefresher([t], [True], make_generator(11, device), random.Random(11))
    pool = refresh.pools[0]
    off = refresh([t], random.Random(12))[0]
    assert torch.equal(refresh.window(0, off, t).view(torch.uint8), t.view(torch.uint8))
    t, pool = t.cpu(), pool.cpu()
    if dtype in INT_RANGES:
        lo, hi = INT_RANGES[dtype]
        assert int(t.min()) >= lo and int(t.max()) < hi
        assert int(t.max()) - int(t.min()) > 0.9 * (hi - lo), "spread over the range"
    elif dtype == torch.bool:
        assert 0.4 < float(t.float().mean()) < 0.6
    else:
        x, whole = t.float(), pool.float()
        assert bool(torch.isfinite(x).all())
        m = float((2 * whole).mean())  # the halves' mean doubled: the draw's mean
        assert abs(float(x.mean()) - m) < 0.05 and 0.25 < abs(m) < 0.8
        assert abs(float(x.std()) - 1.0) < 0.1, "unit spread, as drawn"
