"""One run of a solution on a small valid input, so JIT languages compile their kernels at build
time (into a cache inside the artifact) and a build proves the code executes.

Inputs: var axes all set to the smallest value that satisfies the definition's constraints (on a
GPU also the smallest multiple of 16, the specialisation real batch sizes usually hit); floats
random, integers and bools zero (a safe index for index tensors), scalar inputs 1 / 1e-5 / False.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from ..data import Definition, DType

MAX_ELEMENTS = 1 << 26
_CANDIDATES = list(range(1, 65)) + [2 ** k for k in range(7, 13)]


def _first_valid(definition: Definition, values: List[int]) -> Optional[Dict[str, int]]:
    for v in values:
        axes = {a: v for a in definition.var_axes}
        if definition.check_constraints(axes):
            continue
        try:
            if definition.max_tensor_elements(axes) > MAX_ELEMENTS:
                continue
        except ValueError:
            continue
        return axes
    return None


def warmup_axes(definition: Definition, on_gpu: bool) -> List[Dict[str, int]]:
    """Var-axis assignments to warm up with (empty when none satisfies the constraints)."""
    out = []
    small = _first_valid(definition, _CANDIDATES)
    if small is not None:
        out.append(small)
    if on_gpu and definition.var_axes:
        by16 = _first_valid(definition, [v for v in _CANDIDATES if v % 16 == 0])
        if by16 is not None and by16 != small:
            out.append(by16)
    return out


def _scalar(dtype: DType) -> Any:
    if dtype is DType.BOOL:
        return False
    if dtype.is_int:
        return 1
    return 1e-5


def make_args(
    definition: Definition, var_values: Dict[str, int], dps: bool, device: str, seed: int = 0
) -> List[Any]:
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    args: List[Any] = []
    in_shapes = definition.input_shapes_by_name(var_values)
    for name, spec in definition.inputs.items():
        shape = in_shapes[name]
        if shape is None:
            args.append(_scalar(spec.dtype))
            continue
        dt = spec.dtype.to_torch()
        if spec.dtype.is_float and spec.dtype is not DType.FLOAT4_E2M1:
            t = torch.randn(shape, generator=gen, dtype=torch.float32).to(dt)
        else:
            t = torch.zeros(shape, dtype=dt)
        args.append(t.to(device))
    if dps:
        out_shapes = definition.output_shapes_by_name(var_values)
        for name, spec in definition.outputs.items():
            shape = out_shapes[name]
            if shape is None:
                raise TypeError(f"output {name!r} is a scalar; a DPS entry cannot receive it")
            args.append(torch.empty(shape, dtype=spec.dtype.to_torch(), device=device))
    return args


def run_warmup(
    fn: Callable[..., Any], definition: Definition, dps: bool, on_gpu: bool
) -> List[Dict[str, int]]:
    """Call fn once per warm-up assignment; returns the assignments used. Raises what fn raises."""
    import torch

    device = "cuda" if on_gpu else "cpu"
    used = []
    for axes in warmup_axes(definition, on_gpu):
        args = make_args(definition, axes, dps, device)
        fn(*args)
        if on_gpu:
            torch.cuda.synchronize()
        used.append(axes)
    return used

