"""How each input of a workload is generated when the workload does not give it (`random` or absent).

Real kernels take structured inputs: offset arrays (`kv_indptr`), page tables (`kv_indices`),
last-page lengths, top-k/top-p values, probability rows, routing data, fp8 block scales. Drawn
as plain random numbers they break the reference (an index past the cache, a decreasing offset
array). A *generator spec* says, per input name, how to draw it from the workload's axes:

    {"kind": "offsets", "total": "num_kv_indices", "cover": "qo_indptr"}

Specs come in layers, each overriding the one before per input name (a key may be a glob such as
`"*_scale"`; an exact name beats a glob): the shipped defaults per op type (`op_types.py`), then
`op_type_evaluation.<op_type>.inputs` and `definition_evaluation.<definition>.inputs` of the
config. `flashinfer-bench inputs --local DATASET --definition NAME` prints the resolved specs.

Kinds (expressions are over the definition's axes, e.g. `"num_pages * page_size"`):

- `random` (default): floats N(mu, 1) with a non-zero mean and rare outliers, integers in a small
  range, refreshed before every timed call;
- `normal` {mean, std}, `uniform` {low, high}: floats (a scalar input gets one value; the
  bounds may be expressions, e.g. `"1/sqrt(head_dim)"`);
- `probabilities` {scale}: rows of softmax(N(0, scale)) along the last axis (each row sums to 1);
- `integers` {low, high, multiple_of}: integers in [low, high] (inclusive);
- `offsets` {total, min_segment, cover, cover_unit}: a 1-D array [0, ..., total] of len n+1, non
  decreasing; segments are at least `min_segment` (default 1) when the total allows it; with
  `cover: qo_indptr` segment i is at least ceil(q_i / cover_unit) (causal prefill: every request
  sees at least as many keys as it has queries; when the total cannot cover them all, it is shared
  in proportion to the queries, or with `strict_cover: true` that is an error);
- `indices` {high, low, unique, per_row, pad}: indices in [low, high); `unique` (default true)
  draws without replacement when the range holds enough (else with repeats); with `per_row` (2-D
  inputs) each row is distinct and a row wider than the range is padded with `pad` (default -1);
- `last_page_len` {page_size, indptr, cover}: per request the valid tokens of its last page, in
  [1, page_size]; with `cover`, enough that pages * page_size covers the request's queries.

Structured integer kinds are drawn here with numpy (validation checks tensor constraints on
them without torch); the float kinds are drawn on the device by `bench/inputs.py`. A spec that
names an input the definition lacks is ignored, so one op-type spec serves decode and prefill.
"""
from __future__ import annotations

import fnmatch
import hashlib
import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .definition import Definition
from .expr import ExprError, evaluate

__all__ = [
    "FLOAT_KINDS",
    "INTEGER_KINDS",
    "InputSpecError",
    "KINDS",
    "generate_integer_inputs",
    "resolve_input_specs",
    "spec_problems",
]

FLOAT_KINDS = ("random", "normal", "uniform", "probabilities")
INTEGER_KINDS = ("integers", "offsets", "indices", "last_page_len")
KINDS = FLOAT_KINDS + INTEGER_KINDS

REQUIRED = object()  # a key without a default
_KEYS: Dict[str, Dict[str, Any]] = {  # allowed keys and their defaults
    "random": {},
    "normal": {"mean": 0.0, "std": 1.0},
    "uniform": {"low": 0.0, "high": 1.0},
    "probabilities": {"scale": 3.0},
    "integers": {"low": 0, "high": REQUIRED, "multiple_of": 1},
    "offsets": {"total": REQUIRED, "min_segment": 1, "cover": None, "cover_unit": 1, "strict_cover": False},
    "indices": {"high": REQUIRED, "low": 0, "unique": True, "per_row": False, "pad": -1},
    "last_page_len": {"page_size": REQUIRED, "indptr": "kv_indptr", "cover": None},
}
_INPUT_REFS = {"offsets": ("cover",), "last_page_len": ("indptr", "cover")}


class InputSpecError(ValueError):
    """A generator spec that is malformed, or that the workload's axes cannot satisfy."""


def spec_problems(field: str, spec: Any) -> List[str]:
    """Problems of one spec as 'field: message' strings (kind, keys, required values)."""
    if not isinstance(spec, Mapping):
        return [f"{field}: a generator spec must be an object with a 'kind', not {spec!r}"]
    kind = spec.get("kind")
    if kind not in _KEYS:
        return [f"{field}.kind: {kind!r} is not one of {list(KINDS)}"]
    out = []
    allowed = set(_KEYS[kind]) | {"kind"}
    for k in spec:
        if k not in allowed:
            out.append(f"{field}.{k}: unknown key for kind {kind!r} (allowed: {sorted(allowed - {'kind'})})")
    for k, default in _KEYS[kind].items():
        if default is REQUIRED and k not in spec:
            out.append(f"{field}.{k}: required for kind {kind!r}")
    return out


def resolve_input_specs(definition: Definition, layers: Sequence[Optional[Mapping[str, Any]]]) -> Dict[str, Dict[str, Any]]:
    """Input name -> spec, for the definition's inputs that a layer covers (later layers win; in a
    layer an exact name beats a glob). Inputs without a spec are `random`."""
    out: Dict[str, Dict[str, Any]] = {}
    for layer in layers:
        if not layer:
            continue
        globbed = {k: v for k, v in layer.items() if any(c in k for c in "*?[")}
        for name in definition.inputs:
            if name in layer:
                out[name] = dict(layer[name])
            else:
                for pattern, spec in globbed.items():
                    if fnmatch.fnmatchcase(name, pattern):
                        out[name] = dict(spec)
                        break
    return out


def float_params(name: str, spec: Mapping[str, Any], definition: Definition, axes: Mapping[str, int]) -> Dict[str, Any]:
    """A float kind's spec with its expressions (`"1/sqrt(head_dim)"`) evaluated over the axes."""
    values: Dict[str, int] = dict(definition.const_axes)
    values.update({k: int(v) for k, v in axes.items() if k in definition.axes})
    full = _full(spec)
    return {k: (_value(f"inputs.{name}.{k}", v, values) if k != "kind" else v) for k, v in full.items()}


def _full(spec: Mapping[str, Any]) -> Dict[str, Any]:
    d = dict(_KEYS[spec["kind"]])
    d.update(spec)
    return d


def _value(field: str, v: Any, axes: Mapping[str, int]) -> Any:
    if isinstance(v, str):
        try:
            return evaluate(v, axes)
        except ExprError as e:
            raise InputSpecError(f"{field}: {e} in {v!r} (axes: {dict(axes)})") from e
    return v


def _int(field: str, v: Any, axes: Mapping[str, int]) -> int:
    x = _value(field, v, axes)
    if isinstance(x, float) and not x.is_integer():
        raise InputSpecError(f"{field}: {v!r} is {x}, not an integer")
    return int(x)


def _order(specs: Mapping[str, Mapping[str, Any]]) -> List[str]:
    """Integer inputs in an order where each comes after the inputs it refers to."""
    names = [n for n, s in specs.items() if s.get("kind") in INTEGER_KINDS]
    done: List[str] = []
    pending = list(names)
    while pending:
        progressed = False
        for n in list(pending):
            refs = [specs[n].get(k) for k in _INPUT_REFS.get(specs[n]["kind"], ())]
            if all(r is None or r not in names or r in done for r in refs):
                done.append(n)
                pending.remove(n)
                progressed = True
        if not progressed:
            raise InputSpecError(f"inputs {pending}: their generator specs refer to each other in a cycle")
    return done


def rng_for(seed: int, name: str) -> np.random.Generator:
    """One stream per (seed, input), so adding an input does not change the others."""
    h = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


def _split(rng: np.random.Generator, total: int, n: int, minimum: Sequence[int]) -> np.ndarray:
    """n non-negative segment lengths summing to total, each >= minimum[i] (a random composition)."""
    base = np.asarray(minimum, dtype=np.int64)
    rest = total - int(base.sum())
    if n == 0:
        return base
    # a uniformly random composition of `rest` into n parts: sorted cut points
    cuts = np.sort(rng.integers(0, rest + 1, size=n - 1)) if n > 1 else np.zeros(0, dtype=np.int64)
    parts = np.diff(np.concatenate([[0], cuts, [rest]]))
    return base + parts


def _segments(indptr: np.ndarray) -> np.ndarray:
    return np.diff(indptr.astype(np.int64))


def generate_integer_inputs(
    definition: Definition,
    axes: Mapping[str, int],
    specs: Mapping[str, Mapping[str, Any]],
    seed: int,
    given: Optional[Mapping[str, Any]] = None,
    names: Optional[Sequence[str]] = None,
    dry: bool = False,
) -> Dict[str, Any]:
    """The structured integer inputs (numpy arrays, or ints for scalars), drawn from the axes.

    `given` holds inputs the workload supplies (blobs, scalars) that specs may refer to
    (`cover: qo_indptr`); `names` limits which inputs are drawn (with what they refer to).
    `dry` checks that `indices` inputs can be drawn without drawing them (zeros come back):
    validation reads their values in no constraint, and a page table of a million entries costs.
    Raises InputSpecError naming the input and field when the axes cannot satisfy a spec."""
    values: Dict[str, int] = dict(definition.const_axes)
    values.update({k: int(v) for k, v in axes.items() if k in definition.axes})
    shapes = definition.input_shapes_by_name({a: values[a] for a in definition.var_axes})
    known: Dict[str, Any] = {k: np.asarray(v) if hasattr(v, "shape") else v for k, v in (given or {}).items()}
    out: Dict[str, Any] = {}
    wanted = None if names is None else set(names)
    for name in _order(specs):
        if name in known:
            continue
        if wanted is not None and name not in wanted and not _needed_by(name, specs, wanted):
            continue
        spec = _full(specs[name])
        field = f"inputs.{name}"
        tspec = definition.inputs[name]
        dtype = np.dtype(_NP_INT.get(tspec.dtype.value, "int64"))
        shape = shapes[name]
        rng = rng_for(seed, name)
        kind = spec["kind"]
        if kind == "integers":
            lo, hi = _int(f"{field}.low", spec["low"], values), _int(f"{field}.high", spec["high"], values)
            step = max(1, _int(f"{field}.multiple_of", spec["multiple_of"], values))
            lo_k, hi_k = -(-lo // step), hi // step
            if hi_k < lo_k:
                raise InputSpecError(f"{field}: no multiple of {step} in [{lo}, {hi}] (axes {dict(values)})")
            arr = rng.integers(lo_k, hi_k + 1, size=() if shape is None else shape, dtype=np.int64) * step
            v: Any = int(arr) if shape is None else arr.astype(dtype)
        elif kind == "offsets":
            v = _offsets(field, spec, shape, values, known, rng).astype(dtype)
        elif kind == "indices":
            v = _indices(field, spec, shape, values, rng, dry).astype(dtype)
        else:
            v = _last_page_len(field, spec, shape, values, known, rng).astype(dtype)
        known[name] = v
        out[name] = v
    return out


def _needed_by(name: str, specs: Mapping[str, Mapping[str, Any]], wanted: set) -> bool:
    """Is `name` referred to (directly or not) by a wanted input's spec?"""
    seen = set()
    stack = list(wanted)
    while stack:
        n = stack.pop()
        if n in seen or n not in specs:
            continue
        seen.add(n)
        for k in _INPUT_REFS.get(specs[n].get("kind"), ()):
            r = specs[n].get(k)
            if r == name:
                return True
            if r:
                stack.append(r)
    return False


_NP_INT = {"int64": "int64", "int32": "int32", "int16": "int16", "int8": "int8", "bool": "bool"}


def _one_dim(field: str, shape: Optional[Tuple[int, ...]]) -> int:
    if shape is None or len(shape) != 1:
        raise InputSpecError(f"{field}: this kind makes a 1-D tensor, the input's shape is {shape}")
    return shape[0]


def _offsets(field: str, spec: Mapping[str, Any], shape, values, known, rng) -> np.ndarray:
    n = _one_dim(field, shape) - 1
    if n < 0:
        raise InputSpecError(f"{field}: an offsets array needs at least one element")
    total = _int(f"{field}.total", spec["total"], values)
    if total < 0:
        raise InputSpecError(f"{field}.total: {spec['total']!r} is {total} (negative)")
    minimum = np.zeros(n, dtype=np.int64)
    cover = spec.get("cover")
    if cover and cover in known:
        unit = max(1, _int(f"{field}.cover_unit", spec["cover_unit"], values))
        q = _segments(np.asarray(known[cover]))
        if len(q) != n:
            raise InputSpecError(f"{field}.cover: {cover} has {len(q)} segments, this input {n}")
        minimum = -(-q // unit)
        if int(minimum.sum()) > total:
            if spec.get("strict_cover"):
                raise InputSpecError(
                    f"{field}: covering {cover} needs at least {int(minimum.sum())} in total, the axes give "
                    f"{spec['total']}={total} (causal: every request needs as many keys as queries)"
                )
            # the axes cannot cover every request (captured workloads do this too): share the
            # total in proportion to the queries, so each request is covered as far as it goes
            minimum = _proportional(total, minimum)
    seg_min = _int(f"{field}.min_segment", spec["min_segment"], values)
    if n and int(np.maximum(minimum, seg_min).sum()) <= total:
        minimum = np.maximum(minimum, seg_min)
    seg = _split(rng, total, n, minimum)
    return np.concatenate([[0], np.cumsum(seg)])


def _proportional(total: int, weights: np.ndarray) -> np.ndarray:
    """Integers summing to at most `total`, in proportion to `weights` (largest remainders)."""
    w = weights.astype(np.float64)
    if w.sum() <= 0:
        return np.zeros_like(weights)
    exact = w * total / w.sum()
    base = np.floor(exact).astype(np.int64)
    short = total - int(base.sum())
    if short > 0:
        base[np.argsort(-(exact - base))[:short]] += 1
    return base


def _indices(field: str, spec: Mapping[str, Any], shape, values, rng, dry: bool = False) -> np.ndarray:
    if shape is None:
        raise InputSpecError(f"{field}: indices need a tensor input")
    lo = _int(f"{field}.low", spec["low"], values)
    hi = _int(f"{field}.high", spec["high"], values)
    span = hi - lo
    if span <= 0 and math.prod(shape) > 0:
        raise InputSpecError(f"{field}: empty range [{lo}, {hi}) for {math.prod(shape)} indices (axes {dict(values)})")
    pad = _int(f"{field}.pad", spec["pad"], values)
    if dry:
        return np.zeros(shape, dtype=np.int64)
    per_row = spec["per_row"] and len(shape) >= 2
    if not spec["unique"] or (not per_row and math.prod(shape) > span):
        # more indices than the range holds (pages shared between requests, as captured
        # workloads have): repeats, every one still inside the range
        return rng.integers(lo, hi, size=shape, dtype=np.int64)
    if per_row:
        rows, width = math.prod(shape[:-1]), shape[-1]
        out = np.full((rows, width), pad, dtype=np.int64)
        k = min(width, span)
        for r in range(rows):
            out[r, :k] = _distinct(rng, span, k) + lo
        return out.reshape(shape)
    return (_distinct(rng, span, math.prod(shape)) + lo).reshape(shape)


def _distinct(rng: np.random.Generator, span: int, k: int) -> np.ndarray:
    """k distinct integers in [0, span), in random order, without materialising a huge range."""
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    if span <= 4 * k or span <= 1 << 20:
        return rng.permutation(span)[:k].astype(np.int64)
    chosen = np.unique(rng.integers(0, span, size=int(k * 1.2) + 16))
    while len(chosen) < k:
        chosen = np.unique(np.concatenate([chosen, rng.integers(0, span, size=k)]))
    return rng.permutation(chosen)[:k].astype(np.int64)


def _last_page_len(field: str, spec: Mapping[str, Any], shape, values, known, rng) -> np.ndarray:
    n = _one_dim(field, shape)
    ps = _int(f"{field}.page_size", spec["page_size"], values)
    if ps < 1:
        raise InputSpecError(f"{field}.page_size: {ps} < 1")
    lo = np.ones(n, dtype=np.int64)
    pages = None
    indptr = spec.get("indptr")
    if indptr and indptr in known:
        pages = _segments(np.asarray(known[indptr]))
        if len(pages) != n:
            raise InputSpecError(f"{field}.indptr: {indptr} has {len(pages)} segments, this input {n}")
    cover = spec.get("cover")
    if cover and cover in known and pages is not None:
        q = _segments(np.asarray(known[cover]))
        need = q - (pages - 1) * ps  # tokens the last page must hold for kv_len >= q_len
        # a request its pages cannot cover (the axes' total is short) gets full last pages
        lo = np.minimum(np.maximum(lo, need), ps)
    return rng.integers(lo, ps + 1, dtype=np.int64)
