"""Is a solution's output right? Structure first, then numerics, in upstream's status order.

Element rule (torch.allclose's): an element fails iff |out - ref| > atol + rtol * |ref|.
We chose this OR-form over upstream's AND-form (`abs > atol and rel > rtol`) because it is the
one PyTorch users know and it is never looser than a plain absolute or relative bound alone.
Non-finite values must match exactly (NaN where the reference has NaN, same-signed inf); NaN in
the reference is never a wildcard for a finite output... nor the other way round.

Scale guard: besides the element rule, the relative L2 error ||out - ref|| / ||ref|| must not
exceed max(rtol, 1e-3). A solution returning zeros or a constant then fails even where every
reference value is below atol. A reference whose max |value| is under 10 * atol is marked
`low_signal` (the element rule alone says little there).

Tolerances per output dtype by default, overridden by the definition's `tolerance`, then by the
evaluation config's rtol/atol.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from ..data import Definition, DType

# (atol, rtol) by output dtype
DEFAULT_TOLERANCES: Dict[DType, Tuple[float, float]] = {
    DType.FLOAT32: (1e-4, 1e-4),
    DType.FLOAT16: (1e-3, 1e-2),
    DType.BFLOAT16: (1e-2, 1.6e-2),
    DType.FLOAT8_E4M3FN: (1e-2, 0.25),
    DType.FLOAT8_E5M2: (2e-2, 0.5),
    DType.FLOAT4_E2M1: (0.5, 0.5),
    DType.INT64: (0.0, 0.0),
    DType.INT32: (0.0, 0.0),
    DType.INT16: (0.0, 0.0),
    DType.INT8: (0.0, 0.0),
    DType.BOOL: (0.0, 0.0),
}
L2_FLOOR = 1e-3
_CHUNK = 1 << 24  # elements compared at a time, to bound temporary memory


def tolerance_for(
    definition: Definition, output: str, rtol: Optional[float], atol: Optional[float],
    family: Optional[Dict[str, float]] = None,
) -> Tuple[float, float]:
    """(atol, rtol) for one output: dtype default < the op type's (`family`, data/op_types.py)
    < definition.tolerance < config."""
    d_atol, d_rtol = DEFAULT_TOLERANCES.get(definition.outputs[output].dtype, (1e-2, 1e-2))
    if family and not is_exact(definition.outputs[output].dtype.to_torch()):
        d_atol = family.get("atol", d_atol)
        d_rtol = family.get("rtol", d_rtol)
    tol = definition.tolerance
    if tol is not None:
        d_atol = tol.atol if tol.atol is not None else d_atol
        d_rtol = tol.rtol if tol.rtol is not None else d_rtol
    return (atol if atol is not None else d_atol, rtol if rtol is not None else d_rtol)


def is_exact(dtype: torch.dtype) -> bool:
    return not dtype.is_floating_point


@dataclass
class OutputCheck:
    """Numerical comparison of one output against the reference."""

    name: str
    ok: bool
    reason: str = ""
    max_abs: float = 0.0
    max_rel: float = 0.0
    rel_l2: float = 0.0
    n_bad: int = 0
    numel: int = 0
    nonfinite_mismatch: int = 0
    low_signal: bool = False
    atol: float = 0.0
    rtol: float = 0.0

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def _flat(t: torch.Tensor) -> torch.Tensor:
    return t.detach().reshape(-1)


def compare(name: str, out: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> OutputCheck:
    """Full comparison (synchronises). `out` and `ref` have the same shape (checked before)."""
    o_all, r_all = _flat(out), _flat(ref)
    n = o_all.numel()
    res = OutputCheck(name=name, ok=True, numel=n, atol=atol, rtol=rtol)
    if n == 0:
        return res
    exact = is_exact(out.dtype) and is_exact(ref.dtype)
    max_abs = 0.0
    max_rel = 0.0
    err2 = 0.0
    ref2 = 0.0
    ref_max = 0.0
    n_bad = 0
    nonfinite = 0
    for s in range(0, n, _CHUNK):
        o = o_all[s : s + _CHUNK]
        r = r_all[s : s + _CHUNK]
        if exact:
            bad = o != r
            n_bad += int(bad.sum())
            d = (o.double() - r.double()).abs()
            max_abs = max(max_abs, float(d.max()))
            max_rel = max(max_rel, float((d / (r.double().abs() + 1e-8)).max()))
            ref_max = max(ref_max, float(r.double().abs().max()))
            continue
        of, rf = o.float(), r.float()
        fin_o, fin_r = torch.isfinite(of), torch.isfinite(rf)
        both = fin_o & fin_r
        same_nonfinite = (~fin_r) & ((of == rf) | (torch.isnan(of) & torch.isnan(rf)))
        nonfinite += int((fin_r & ~fin_o).sum()) + int((~fin_r & ~same_nonfinite).sum())
        d = torch.where(both, (of - rf).abs(), torch.zeros_like(of))
        rabs = torch.where(both, rf.abs(), torch.zeros_like(rf))
        bad = both & (d > atol + rtol * rabs)
        n_bad += int(bad.sum())
        if bool(both.any()):
            max_abs = max(max_abs, float(d.max()))
            max_rel = max(max_rel, float((d / (rabs + 1e-8)).max()))
            ref_max = max(ref_max, float(rabs.max()))
            err2 += float(d.double().pow(2).sum())
            ref2 += float(rabs.double().pow(2).sum())
    res.n_bad = n_bad + nonfinite
    res.nonfinite_mismatch = nonfinite
    res.rel_l2 = math.sqrt(err2 / ref2) if ref2 > 0 else (0.0 if err2 == 0 else math.inf)
    res.low_signal = (not exact) and ref_max < 10 * atol
    if nonfinite:
        res.ok = False
        res.max_abs = math.inf
        res.max_rel = math.inf
        res.reason = (
            f"output {name!r}: {nonfinite} of {n} elements are non-finite where the reference is "
            f"finite or differ from a non-finite reference (unwritten elements stay NaN-poisoned)"
        )
        return res
    res.max_abs, res.max_rel = max_abs, max_rel
    if n_bad:
        res.ok = False
        rule = "exact match required" if exact else f"|out-ref| > {atol:g} + {rtol:g}*|ref|"
        res.reason = f"output {name!r}: {n_bad} of {n} elements fail ({rule}); max abs error {max_abs:.3g}, max rel error {max_rel:.3g}"
        return res
    l2_tol = max(rtol, L2_FLOOR)
    if not exact and res.rel_l2 > l2_tol:
        res.ok = False
        res.reason = (
            f"output {name!r}: relative L2 error {res.rel_l2:.3g} exceeds {l2_tol:g} "
            f"(scale guard: every element is within tolerance but the output does not track the reference)"
        )
    return res


def mismatch_count(out: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
    """Device-side count of failing elements (no synchronisation): for checking timed calls."""
    o, r = _flat(out), _flat(ref)
    if o.shape != r.shape or o.dtype != out.dtype:
        return torch.ones((), dtype=torch.int64, device=ref.device)
    if is_exact(out.dtype):
        return (o != r).sum()
    of, rf = o.float(), r.float()
    ok = ((of - rf).abs() <= atol + rtol * rf.abs()) | (of == rf) | (torch.isnan(of) & torch.isnan(rf))
    return (~ok).sum()


def error_maxima(outs: Sequence[torch.Tensor], refs: Sequence[torch.Tensor]) -> torch.Tensor:
    """Device-side [max |out - ref|, max |out - ref| / (|ref| + 1e-8)] over the elements finite
    in both, all outputs together (no synchronisation): the figures `compare` records, for the
    witness, which reports them from a process the solution cannot reach."""
    dev = next((r.device for r in refs if isinstance(r, torch.Tensor)), torch.device("cpu"))
    acc = torch.zeros(2, dtype=torch.float64, device=dev)
    for out, ref in zip(outs, refs):
        o, r = _flat(out), _flat(ref)
        if o.numel() == 0 or o.shape != r.shape:
            continue
        wide = torch.float64 if (is_exact(out.dtype) or out.dtype == torch.float64) else torch.float32
        of, rf = o.to(wide), r.to(dev).to(wide)
        # where either side is not finite the difference is inf or NaN: counted as 0 here (whether
        # non-finite values match is the check's business); 0 / inf and 0 / NaN likewise
        d = torch.nan_to_num((of - rf).abs_(), nan=0.0, posinf=0.0)
        rel = torch.nan_to_num(d / (rf.abs() + 1e-8), nan=0.0, posinf=0.0)  # rf may be the reference itself
        acc = torch.maximum(acc, torch.stack([d.max(), rel.max()]).to(torch.float64))
    return acc


@dataclass
class StructureProblem:
    status: str  # INCORRECT_SHAPE | INCORRECT_DTYPE | RUNTIME_ERROR
    message: str


def normalize_outputs(result: Any, names: Sequence[str]) -> Tuple[Optional[List[Any]], Optional[StructureProblem]]:
    """A value-returning call's result (tensor, tuple/list in output order, or dict by name) as a list."""
    if isinstance(result, dict):
        missing = [n for n in names if n not in result]
        if missing:
            return None, StructureProblem("INCORRECT_SHAPE", f"the returned dict lacks outputs {missing}")
        return [result[n] for n in names], None
    if isinstance(result, (tuple, list)):
        items = list(result)
    elif result is None and names:
        return None, StructureProblem(
            "INCORRECT_SHAPE",
            "the solution returned None (a solution that writes into its outputs needs destination_passing_style: true)",
        )
    else:
        items = [result]
    if len(items) != len(names):
        return None, StructureProblem(
            "INCORRECT_SHAPE", f"the solution returned {len(items)} outputs, the definition has {len(names)} {tuple(names)}"
        )
    return items, None


def check_structure(
    outputs: Sequence[Any],
    definition: Definition,
    shapes: Dict[str, Optional[Tuple[int, ...]]],
    device: torch.device,
) -> Optional[StructureProblem]:
    """Count, type, device, shape and dtype of every output; the first problem in upstream's order."""
    names = list(definition.outputs)
    if len(outputs) != len(names):  # a pairing by zip would check none of a missing output
        return StructureProblem("INCORRECT_SHAPE", f"{len(outputs)} output(s), the definition has {len(names)}")
    for name, o in zip(names, outputs):
        if type(o) is not torch.Tensor:
            if isinstance(o, torch.Tensor):
                return StructureProblem(
                    "RUNTIME_ERROR",
                    f"output {name!r} is a {type(o).__module__}.{type(o).__name__}, a torch.Tensor subclass: "
                    f"outputs must be plain tensors with their values computed (no lazy or deferred results)",
                )
            if shapes[name] is None and isinstance(o, (int, float, bool)):
                continue
            return StructureProblem("INCORRECT_SHAPE", f"output {name!r} is a {type(o).__name__}, not a tensor")
        if o.layout != torch.strided or o.is_meta:
            return StructureProblem("RUNTIME_ERROR", f"output {name!r} has layout {o.layout} (meta={o.is_meta}); a dense tensor is required")
        if o.device.type != device.type:
            return StructureProblem("RUNTIME_ERROR", f"output {name!r} is on {o.device}, the evaluation runs on {device}")
    for name, o in zip(names, outputs):
        want = shapes[name] if shapes[name] is not None else ()
        got = tuple(o.shape) if isinstance(o, torch.Tensor) else ()
        if got != tuple(want):
            return StructureProblem("INCORRECT_SHAPE", f"output {name!r} has shape {got}, expected {tuple(want)}")
    for name, o in zip(names, outputs):
        if not isinstance(o, torch.Tensor):
            continue
        want_dt = definition.outputs[name].dtype.to_torch()
        if o.dtype != want_dt:
            return StructureProblem("INCORRECT_DTYPE", f"output {name!r} has dtype {o.dtype}, expected {want_dt}")
    return None


@dataclass
class TrialSummary:
    """Maxima over outputs and trials (what upstream records) and our extra figures."""

    max_abs: float = 0.0
    max_rel: float = 0.0
    rel_l2: float = 0.0
    low_signal: List[str] = field(default_factory=list)

    def add(self, c: OutputCheck) -> None:
        self.max_abs = max(self.max_abs, c.max_abs)
        self.max_rel = max(self.max_rel, c.max_rel)
        self.rel_l2 = max(self.rel_l2, c.rel_l2)
        if c.low_signal and c.name not in self.low_signal:
            self.low_signal.append(c.name)
