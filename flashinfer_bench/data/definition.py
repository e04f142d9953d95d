"""Definition: what a kernel computes (axes, tensors, a PyTorch reference)."""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Annotated, Any, Dict, Iterable, List, Literal, Mapping, Optional, Sequence, Tuple, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from .dtypes import DType
from .expr import ExprError, NeedsValues, ShapeOnly, describe_values
from .expr import evaluate as expr_evaluate
from .expr import names_in as expr_names
from .expr import truth as expr_truth
from .fields import INT64_MAX, Float, Int, NameStr
from .io import FieldErrors

# A workload larger than this many elements in one tensor is refused: it cannot be allocated on
# any current GPU and usually means a typo in an axis value.
MAX_TENSOR_ELEMENTS = 1 << 36


class ShapeError(ValueError):
    """Input shapes that do not fit a definition (inconsistent or missing axes)."""


class AxisConst(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["const"] = "const"
    value: Int = Field(ge=0, le=INT64_MAX)
    description: Optional[str] = None


class AxisVar(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["var"] = "var"
    description: Optional[str] = None


def _axis_tag(v: Any) -> Optional[str]:
    """The axis kind; FlashInfer-Bench 0.1.2 writes definitions with exclude_unset, so an axis
    may lack "type": then a "value" means const, as upstream's smart union decides."""
    if isinstance(v, dict):
        t = v.get("type")
        if t is None:
            return "const" if "value" in v else "var"
        return t if isinstance(t, str) else None
    return getattr(v, "type", None)


Axis = Annotated[
    Union[Annotated[AxisConst, Tag("const")], Annotated[AxisVar, Tag("var")]],
    Discriminator(
        _axis_tag,
        custom_error_type="axis_type",
        custom_error_message="axis 'type' must be 'const' (with a 'value') or 'var'",
    ),
]


class TensorSpec(BaseModel):
    """shape None means a Python scalar; [] a 0-d tensor."""

    model_config = ConfigDict(extra="allow")
    shape: Optional[List[str]]
    dtype: DType
    description: Optional[str] = None


class Tolerance(BaseModel):
    """Per-definition override of the evaluator's dtype tolerances (our extension)."""

    model_config = ConfigDict(extra="allow")  # unknown keys are warnings, as everywhere
    atol: Optional[Float] = Field(default=None, ge=0, allow_inf_nan=False)
    rtol: Optional[Float] = Field(default=None, ge=0, allow_inf_nan=False)


class Definition(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: NameStr = Field(min_length=1)
    op_type: NameStr = Field(min_length=1)
    axes: Dict[str, Axis]
    inputs: Dict[str, TensorSpec]
    outputs: Dict[str, TensorSpec]
    reference: str = Field(min_length=1)
    tags: List[str] = Field(default_factory=list)
    description: Optional[str] = None
    constraints: List[str] = Field(default_factory=list)
    # Our extensions; FlashInfer-Bench 0.1.2 ignores unknown fields when loading.
    flops: Optional[str] = None
    tolerance: Optional[Tolerance] = None

    @model_validator(mode="after")
    def _check(self) -> "Definition":
        items = self.problem_items(strict=False)
        if items:
            raise FieldErrors(items)
        return self

    def problems(self, strict: bool = True) -> List[str]:
        """Problems as 'field: message' strings (empty when the definition is sound).

        strict=False keeps to what FlashInfer-Bench 0.1.2 itself rejects, so its datasets load;
        strict=True adds our checks (reference signature, names in constraints) for `validate`.
        """
        return [f"{f}: {m}" for f, m in self.problem_items(strict)]

    def problem_items(self, strict: bool = True) -> List[Tuple[str, str]]:
        """Like `problems`, as (field path, message) pairs."""
        out: List[Tuple[str, str]] = []
        overlap = [n for n in self.outputs if n in self.inputs]
        if overlap:
            out.append(("outputs", f"names also used as inputs: {overlap}"))
        if strict and not self.outputs:
            out.append(("outputs", "no outputs: there is nothing to check a solution against"))
        if strict:
            for ax, a in self.axes.items():
                if isinstance(a, AxisConst) and a.value == 0:
                    used = [n for n, t in {**self.inputs, **self.outputs}.items() if ax in (t.shape or [])]
                    out.append((f"axes.{ax}.value", "0: every tensor it shapes would be empty"
                                + (f" ({', '.join(used)})" if used else "")))
        for group, specs in (("inputs", self.inputs), ("outputs", self.outputs)):
            for tname, spec in specs.items():
                for i, ax in enumerate(spec.shape or []):
                    if ax not in self.axes:
                        out.append((f"{group}.{tname}.shape[{i}]", f"unknown axis {ax!r}"))
        try:
            tree = ast.parse(self.reference)
        except SyntaxError as e:
            out.append(("reference", f"syntax error{f' at line {e.lineno}' if e.lineno else ''}: {e.msg}"))
        except (RecursionError, MemoryError) as e:  # the parser's limits on nesting
            out.append(("reference", f"cannot be parsed: nested too deeply ({type(e).__name__})"))
        except UnicodeError:  # a lone surrogate (JSON allows "\ud800")
            out.append(("reference", "not UTF-8 text (a lone surrogate)"))
        else:
            runs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run"]
            if not runs:
                out.append(("reference", "no top-level 'def run(...)'"))
            elif strict:
                params = [a.arg for a in runs[0].args.posonlyargs + runs[0].args.args]
                if params != list(self.inputs):
                    out.append((
                        "reference",
                        f"run({', '.join(params)}) must take the inputs in order "
                        f"({', '.join(self.inputs)})",
                    ))
        for i, expr in enumerate(self.constraints):
            try:
                ast.parse(expr, mode="eval")
            except SyntaxError as e:  # the one constraint check FlashInfer-Bench 0.1.2 makes
                out.append((f"constraints[{i}]", f"not an expression: {e.msg}: {expr[:200]!r}"))
            except (RecursionError, MemoryError):
                out.append((f"constraints[{i}]", f"not an expression: nested too deeply: {expr[:200]!r}"))
        if self.flops is not None:
            try:
                names = expr_names(self.flops)
            except ExprError as e:
                out.append(("flops", f"{e} in {self.flops[:200]!r}"))
            else:
                unknown = sorted(names - set(self.axes))
                if unknown:
                    out.append(("flops", f"names {unknown} in {self.flops!r} are not axes"))
        return out

    # ----- axes -----
    @property
    def const_axes(self) -> Dict[str, int]:
        return {k: a.value for k, a in self.axes.items() if isinstance(a, AxisConst)}

    @property
    def var_axes(self) -> List[str]:
        return [k for k, a in self.axes.items() if isinstance(a, AxisVar)]

    @property
    def input_names(self) -> List[str]:
        return list(self.inputs)

    @property
    def output_names(self) -> List[str]:
        return list(self.outputs)

    def bind_axes(
        self, input_shapes: Mapping[str, Optional[Sequence[int]]], require_all: bool = True
    ) -> Dict[str, int]:
        """Var-axis values from concrete input shapes; raises ShapeError on any mismatch.

        require_all=False skips inputs not given (FlashInfer-Bench 0.1.2's `get_axes_values`
        accepts a prefix of the inputs); every var axis must still be bound."""
        bound: Dict[str, int] = {}
        consts = self.const_axes
        for tname, spec in self.inputs.items():
            if spec.shape is None:
                continue
            if tname not in input_shapes:
                if not require_all:
                    continue
                raise ShapeError(f"{self.name}: missing input {tname!r}")
            shape = input_shapes[tname]
            if shape is None or len(shape) != len(spec.shape):
                raise ShapeError(
                    f"{self.name}: input {tname!r} has shape {None if shape is None else tuple(shape)}, "
                    f"expected rank {len(spec.shape)} {tuple(spec.shape)}"
                )
            for ax, dim in zip(spec.shape, shape):
                dim = int(dim)
                if ax in consts and consts[ax] != dim:
                    raise ShapeError(
                        f"{self.name}: input {tname!r} axis {ax!r} is {dim}, the definition fixes {consts[ax]}"
                    )
                if ax in bound and bound[ax] != dim:
                    raise ShapeError(
                        f"{self.name}: axis {ax!r} is {bound[ax]} in one input and {dim} in {tname!r}"
                    )
                if ax not in consts:
                    bound[ax] = dim
        missing = [a for a in self.var_axes if a not in bound]
        if missing:
            raise ShapeError(f"{self.name}: var axes {missing} are not carried by any input")
        return bound

    def axis_values(self, var_values: Mapping[str, int]) -> Dict[str, int]:
        values = dict(self.const_axes)
        for ax in self.var_axes:
            if ax not in var_values:
                raise ShapeError(f"{self.name}: missing var axis {ax!r}")
            values[ax] = int(var_values[ax])
        return values

    def _shapes(self, specs: Dict[str, TensorSpec], var_values: Mapping[str, int]):
        values = self.axis_values(var_values)
        return {
            n: (None if s.shape is None else tuple(values[a] for a in s.shape))
            for n, s in specs.items()
        }

    def input_shapes_by_name(self, var_values: Mapping[str, int]) -> Dict[str, Optional[Tuple[int, ...]]]:
        """Concrete input shapes by input name (None for a scalar): the form our code reads."""
        return self._shapes(self.inputs, var_values)

    def output_shapes_by_name(self, var_values: Mapping[str, int]) -> Dict[str, Optional[Tuple[int, ...]]]:
        """Concrete output shapes by output name (None for a scalar)."""
        return self._shapes(self.outputs, var_values)

    # ----- FlashInfer-Bench 0.1.2's shape API (positional, in the definition's order) -----
    def get_input_shapes(self, var_axes_values: Optional[Mapping[str, int]] = None) -> List[Optional[List[int]]]:
        """One shape per input in order, each a list (None for a scalar), as 0.1.2 returns them.

        A missing var axis raises ShapeError (a ValueError, as in 0.1.2)."""
        return [None if s is None else list(s) for s in self._shapes(self.inputs, var_axes_values or {}).values()]

    def get_output_shapes(self, var_values: Optional[Mapping[str, int]] = None) -> List[Optional[List[int]]]:
        """One shape per output in order, each a list (None for a scalar)."""
        return [None if s is None else list(s) for s in self._shapes(self.outputs, var_values or {}).values()]

    def get_axes_values(self, input_shapes: Iterable[Optional[Sequence[int]]]) -> Dict[str, int]:
        """Var-axis values from input shapes given in input order (0.1.2's API over `bind_axes`).

        Shapes may stop early; scalars' entries are ignored. Raises ShapeError (a ValueError)
        when ranks, shared axes or const axes disagree, or a var axis stays unbound."""
        shapes = dict(zip(self.inputs, input_shapes))
        return self.bind_axes(shapes, require_all=False)

    def get_axes_values_from_inputs(self, inputs: Iterable[Any]) -> Dict[str, int]:
        """Var-axis values from the input values themselves (anything with a `.shape`)."""
        return self.get_axes_values(
            [tuple(v.shape) if hasattr(v, "shape") else None for v in inputs]
        )

    @property
    def var_axes_bindings(self) -> Dict[str, Tuple[str, int]]:
        """Where each var axis is read: (first input carrying it, dimension index)."""
        out: Dict[str, Tuple[str, int]] = {}
        var = set(self.var_axes)
        for tname, spec in self.inputs.items():
            for i, ax in enumerate(spec.shape or []):
                if ax in var and ax not in out:
                    out[ax] = (tname, i)
        return out

    @property
    def torch_input_dtypes(self) -> List[Any]:
        """torch dtypes of the inputs, in order (imports torch)."""
        return [s.dtype.to_torch() for s in self.inputs.values()]

    @property
    def torch_output_dtypes(self) -> List[Any]:
        """torch dtypes of the outputs, in order (imports torch)."""
        return [s.dtype.to_torch() for s in self.outputs.values()]

    def bytes_moved(self, var_values: Mapping[str, int]) -> int:
        """Fewest bytes one call must move: every tensor input read once, every output written once."""
        total_bits = 0
        for specs, shapes in (
            (self.inputs, self.input_shapes_by_name(var_values)),
            (self.outputs, self.output_shapes_by_name(var_values)),
        ):
            for n, shape in shapes.items():
                if shape is None:
                    continue
                total_bits += math.prod(shape) * specs[n].dtype.bits
        return total_bits // 8

    def flop_count(self, var_values: Mapping[str, int]) -> Optional[float]:
        expr = self.flops
        if expr is None:
            for tag in self.tags:
                if tag.startswith("flops:"):
                    expr = tag.split(":", 1)[1]
                    break
        if expr is None:
            return None
        v = safe_eval(expr, self.axis_values(var_values))
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ExprError(f"gives a {type(v).__name__}, not a number")
        try:
            f = float(v)
        except OverflowError as e:
            raise ExprError("gives a number too large for a float") from e
        if not math.isfinite(f) or f < 0:
            raise ExprError(f"gives {f}, not a finite non-negative number")
        return f

    def constraint_findings(self) -> List[Tuple[str, str]]:
        """Constraints we cannot interpret or that read unknown names, as (field, message) warnings.

        FlashInfer-Bench 0.1.2 only checks their syntax, so these never drop a definition; they
        are reported once and skipped when workloads are checked."""
        out: List[Tuple[str, str]] = []
        known = set(self.axes) | set(self.inputs)
        for i, expr in enumerate(self.constraints):
            try:
                names = expr_names(expr)
            except ExprError as e:
                out.append((f"constraints[{i}]", f"cannot be checked: {e} in {expr[:200]!r}"))
                continue
            unknown = sorted(names - known)
            if unknown:
                out.append((f"constraints[{i}]", f"cannot be checked: {unknown} in {expr!r} are neither axes nor inputs"))
        return out

    def check_constraints(self, axis_values: Mapping[str, int], inputs: Optional[Mapping[str, Any]] = None) -> List[str]:
        """The constraints that do not hold (each as its text and the values it read).

        Inputs not given are known by their shape only; a constraint that reads their values is
        left for `constraint_report` with the actual inputs (see `deferred`)."""
        return [f.message for f in self.constraint_report(axis_values, inputs).failed]

    def constraint_report(self, axis_values: Mapping[str, int], inputs: Optional[Mapping[str, Any]] = None) -> "ConstraintReport":
        """Evaluate every interpretable constraint over the axes and the inputs (tensors, arrays, or
        shape-only stand-ins for those not given)."""
        values: Dict[str, Any] = dict(self.const_axes)
        values.update({k: int(v) for k, v in axis_values.items() if k in self.axes})
        names: Dict[str, Any] = dict(values)
        shapes: Dict[str, Optional[Tuple[int, ...]]] = {}
        if all(a in values for a in self.var_axes):
            shapes = self.input_shapes_by_name({a: values[a] for a in self.var_axes})
        for n, spec in self.inputs.items():
            if inputs is not None and n in inputs:
                names[n] = inputs[n]
            elif shapes.get(n) is not None:
                names[n] = ShapeOnly(n, shapes[n], spec.dtype.value)
        report = ConstraintReport()
        skip = {f for f, _ in self.constraint_findings()}
        for i, expr in enumerate(self.constraints):
            if f"constraints[{i}]" in skip:
                continue
            try:
                ok = expr_truth(expr, names)
            except NeedsValues as e:
                report.deferred.append((i, expr, e.name))
                continue
            except ExprError as e:
                report.failed.append(ConstraintFailure(i, expr, f"{expr} ({e}; {describe_values(expr, names)})"))
                continue
            if not ok:
                report.failed.append(ConstraintFailure(i, expr, f"{expr} (with {describe_values(expr, names)})"))
        return report

    def max_tensor_elements(self, var_values: Mapping[str, int]) -> int:
        shapes = list(self.input_shapes_by_name(var_values).values()) + list(
            self.output_shapes_by_name(var_values).values()
        )
        return max((math.prod(s) for s in shapes if s is not None), default=0)


@dataclass
class ConstraintFailure:
    index: int          # position in `constraints`
    expr: str
    message: str        # the expression and the values it read


@dataclass
class ConstraintReport:
    failed: List[ConstraintFailure] = field(default_factory=list)
    deferred: List[Tuple[int, str, str]] = field(default_factory=list)  # (index, expr, input whose values it needs)


def safe_eval(expr: str, names: Mapping[str, Any]) -> Any:
    """Evaluate a dataset expression (axes arithmetic, tensor shapes/values) with `expr.evaluate`."""
    return expr_evaluate(expr, names)
