"""Inputs of an evaluation, drawn from the workload with a recorded seed.

Random floats are N(mu, 1) with a per-tensor non-zero mean mu and about 0.1% outliers of
magnitude 4-8, so a solution that returns zeros, a constant or its input fails, and a kernel that
only works on centred data is caught. Integers, bools and low-precision floats are drawn in ranges
their dtype can hold. Scalars come from the workload, typed by the definition's dtype; safetensors
inputs are read relative to the dataset root.
"""
from __future__ import annotations

import hashlib
import math
import random
from collections import OrderedDict
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from ..data import Definition, DType, Workload
from ..data.input_specs import INTEGER_KINDS, InputSpecError, float_params, generate_integer_inputs
from ..data.workload import RandomInput, SafetensorsInput, ScalarInput

# integer ranges [lo, hi) per dtype: small and non-negative for the wide types (they usually index
# something), the full range for int8.
INT_RANGES = {
    torch.int8: (-128, 128),
    torch.int16: (-1024, 1024),
    torch.int32: (0, 1024),
    torch.int64: (0, 1024),
    torch.uint8: (0, 256),
}
OUTLIER_FRACTION = 1e-3
# floats drawn as N(mu, 1) + outliers (fp8 clamped to its range); other dtypes get random bytes
NORMAL_FLOATS = {
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2,
}


class InputError(ValueError):
    """The workload cannot produce the inputs the definition asks for (a dataset problem)."""


def derive_seed(base: int, workload_uuid: str, index: int) -> int:
    """Seed of input set `index` of one workload; stable across machines and processes."""
    h = hashlib.sha256(f"{base}:{workload_uuid}:{index}".encode()).digest()
    return int.from_bytes(h[:8], "big") & ((1 << 62) - 1)


def make_generator(seed: int, device: torch.device) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g


def _float_max(dtype: torch.dtype) -> Optional[float]:
    if dtype in (torch.float32, torch.float16, torch.bfloat16):
        return None
    try:
        return float(torch.finfo(dtype).max)
    except TypeError:
        return None


def fill_random_(t: torch.Tensor, gen: torch.Generator, rng: random.Random) -> torch.Tensor:
    """Overwrite `t` in place with a fresh draw of our distribution for its dtype."""
    dtype = t.dtype
    if t.numel() == 0:
        return t
    if dtype == torch.bool:
        t.copy_(torch.randint(0, 2, t.shape, generator=gen, device=t.device, dtype=torch.uint8).bool())
    elif dtype in INT_RANGES:
        lo, hi = INT_RANGES[dtype]
        t.copy_(torch.randint(lo, hi, t.shape, generator=gen, device=t.device, dtype=dtype))
    elif dtype in NORMAL_FLOATS:
        x = torch.randn(t.shape, generator=gen, device=t.device, dtype=torch.float32)
        mu = rng.uniform(0.25, 0.75) * rng.choice((-1.0, 1.0))
        x.add_(mu)
        n = x.numel()
        k = int(n * OUTLIER_FRACTION) if n >= 64 else 0
        if k:
            flat = x.view(-1)
            idx = torch.randint(0, n, (k,), generator=gen, device=t.device)
            mag = torch.rand(k, generator=gen, device=t.device) * 4.0 + 4.0
            sign = torch.randint(0, 2, (k,), generator=gen, device=t.device).float() * 2.0 - 1.0
            flat[idx] = mag * sign
        fmax = _float_max(dtype)
        if fmax is not None:
            x.clamp_(-fmax, fmax)
        t.copy_(x.to(dtype))
    else:
        # packed / exotic dtypes (float4_e2m1fn_x2 ...): random bytes of the same storage
        raw = torch.randint(0, 256, (t.numel() * t.element_size(),), generator=gen, device=t.device, dtype=torch.uint8)
        t.view(-1).view(torch.uint8).copy_(raw)
    return t


def _scalar(value: Any, dtype: DType) -> Any:
    if dtype is DType.BOOL:
        return bool(value)
    if dtype.is_int:
        return int(value)
    return float(value)


def _random_scalar(dtype: DType, rng: random.Random) -> Any:
    if dtype is DType.BOOL:
        return rng.random() < 0.5
    if dtype.is_int:
        return rng.randint(1, 8)
    return rng.uniform(0.5, 1.5)


class SafetensorsCache:
    """Tensors read from safetensors files, kept on the CPU, least recently used dropped first."""

    def __init__(self, max_bytes: int = 2 << 30):
        self.max_bytes = max_bytes
        self._items: "OrderedDict[Tuple[str, str], torch.Tensor]" = OrderedDict()
        self._bytes = 0

    def get(self, path: Path, key: str) -> torch.Tensor:
        k = (str(path), key)
        if k in self._items:
            self._items.move_to_end(k)
            return self._items[k]
        from safetensors import safe_open

        if not path.is_file():
            raise InputError(f"safetensors file {path} does not exist")
        with safe_open(str(path), framework="pt", device="cpu") as f:
            if key not in f.keys():
                raise InputError(f"{path} has no tensor {key!r} (has {sorted(f.keys())[:10]})")
            t = f.get_tensor(key)
        self._items[k] = t
        self._bytes += t.numel() * t.element_size()
        while self._bytes > self.max_bytes and len(self._items) > 1:
            _, old = self._items.popitem(last=False)
            self._bytes -= old.numel() * old.element_size()
        return t


def axis_values(definition: Definition, workload: Workload) -> Dict[str, int]:
    return definition.axis_values({k: v for k, v in workload.axes.items() if k in definition.var_axes})


def _fill_spec_(t: torch.Tensor, spec: Dict[str, Any], gen: torch.Generator, rng: random.Random) -> torch.Tensor:
    """Draw a float generator kind (normal, uniform, probabilities) into `t` on its device."""
    kind = spec["kind"]
    x = torch.empty(t.shape, dtype=torch.float32, device=t.device)
    if kind == "normal":
        x.normal_(float(spec.get("mean", 0.0)), float(spec.get("std", 1.0)), generator=gen)
    elif kind == "uniform":
        x.uniform_(float(spec.get("low", 0.0)), float(spec.get("high", 1.0)), generator=gen)
    elif kind == "probabilities":
        x.normal_(0.0, float(spec.get("scale", 3.0)), generator=gen)
        x = torch.softmax(x, dim=-1) if x.dim() else torch.ones_like(x)
    else:  # pragma: no cover - kinds are checked when the config is loaded
        raise InputError(f"unknown generator kind {kind!r}")
    fmax = _float_max(t.dtype) if t.dtype.is_floating_point else None
    if fmax is not None:
        x.clamp_(-fmax, fmax)
    t.copy_(x.to(t.dtype))
    return t


def _scalar_from_spec(spec: Dict[str, Any], dtype: DType, gen: torch.Generator, device: torch.device) -> Any:
    t = torch.empty((), dtype=torch.float32, device=device)
    _fill_spec_(t, spec, gen, random.Random(0))
    return _scalar(float(t), dtype)


def make_inputs(
    definition: Definition,
    workload: Workload,
    seed: int,
    device: torch.device,
    dataset_root: Optional[Path],
    st_cache: Optional[SafetensorsCache] = None,
    specs: Optional[Dict[str, Dict[str, Any]]] = None,
) -> List[Any]:
    """The inputs in definition order: tensors on `device`, or Python scalars (shape null).

    Inputs the workload gives (scalar, safetensors) are used as given; the others follow their
    generator spec (`specs`, resolved by `data.op_types.family_settings`), `random` by default.
    Structured integer kinds are drawn by `data.input_specs` (numpy, the same code validation
    checks constraints with), float kinds here on the device."""
    specs = specs or {}
    axes = axis_values(definition, workload)
    shapes = definition.input_shapes_by_name(axes)
    gen = make_generator(seed, device)
    rng = random.Random(seed)
    given: Dict[str, Any] = {}
    for name, spec in definition.inputs.items():
        src = workload.inputs.get(name, RandomInput())
        shape = shapes[name]
        if isinstance(src, ScalarInput):
            given[name] = (
                _scalar(src.value, spec.dtype) if shape is None
                else torch.full(shape, src.value, dtype=spec.dtype.to_torch())
            )
        elif isinstance(src, SafetensorsInput):
            given[name] = _read_blob(name, src, spec, shape, dataset_root, st_cache)
    int_specs = {
        n: s for n, s in specs.items()
        if n in definition.inputs and n not in given and s.get("kind") in INTEGER_KINDS
    }
    try:
        drawn = generate_integer_inputs(definition, axes, int_specs, seed, given=given)
    except InputSpecError as e:
        raise InputError(str(e)) from e
    out: List[Any] = []
    for name, spec in definition.inputs.items():
        shape = shapes[name]
        if name in given:
            v = given[name]
            out.append(v.to(device, copy=True) if isinstance(v, torch.Tensor) else v)
        elif name in drawn:
            v = drawn[name]
            out.append(
                _scalar(v, spec.dtype) if shape is None
                else torch.from_numpy(v).to(dtype=spec.dtype.to_torch(), device=device)
            )
        else:
            g = specs.get(name, {"kind": "random"})
            if g["kind"] != "random":
                try:
                    g = float_params(name, g, definition, axes)
                except InputSpecError as e:
                    raise InputError(str(e)) from e
            if shape is None:
                out.append(_random_scalar(spec.dtype, rng) if g["kind"] == "random" else _scalar_from_spec(g, spec.dtype, gen, device))
                continue
            t = torch.empty(shape, dtype=spec.dtype.to_torch(), device=device)
            out.append(fill_random_(t, gen, rng) if g["kind"] == "random" else _fill_spec_(t, g, gen, rng))
    return out


def _read_blob(
    name: str, src: SafetensorsInput, spec: Any, shape: Optional[Tuple[int, ...]],
    dataset_root: Optional[Path], st_cache: Optional[SafetensorsCache],
) -> torch.Tensor:
    if dataset_root is None:
        raise InputError(f"input {name!r} is read from safetensors but no dataset root is known")
    p = Path(src.path)
    path = p if p.is_absolute() else Path(dataset_root) / p
    t = (st_cache or SafetensorsCache()).get(path, src.tensor_key)
    want = spec.dtype.to_torch()
    if t.dtype != want:
        raise InputError(f"input {name!r}: {path}:{src.tensor_key} is {t.dtype}, the definition says {want}")
    if shape is not None and tuple(t.shape) != tuple(shape):
        raise InputError(
            f"input {name!r}: {path}:{src.tensor_key} has shape {tuple(t.shape)}, the workload's axes give {tuple(shape)}"
        )
    return t


def random_input_mask(
    definition: Definition, workload: Workload, specs: Optional[Dict[str, Dict[str, Any]]] = None
) -> List[bool]:
    """Which inputs get fresh content before every timed call: random tensors of the default
    kind. Structured inputs (offsets, indices, probabilities, scales ...) keep their content,
    which the definition's constraints and the reference depend on."""
    specs = specs or {}
    mask = []
    for name, tspec in definition.inputs.items():
        src = workload.inputs.get(name, RandomInput())
        kind = specs.get(name, {}).get("kind", "random")
        mask.append(isinstance(src, RandomInput) and tspec.shape is not None and kind == "random")
    return mask


# a pool offers at least this many windows: among 3,000 timed calls (our max) about 2% repeat an offset
MIN_WINDOWS = 1 << 16
_FP8 = {torch.float8_e4m3fn, torch.float8_e5m2}
_HALVE_CHUNK = 1 << 24


def _halve_(pool: torch.Tensor) -> torch.Tensor:
    """A normal-float pool made into halves: the sum of two of its windows is again N(mean, 1)
    (h = (p - m) / sqrt(2) + m / 2, so h1 + h2 = ((p1 - m) + (p2 - m)) / sqrt(2) + m)."""
    chunks = pool.split(_HALVE_CHUNK)  # a float copy of a whole pool of GBs would double its memory
    m = sum(float(c.sum(dtype=torch.float64)) for c in chunks) / pool.numel()
    for c in chunks:
        c.copy_(c.float().sub_(m).mul_(0.5 ** 0.5).add_(m / 2))
    return pool


def _combine(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    """`out` = one draw of our distribution made of two pool windows, in as few kernels as a
    copy where the dtype allows: the sum for floats, the sum modulo the range for integers
    (uniform stays uniform), xor for bools and raw bytes."""
    dtype = out.dtype
    if dtype in _FP8:  # no fp8 arithmetic: add in fp16 (the halves are small), round back
        out.copy_(a.to(torch.float16).add_(b.to(torch.float16)))
    elif dtype in NORMAL_FLOATS:
        torch.add(a, b, out=out)
    elif dtype == torch.bool:
        torch.bitwise_xor(a, b, out=out)
    elif dtype in INT_RANGES and INT_RANGES[dtype][1] - INT_RANGES[dtype][0] != 256:
        lo, hi = INT_RANGES[dtype]
        torch.add(a, b, out=out)
        if lo:
            out.sub_(2 * lo)
        out.remainder_(hi - lo)
        if lo:
            out.add_(lo)
    else:  # int8, uint8 (the whole byte range) and packed dtypes: random bytes, xor stays uniform
        torch.bitwise_xor(a.view(torch.uint8), b.view(torch.uint8), out=out.view(torch.uint8))


class InputRefresher:
    """New content for the random tensor inputs before each timed call, at about the cost of a copy.

    One pool per random input (numel + max(numel, MIN_WINDOWS) elements, drawn once) and two
    windows at random offsets combined into the call's buffer (`_combine`). Every call sees other
    content, so an output cached by address or fingerprint is stale and the re-check fails it. A
    timed input is not a window of anything the runner holds (`pool_window_lookup`, session 23:
    with one window copied, a solution found the pools on the heap, indexed every window and
    precomputed each sliding row's norm once, then answered recognised calls at half their cost);
    the pairs of windows are too many to precompute. A fresh draw per call (`fill_random_`) costs
    ~14 kernel launches per tensor, which dominated a sample's wall time for kernels of a few
    microseconds.
    """

    def __init__(self, template: Sequence[Any], mask: Sequence[bool], gen: torch.Generator, rng: random.Random) -> None:
        self.pools: Dict[int, torch.Tensor] = {}
        for i, (t, m) in enumerate(zip(template, mask)):
            if m and isinstance(t, torch.Tensor) and t.numel() > 0:
                n = t.numel()
                pool = fill_random_(torch.empty(n + max(n, MIN_WINDOWS), dtype=t.dtype, device=t.device), gen, rng)
                self.pools[i] = _halve_(pool) if t.dtype in NORMAL_FLOATS else pool

    def nbytes(self) -> int:
        return sum(p.numel() * p.element_size() for p in self.pools.values())

    def __call__(self, bufs: Sequence[Any], rng: random.Random) -> Dict[int, Tuple[int, int]]:
        """Refresh the random inputs of `bufs`; returns input index -> the two pool offsets used
        (what `window` needs to rebuild this call's pristine inputs after the call)."""
        offsets: Dict[int, Tuple[int, int]] = {}
        for i, pool in self.pools.items():
            b = bufs[i]
            n = b.numel()
            span = pool.numel() - n + 1
            off = (rng.randrange(span), rng.randrange(span))
            _combine(pool[off[0] : off[0] + n].view(b.shape), pool[off[1] : off[1] + n].view(b.shape), b)
            offsets[i] = off
        return offsets

    def window(self, i: int, offset: Tuple[int, int], like: torch.Tensor) -> torch.Tensor:
        """The content input `i` got at `offset` (a new tensor shaped like `like`, bit for bit)."""
        pool, n = self.pools[i], like.numel()
        out = torch.empty(like.shape, dtype=pool.dtype, device=pool.device)
        _combine(pool[offset[0] : offset[0] + n].view(like.shape), pool[offset[1] : offset[1] + n].view(like.shape), out)
        return out


def clone_inputs(inputs: Sequence[Any]) -> List[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def allocate_outputs(definition: Definition, axes: Dict[str, int], device: torch.device) -> List[torch.Tensor]:
    shapes = definition.output_shapes_by_name({k: v for k, v in axes.items() if k in definition.var_axes})
    return [
        torch.empty(shapes[n] if shapes[n] is not None else (), dtype=s.dtype.to_torch(), device=device)
        for n, s in definition.outputs.items()
    ]


def poison_(t: torch.Tensor) -> None:
    """Fill with a value no correct kernel writes everywhere: NaN for floats, a sentinel for ints."""
    if t.dtype.is_floating_point:
        try:
            t.fill_(math.nan)
            return
        except RuntimeError:
            pass
    if t.dtype == torch.bool:
        # no sentinel exists for bool; alternate values so an unwritten output rarely matches
        t.view(-1).copy_(torch.arange(t.numel(), device=t.device) % 2 == 1)
        return
    if t.dtype in INT_RANGES or t.dtype in (torch.int8, torch.uint8):
        info = torch.iinfo(t.dtype)
        t.fill_(info.min if info.min < 0 else info.max)
        return
    t.view(-1).view(torch.uint8).fill_(0xFF)


def tensor_bytes(xs: Sequence[Any]) -> int:
    return sum(x.numel() * x.element_size() for x in xs if isinstance(x, torch.Tensor))


def same_bytes(a: Any, b: Any) -> bool:
    """Bitwise equality (NaN-safe) of two inputs; Python scalars compare by value."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        return torch.equal(
            a.detach().contiguous().reshape(-1).view(torch.uint8),
            b.detach().contiguous().reshape(-1).view(torch.uint8),
        )
    return a == b
