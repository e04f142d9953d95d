"""A quick check of a loaded artifact against its definition's reference, on one small input.

Not the evaluator (that is flashinfer_bench.bench): this is a smoke test for the compile stage's
own checks (the GPU check script, the dataset test). It calls the solution in both calling
conventions and compares each output with the reference's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

import torch

from ..data import Definition, DType
from .runnable import Runnable

_TOL = {DType.FLOAT32: (1e-4, 1e-4), DType.FLOAT16: (1e-2, 1e-2), DType.BFLOAT16: (2e-2, 2e-2)}


@dataclass
class CheckResult:
    ok: bool
    max_abs_error: float = 0.0
    problems: List[str] = field(default_factory=list)


def smallest_workload(traces: Any, definition: Definition) -> Tuple[Dict[str, int], Dict[str, Any]]:
    """(var axes, scalar inputs) of the definition's smallest workload in a TraceSet (all axes 1
    when it has none): the cheapest real input to smoke-test a build with."""
    wls = [t.workload for t in traces.workloads_for(definition.name)]
    if not wls:
        return {a: 1 for a in definition.var_axes}, {}
    w = min(wls, key=lambda w: sum(w.axes.values()))
    scalars = {k: v.value for k, v in w.inputs.items() if getattr(v, "type", "") == "scalar"}
    return dict(w.axes), scalars


def make_inputs(
    definition: Definition,
    var_values: Mapping[str, int],
    scalars: Optional[Mapping[str, Any]] = None,
    device: str = "cpu",
    seed: int = 0,
) -> List[Any]:
    """Inputs for one smoke call: structured integer inputs (offsets, page tables, ...) from the
    op type's generator specs (data/input_specs.py, as the evaluator draws them), probability rows
    and scales of their declared kinds, other floats normal, other integers/bools zero, scalars
    from `scalars` (else 1e-5 / 1)."""
    from ..data.input_specs import INTEGER_KINDS, float_params, generate_integer_inputs
    from ..data.op_types import family_settings

    specs = family_settings(definition)["inputs"]
    drawn = generate_integer_inputs(
        definition, var_values, {n: sp for n, sp in specs.items() if sp["kind"] in INTEGER_KINDS and n not in (scalars or {})}, seed
    )
    gen = torch.Generator(device="cpu").manual_seed(seed)
    shapes = definition.input_shapes_by_name(var_values)
    out: List[Any] = []
    for name, spec in definition.inputs.items():
        shape = shapes[name]
        kind = specs.get(name, {}).get("kind", "random")
        if name in drawn:
            v = drawn[name]
            out.append(v if shape is None else torch.from_numpy(v).to(spec.dtype.to_torch()).to(device))
        elif shape is None:
            default = 1e-5 if spec.dtype.is_float else (False if spec.dtype is DType.BOOL else 1)
            out.append((scalars or {}).get(name, default))
        elif spec.dtype.is_float:
            x = torch.randn(shape, generator=gen)
            if kind != "random":
                prm = float_params(name, specs[name], definition, var_values)
                if kind == "probabilities":
                    x = torch.softmax(x * prm["scale"], dim=-1)
                elif kind == "uniform":
                    x = prm["low"] + (prm["high"] - prm["low"]) * torch.rand(shape, generator=gen)
                else:
                    x = prm["mean"] + prm["std"] * x
            out.append(x.to(spec.dtype.to_torch()).to(device))
        else:
            out.append(torch.zeros(shape, dtype=spec.dtype.to_torch(), device=device))
    return out


def reference_outputs(definition: Definition, inputs: List[Any]) -> List[Any]:
    ns: Dict[str, Any] = {}
    exec(compile(definition.reference, f"<reference of {definition.name}>", "exec"), ns)  # noqa: S102
    ret = ns["run"](*inputs)
    if isinstance(ret, dict):
        return [ret[n] for n in definition.outputs]
    return list(ret) if isinstance(ret, (tuple, list)) else [ret]


def check_against_reference(
    runnable: Runnable,
    definition: Definition,
    var_values: Mapping[str, int],
    scalars: Optional[Mapping[str, Any]] = None,
    device: str = "cpu",
) -> CheckResult:
    from ..data.op_types import family_settings

    inputs = make_inputs(definition, var_values, scalars, device)
    expected = reference_outputs(definition, inputs)
    # samplers never agree elementwise: the smoke check compares shape and dtype only (the
    # evaluator's statistical check judges them)
    by_value = (family_settings(definition)["check"] or {}).get("kind", "elementwise") != "sampling"
    res = CheckResult(ok=True)
    got_vr = runnable.call_value_returning(*inputs)
    outs = runnable.allocate_outputs(inputs)
    for o in outs:  # poison, so a DPS entry that writes nothing is caught
        o.fill_(float("nan") if o.is_floating_point() else 0)
    runnable.call_dps(*inputs, *outs)
    for how, got in (("value-returning", got_vr), ("dps", outs)):
        for name, g, e in zip(definition.outputs, got, expected):
            spec = definition.outputs[name]
            if not isinstance(g, torch.Tensor):
                res.problems.append(f"{how}: output {name!r} is {type(g).__name__}")
                continue
            if tuple(g.shape) != tuple(e.shape) or g.dtype != e.dtype:
                res.problems.append(f"{how}: output {name!r} is {tuple(g.shape)} {g.dtype}, expected {tuple(e.shape)} {e.dtype}")
                continue
            if not by_value:
                continue
            atol, rtol = _TOL.get(spec.dtype, (1e-2, 1e-2))
            if definition.tolerance is not None:
                atol = definition.tolerance.atol if definition.tolerance.atol is not None else atol
                rtol = definition.tolerance.rtol if definition.tolerance.rtol is not None else rtol
            diff = (g.float() - e.float()).abs()
            err = float(diff.max()) if diff.numel() else 0.0
            res.max_abs_error = max(res.max_abs_error, err if err == err else float("inf"))
            if not torch.allclose(g.float(), e.float(), atol=atol, rtol=rtol):
                res.problems.append(f"{how}: output {name!r} differs from the reference (max abs error {err:.3g})")
    res.ok = not res.problems
    return res
