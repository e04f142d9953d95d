"""ApplyRuntime: built solutions plus one small dispatcher per definition.

Everything expensive happens at enable (table, builds, loads). A call then costs: read the
shape and dtype of each tensor argument, one dict lookup, one counter increment, the call. The
first call with a new shape signature goes through `_resolve` (bind axes, check dtypes, pick a
solution by the table and the miss policy) and memoises the answer under that signature.
"""
from __future__ import annotations

import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from flashinfer_bench.data import Definition, DType, ShapeError, TraceSet

from .config import ApplyConfig
from .hardware import hardware_name
from .signature import merge_args
from .table import DefinitionTable, Key, build_table

FALLBACK = "fallback"


class ApplyWarning(UserWarning):
    """apply() fell back, skipped a solution, or found nothing usable; the program goes on."""


class _Route:
    """What one call signature resolves to: a solution's caller-convention function or None."""

    __slots__ = ("fn", "solution", "axes", "calls")

    def __init__(self, fn: Optional[Callable[[tuple], Any]], solution: str, axes: Optional[Key]):
        self.fn = fn
        self.solution = solution
        self.axes = axes
        self.calls = 0


@dataclass
class _Built:
    solution: str
    runnable: Any
    value: Callable[..., Any] = field(init=False)
    dps: Callable[..., Any] = field(init=False)

    def __post_init__(self) -> None:
        self.value = self.runnable.call_value_returning
        self.dps = self.runnable.call_dps


class Dispatcher:
    """Routes calls of one definition. `__call__` is the hot path."""

    def __init__(self, runtime: "ApplyRuntime", definition: Definition, table: Optional[DefinitionTable]):
        self.runtime = runtime
        self.definition = definition
        self.name = definition.name
        self.table = table
        self.cfg = runtime.config.for_definition(definition.name)
        names_in = list(definition.inputs)
        names_out = list(definition.outputs)
        self.n_in = len(names_in)
        self.n_out = len(names_out)
        self.single_output = self.n_out == 1
        in_pos = [i for i, n in enumerate(names_in) if definition.inputs[n].shape is not None]
        out_pos = [self.n_in + i for i, n in enumerate(names_out) if definition.outputs[n].shape is not None]
        # which argument positions carry tensors, by number of positional arguments
        self.tensor_pos: Dict[int, Tuple[int, ...]] = {
            self.n_in: tuple(in_pos),
            self.n_in + self.n_out: tuple(in_pos + out_pos),
        }
        self.routes: Dict[tuple, _Route] = {}
        self.retired: List[_Route] = []
        self.order = names_in + names_out

    # ------------------------------------------------------------------ hot path
    def __call__(self, fallback: Callable[..., Any], args: tuple, kwargs: Dict[str, Any]) -> Any:
        call_args = args
        if kwargs:
            call_args = self._merge(fallback, args, kwargs)
        n = len(call_args)
        pos = self.tensor_pos.get(n)
        try:
            if pos:
                key = (n, call_args[pos[0]].is_cuda, *[(call_args[i].shape, call_args[i].dtype) for i in pos])
            else:
                key = (n,)
        except AttributeError:  # a non-tensor where the definition has a tensor
            key = None
        route = self.routes.get(key) if key is not None else None
        if route is None:
            route = self._resolve(key, call_args)
        route.calls += 1
        fn = route.fn
        if fn is None:
            return fallback(*args, **kwargs)
        try:
            return fn(call_args)
        except Exception:  # untrusted solution code: disable it, keep the user's program going
            route.calls -= 1
            self.runtime._solution_failed(route.solution, self.name, traceback.format_exc())
            self._fallback_route(route.axes).calls += 1
            return fallback(*args, **kwargs)

    # ------------------------------------------------------------------ slow paths
    def _merge(self, fallback: Callable[..., Any], args: tuple, kwargs: Dict[str, Any]) -> tuple:
        return merge_args(fallback, args, kwargs, self.order)

    def _fallback_route(self, axes: Optional[Key]) -> _Route:
        key = ("fallback", axes)
        r = self.routes.get(key)  # type: ignore[arg-type]
        if r is None:
            r = self.routes[key] = _Route(None, FALLBACK, axes)  # type: ignore[index]
        return r

    def _resolve(self, key: Optional[tuple], args: tuple) -> _Route:
        route = self._decide(args)
        if key is not None:
            self.routes[key] = route
        return route

    def _decide(self, args: tuple) -> _Route:
        d = self.definition
        n = len(args)
        if n not in self.tensor_pos:
            self.runtime._warn_once(
                (self.name, "arity", n),
                f"apply({self.name!r}): called with {n} arguments; the definition takes "
                f"{self.n_in} inputs (value-returning) or {self.n_in + self.n_out} inputs+outputs "
                f"(destination-passing). Using the fallback.",
            )
            return _Route(None, FALLBACK, None)
        dps = n != self.n_in
        names = list(d.inputs) + (list(d.outputs) if dps else [])
        specs = {**d.inputs, **(d.outputs if dps else {})}
        shapes: Dict[str, Optional[Sequence[int]]] = {}
        problems: List[str] = []
        first_device = None
        for name, value in zip(names, args):
            spec = specs[name]
            if spec.shape is None:
                continue
            shape = getattr(value, "shape", None)
            dtype = getattr(value, "dtype", None)
            if shape is None or dtype is None:
                problems.append(f"{name!r} is {type(value).__name__}, expected a tensor")
                continue
            shapes[name] = tuple(shape)
            try:
                got = DType.from_torch(dtype)
            except ValueError:
                got = None
            if got != spec.dtype:
                problems.append(f"{name!r} has dtype {dtype}, the definition says {spec.dtype}")
            dev = getattr(value, "device", None)
            if first_device is None:
                first_device = dev
            elif dev != first_device:
                problems.append(f"{name!r} is on {dev}, other tensors on {first_device}")
        axes: Optional[Key] = None
        if not problems:
            try:
                bound = d.bind_axes({k: v for k, v in shapes.items() if k in d.inputs})
                axes = tuple(bound[a] for a in d.var_axes)
                if dps:
                    want = d.get_output_shapes(bound)
                    for oname in d.outputs:
                        if oname in shapes and tuple(want[oname] or ()) != shapes[oname]:
                            problems.append(
                                f"output {oname!r} has shape {shapes[oname]}, expected {want[oname]}"
                            )
            except ShapeError as e:
                problems.append(str(e))
        if problems:
            self.runtime._warn_once(
                (self.name, "shape", tuple(problems)),
                f"apply({self.name!r}): call does not match the definition ({'; '.join(problems)}); "
                "using the fallback.",
            )
            return _Route(None, FALLBACK, None)
        assert axes is not None
        if first_device is not None and str(first_device).split(":")[0] != self.runtime.device.split(":")[0]:
            # solutions were measured on another device type; never hand them foreign pointers
            return _Route(None, FALLBACK, axes)
        solution = self.runtime._choose(self, axes)
        if solution is None:
            return _Route(None, FALLBACK, axes)
        built = self.runtime._built.get(solution)
        if built is None:
            return _Route(None, FALLBACK, axes)
        return _Route(self._adapt(built, dps), solution, axes)

    def _adapt(self, built: _Built, dps: bool) -> Callable[[tuple], Any]:
        """A one-argument function calling the solution in the caller's convention."""
        if dps:
            f = built.dps

            def call_dps(a: tuple) -> None:
                f(*a)

            return call_dps
        f = built.value
        if self.single_output:

            def call_value_1(a: tuple) -> Any:
                return f(*a)[0]

            return call_value_1

        def call_value(a: tuple) -> Any:
            return f(*a)

        return call_value

    def disable_solution(self, solution: str) -> None:
        for key, r in list(self.routes.items()):
            if r.solution == solution:
                self.retired.append(r)
                self.routes[key] = _Route(None, FALLBACK, r.axes)

    def all_routes(self) -> List[_Route]:
        return list(self.routes.values()) + self.retired


class ApplyRuntime:
    """Holds the tables, the built solutions and the dispatchers of one enable_apply()."""

    def __init__(self, trace_set: TraceSet, config: Optional[ApplyConfig] = None, source: str = ""):
        self.config = config or ApplyConfig()
        self.trace_set = trace_set
        self.source = source or str(trace_set.root or "<memory>")
        self.device, detected = hardware_name(self.config.device)
        self.hardware = self.config.hardware or detected
        self._warned: Set[Any] = set()
        self._built: Dict[str, _Built] = {}
        self.failed: Dict[str, str] = {}  # solution -> why (build or runtime failure)
        self.tables: Dict[str, DefinitionTable] = {}
        self.dispatchers: Dict[str, Dispatcher] = {}
        self._prepare()

    # ------------------------------------------------------------------ enable-time work
    def _definitions(self) -> List[Definition]:
        allow = set(self.config.definitions) if self.config.definitions is not None else None
        return [d for n, d in self.trace_set.definitions.items() if allow is None or n in allow]

    def _needed(self, table: DefinitionTable, cfg: ApplyConfig) -> Set[str]:
        need = set(table.winners.values())
        if cfg.on_miss == "definition_best" and table.best:
            need.add(table.best)
        return need

    def _prepare(self) -> None:
        defs = self._definitions()
        for d in defs:
            cfg = self.config.for_definition(d.name)
            while True:
                table = build_table(self.trace_set, d, self.hardware, cfg, set(self.failed))
                missing = [s for s in sorted(self._needed(table, cfg)) if s not in self._built]
                if not missing:
                    break
                for s in missing:
                    self._build(s, d)
            self.tables[d.name] = table
            self.dispatchers[d.name] = Dispatcher(self, d, table)
        if not any(t.winners for t in self.tables.values()):
            others = sorted(set(self.trace_set.hardware()) - {self.hardware})
            self._warn_once(
                ("no-traces",),
                f"apply: no PASSED traces for hardware {self.hardware!r} in {self.source}"
                + (f" (traces exist for {others})" if others else "")
                + "; every call uses its fallback.",
            )

    def _build(self, solution_name: str, definition: Definition) -> None:
        from flashinfer_bench.compile import build, load_runnable

        sol = self.trace_set.get_solution(solution_name)
        assert sol is not None
        cache = Path(self.config.cache_dir) if self.config.cache_dir is not None else None
        try:
            result = build(sol, definition, cache)
            if result.status != "OK":
                raise RuntimeError(f"build status {result.status}: {result.log[-2000:]}")
            runnable = load_runnable(Path(result.artifact_dir), definition)
        except Exception:  # untrusted solution: any failure to build or load skips it
            why = traceback.format_exc()
            self.failed[solution_name] = why
            self._warn_once(
                ("build", solution_name),
                f"apply: solution {solution_name!r} of {definition.name!r} could not be built or "
                f"loaded; it is skipped.\n{why}",
            )
            return
        self._built[solution_name] = _Built(solution_name, runnable)

    # ------------------------------------------------------------------ call-time helpers
    def _choose(self, disp: Dispatcher, axes: Key) -> Optional[str]:
        table = disp.table
        if table is None or not table.winners:
            return None
        sol = table.winners.get(axes)
        if sol is not None and sol not in self.failed:
            return sol
        cfg = disp.cfg
        if cfg.on_miss == "definition_best":
            return table.best if table.best not in self.failed else None
        if cfg.on_miss == "nearest":
            hit = table.nearest(axes, cfg.max_log2_distance)
            if hit is not None and hit[1] not in self.failed:
                return hit[1]
        return None

    def _warn_once(self, key: Any, message: str) -> None:
        if key in self._warned:
            return
        self._warned.add(key)
        warnings.warn(message, ApplyWarning, stacklevel=4)

    def _solution_failed(self, solution: str, definition: str, tb: str) -> None:
        self.failed[solution] = tb
        self._built.pop(solution, None)
        for disp in self.dispatchers.values():
            disp.disable_solution(solution)
        self._warn_once(
            ("runtime", solution),
            f"apply: solution {solution!r} of {definition!r} raised; it is disabled for this "
            f"process and calls use the fallback.\n{tb}",
        )

    # ------------------------------------------------------------------ entry points
    def dispatch(self, name: str, fallback: Callable[..., Any], args: tuple, kwargs: Dict[str, Any]) -> Any:
        disp = self.dispatchers.get(name)
        if disp is None:
            return self._unknown(name, fallback, args, kwargs)
        return disp(fallback, args, kwargs)

    def _unknown(self, name: str, fallback: Optional[Callable[..., Any]], args: tuple, kwargs: Dict[str, Any]) -> Any:
        self._warn_once(
            ("unknown", name),
            f"apply: definition {name!r} is not in {self.source}; using the fallback.",
        )
        if fallback is None:
            raise RuntimeError(f"apply({name!r}): no solution and no fallback")
        return fallback(*args, **kwargs)

    def stats(self, by_axes: bool = False) -> Dict[str, Dict[Any, Any]]:
        out: Dict[str, Dict[Any, Any]] = {}
        for name, disp in self.dispatchers.items():
            per: Dict[Any, Any] = {}
            for r in disp.all_routes():
                if not r.calls:
                    continue
                if by_axes:
                    slot = per.setdefault(r.axes, {})
                    slot[r.solution] = slot.get(r.solution, 0) + r.calls
                else:
                    per[r.solution] = per.get(r.solution, 0) + r.calls
            if per:
                out[name] = per
        return out

    def reset_stats(self) -> None:
        for disp in self.dispatchers.values():
            for r in disp.all_routes():
                r.calls = 0

    def dispatch_table(self) -> Dict[str, Dict[Key, str]]:
        return {n: dict(t.winners) for n, t in self.tables.items() if t.winners}

    @property
    def solutions_built(self) -> List[str]:
        return sorted(self._built)

    # context manager: `with enable_apply(...):`
    def __enter__(self) -> "ApplyRuntime":
        return self

    def __exit__(self, *exc: Any) -> None:
        from .api import _pop_runtime

        _pop_runtime(self)
