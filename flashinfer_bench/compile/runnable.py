"""Runnable: a loaded entry function that can be called in either calling convention.

A solution is natively destination-passing (outputs passed after the inputs, returns nothing) or
value-returning (returns a tensor, a tuple/list in output order, or a dict by output name).
`call_value_returning` and `call_dps` adapt one to the other:
- value-returning call of a DPS entry: outputs are allocated from the definition's output
  shapes/dtypes (var axes bound from the input shapes) on the first tensor input's device;
- DPS call of a value-returning entry: results are checked (count, shape, dtype: a mismatch
  raises OutputMismatch instead of letting copy_ broadcast or cast) and copied into the outputs.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from ..data import Definition


class LoadError(RuntimeError):
    """An artifact cannot be loaded in this process (missing, failed build, needs a GPU...)."""


class OutputMismatch(ValueError):
    """A value-returning solution returned the wrong number, type, shape or dtype of outputs.

    `kind` is 'count', 'type', 'shape' or 'dtype' (the evaluator maps shape/dtype to
    INCORRECT_SHAPE / INCORRECT_DTYPE).
    """

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def _as_torch(x: Any) -> Any:
    if isinstance(x, torch.Tensor) or not hasattr(x, "__dlpack__"):
        return x
    return torch.from_dlpack(x)  # tvm-ffi and other DLPack tensors


class Runnable:
    def __init__(
        self,
        fn: Callable[..., Any],
        definition: Definition,
        dps: bool,
        *,
        language: str = "",
        artifact_dir: Optional[Path] = None,
        manifest: Optional[Dict[str, Any]] = None,
        before_call: Optional[Callable[[], None]] = None,
    ):
        self.fn = fn
        self.definition = definition
        self._dps = bool(dps)
        self.language = language
        self.artifact_dir = artifact_dir
        self.manifest = manifest or {}
        self._before = before_call
        self._inputs = definition.input_names
        self._outputs = definition.output_names
        self._n_in = len(self._inputs)
        self._n_out = len(self._outputs)
        self._alloc_cache: Dict[Tuple[Any, ...], List[Tuple[Tuple[int, ...], torch.dtype]]] = {}

    @property
    def dps(self) -> bool:
        """True when the entry natively takes its outputs as trailing arguments."""
        return self._dps

    def __call__(self, *args: Any) -> Any:
        """Call the entry in its native convention."""
        if self._before is not None:
            self._before()
        return self.fn(*args)

    # ----- the two conventions -----
    def call_value_returning(self, *inputs: Any) -> Tuple[Any, ...]:
        if len(inputs) != self._n_in:
            raise TypeError(
                f"{self.definition.name}: expected {self._n_in} inputs {tuple(self._inputs)}, got {len(inputs)}"
            )
        if self._before is not None:
            self._before()
        if self._dps:
            outs = self.allocate_outputs(inputs)
            self.fn(*inputs, *outs)
            return tuple(outs)
        return self.normalize(self.fn(*inputs))

    def call_dps(self, *args: Any) -> None:
        if len(args) != self._n_in + self._n_out:
            raise TypeError(
                f"{self.definition.name}: expected {self._n_in} inputs {tuple(self._inputs)} then "
                f"{self._n_out} outputs {tuple(self._outputs)}, got {len(args)} arguments"
            )
        if self._before is not None:
            self._before()
        if self._dps:
            self.fn(*args)
            return None
        results = self.normalize(self.fn(*args[: self._n_in]))
        for name, dst, res in zip(self._outputs, args[self._n_in:], results):
            if not isinstance(res, torch.Tensor):
                raise OutputMismatch("type", f"output {name!r}: the solution returned {type(res).__name__}, not a tensor")
            if res.shape != dst.shape:
                raise OutputMismatch(
                    "shape", f"output {name!r}: the solution returned shape {tuple(res.shape)}, expected {tuple(dst.shape)}"
                )
            if res.dtype != dst.dtype:
                raise OutputMismatch(
                    "dtype", f"output {name!r}: the solution returned {res.dtype}, expected {dst.dtype}"
                )
            if res.data_ptr() != dst.data_ptr():
                dst.copy_(res)
        return None

    # ----- helpers -----
    def normalize(self, ret: Any) -> Tuple[Any, ...]:
        """A value-returning entry's result as a tuple in the definition's output order."""
        if isinstance(ret, dict):
            missing = [n for n in self._outputs if n not in ret]
            if missing:
                raise OutputMismatch("count", f"the returned dict lacks outputs {missing} (has {sorted(ret)})")
            return tuple(_as_torch(ret[n]) for n in self._outputs)
        if isinstance(ret, (tuple, list)):
            if len(ret) != self._n_out:
                raise OutputMismatch(
                    "count", f"the solution returned {len(ret)} values, the definition has {self._n_out} outputs {tuple(self._outputs)}"
                )
            return tuple(_as_torch(r) for r in ret)
        if ret is None and self._n_out:
            raise OutputMismatch(
                "count", "the solution returned None (if it writes into its outputs, set destination_passing_style to true)"
            )
        if self._n_out != 1:
            raise OutputMismatch(
                "count", f"the solution returned one value, the definition has {self._n_out} outputs {tuple(self._outputs)}"
            )
        return (_as_torch(ret),)

    def output_specs(self, inputs: Sequence[Any]) -> List[Tuple[Tuple[int, ...], torch.dtype]]:
        """(shape, dtype) of every output for these inputs."""
        key = tuple(tuple(x.shape) if isinstance(x, torch.Tensor) else None for x in inputs)
        specs = self._alloc_cache.get(key)
        if specs is None:
            shapes = {n: s for n, s in zip(self._inputs, key) if s is not None}
            var = self.definition.bind_axes(shapes)
            out_shapes = self.definition.output_shapes_by_name(var)
            specs = []
            for n, spec in self.definition.outputs.items():
                if out_shapes[n] is None:
                    raise TypeError(f"output {n!r} is a scalar: a DPS entry cannot receive it")
                specs.append((out_shapes[n], spec.dtype.to_torch()))
            self._alloc_cache[key] = specs
        return specs

    def allocate_outputs(self, inputs: Sequence[Any]) -> List[torch.Tensor]:
        device = next((x.device for x in inputs if isinstance(x, torch.Tensor)), None)
        if device is None:
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return [torch.empty(shape, dtype=dt, device=device) for shape, dt in self.output_specs(inputs)]

    def __repr__(self) -> str:
        return (
            f"Runnable({self.definition.name}, language={self.language}, "
            f"dps={self._dps}, artifact={self.artifact_dir})"
        )
