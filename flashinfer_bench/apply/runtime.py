"""ApplyRuntime: built solutions plus one small dispatcher per definition.

Everything expensive happens at enable (table, builds, loads). A call then costs: read the
shape and dtype of each tensor argument, one dict lookup, one counter increment, the call. The
first call with a new shape signature goes through `_resolve` (bind axes, check dtypes, pick a
solution by the table and the miss policy) and memoises the answer under that signature.
"""
from __future__ import annotations

import operator
import os
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from flashinfer_bench.data import Definition, DType, ShapeError, TraceSet
from flashinfer_bench.device import hardware_name
from flashinfer_bench.tracing.signature import merge_args

from . import _state
from .config import ApplyConfig
from .table import DefinitionTable, Key, build_table

FALLBACK = "fallback"


class ApplyWarning(UserWarning):
    """apply() fell back, skipped a solution, or found nothing usable; the program goes on."""


class _Route:
    """What one call signature resolves to: a callable in the caller's convention, or None for
    the fallback. `post` fixes up a result that is not already a plain tensor."""

    __slots__ = ("fn", "post", "solution", "axes", "calls")

    def __init__(
        self,
        fn: Optional[Callable[..., Any]],
        solution: str,
        axes: Optional[Key],
        post: Optional[Callable[[Any], Any]] = None,
    ):
        self.fn = fn
        self.post = post
        self.solution = solution
        self.axes = axes
        self.calls = 0


@dataclass
class _Built:
    solution: str
    runnable: Any


def _tensor_type() -> type:
    import torch

    return torch.Tensor


def _key_source(shape_pos: Sequence[int], first: Optional[int], marker: Optional[str], all_dtypes: bool) -> str:
    """Source of the key tuple: the shapes of the tensor arguments at `shape_pos`, the dtype and
    device kind of the first tensor argument `first` (every keyed tensor's dtype with all_dtypes)."""
    parts = [marker] if marker else []
    parts += [f"args[{i}].shape" for i in shape_pos]
    if first is not None:
        parts += [f"args[{i}].dtype" for i in (shape_pos if all_dtypes and shape_pos else [first])]
        parts.append(f"args[{first}].is_cuda")
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


_TEMPLATE = """
def key(args):
    n = len(args)
    try:
        if n == {n_in}:
            return {key_in}
        if n == {n_all}:
            return {key_all}
    except AttributeError:
        return None
    return ("arity", n)

def call(fallback, args, kwargs):
    if kwargs:
        return slow(fallback, args, kwargs)
    n = len(args)
    try:
        if n == {n_in}:
            k = {key_in}
        elif n == {n_all}:
            k = {key_all}
        else:
            return slow(fallback, args, kwargs)
    except AttributeError:
        return slow(fallback, args, kwargs)
    r = routes.get(k)
    if r is None:
        r = resolve(k, args)
    r.calls += 1
    fn = r.fn
    if fn is None:
        return fallback(*args)
    try:
        out = fn(*args)
    except Exception:  # untrusted solution code: disabled, the call falls back
        return failed(r, fallback, args, kwargs)
    post = r.post
    if post is not None and type(out) is not Tensor:
        out = post(out)
    return out
"""


class Dispatcher:
    """Routes calls of one definition. `call(fallback, args, kwargs)` is the hot path: generated
    per definition so that the key is one tuple expression over the tensor arguments."""

    def __init__(self, runtime: "ApplyRuntime", definition: Definition, table: Optional[DefinitionTable]):
        import torch

        self.runtime = runtime
        self.definition = definition
        self.name = definition.name
        self.table = table
        self.cfg = runtime.config.for_definition(definition.name)
        names_in = list(definition.inputs)
        names_out = list(definition.outputs)
        self.n_in = len(names_in)
        self.n_out = len(names_out)
        self.order = names_in + names_out
        # The key reads the tensors whose shape carries a var axis (a tensor of const axes only,
        # such as a weight, is checked on the first call of each key), unless strict_key.
        var = set(definition.var_axes)
        strict = self.cfg.strict_key

        def keyed(spec: Any) -> bool:
            return spec.shape is not None and (strict or bool(var & set(spec.shape)))

        in_pos = [i for i, n in enumerate(names_in) if keyed(definition.inputs[n])]
        out_pos = [self.n_in + i for i, n in enumerate(names_out) if keyed(definition.outputs[n])]
        first = next((i for i, n in enumerate(names_in) if definition.inputs[n].shape is not None), None)
        self.routes: Dict[Any, _Route] = {}
        self.retired: List[_Route] = []
        src = _TEMPLATE.format(
            n_in=self.n_in,
            n_all=self.n_in + self.n_out,
            key_in=_key_source(in_pos, first, None, strict),
            key_all=_key_source(in_pos + out_pos, first, "None", strict),
        )
        ns: Dict[str, Any] = {
            "routes": self.routes, "resolve": self._resolve, "slow": self._slow,
            "failed": self._failed, "Tensor": torch.Tensor,
        }
        exec(compile(src, f"<apply dispatch {self.name}>", "exec"), ns)  # noqa: S102 - our own template
        self.call: Callable[[Any, tuple, Dict[str, Any]], Any] = ns["call"]
        self.key: Callable[[tuple], Any] = ns["key"]

    # ------------------------------------------------------------------ slow paths
    def _slow(self, fallback: Callable[..., Any], args: tuple, kwargs: Dict[str, Any]) -> Any:
        """Calls with keywords, an unexpected arity, or non-tensors where tensors belong."""
        call_args = merge_args(fallback, args, kwargs, self.order) if kwargs else args
        k = self.key(call_args)
        r = self.routes.get(k) if k is not None else None
        if r is None:
            r = self._resolve(k, call_args)
        r.calls += 1
        fn = r.fn
        if fn is None:
            return fallback(*args, **kwargs)
        try:
            out = fn(*call_args)
        except Exception:  # untrusted solution code: disabled, the call falls back
            return self._failed(r, fallback, args, kwargs)
        if r.post is not None and not isinstance(out, _tensor_type()):
            out = r.post(out)
        return out

    def _failed(self, r: _Route, fallback: Callable[..., Any], args: tuple, kwargs: Dict[str, Any]) -> Any:
        r.calls -= 1
        self.runtime._solution_failed(r.solution, self.name, traceback.format_exc())
        self._fallback_route(r.axes).calls += 1
        return fallback(*args, **kwargs)

    def _fallback_route(self, axes: Optional[Key]) -> _Route:
        key = ("fallback", axes)
        r = self.routes.get(key)
        if r is None:
            r = self.routes[key] = _Route(None, FALLBACK, axes)
        return r

    def _resolve(self, key: Any, args: tuple) -> _Route:
        route = self._decide(args)
        if key is not None:
            self.routes[key] = route
        return route
    def _decide(self, args: tuple) -> _Route:
        d = self.definition
        n = len(args)
        if n not in (self.n_in, self.n_in + self.n_out):
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
                    want = d.output_shapes_by_name(bound)
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
        built = self.runtime._built.get(solution) or self.runtime.build_late(solution, d)
        if built is None:
            return _Route(None, FALLBACK, axes)
        return self._adapt(built, dps, axes, solution)

    def _adapt(self, built: _Built, dps: bool, axes: Key, solution: str) -> _Route:
        """A route calling the solution in the caller's convention (native call when they agree)."""
        rn = built.runnable
        native = rn.__call__  # a bound method calls faster than the instance
        if dps:
            return _Route(native if rn.dps else rn.call_dps, solution, axes)
        if rn.dps:
            return _Route(rn.call_value_returning, solution, axes, operator.itemgetter(0) if self.n_out == 1 else None)
        normalize = rn.normalize
        if self.n_out == 1:
            return _Route(native, solution, axes, lambda out: normalize(out)[0])
        n = self.n_out
        return _Route(native, solution, axes, lambda out: out if type(out) is tuple and len(out) == n else normalize(out))

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
        self.calls: Dict[str, Callable[[Any, tuple, Dict[str, Any]], Any]] = {}
        self._prepare()

    # ------------------------------------------------------------------ enable-time work
    def _definitions(self) -> List[Definition]:
        allow = set(self.config.definitions) if self.config.definitions is not None else None
        return [d for n, d in self.trace_set.definitions.items() if allow is None or n in allow]

    def _needed(self, table: DefinitionTable, cfg: ApplyConfig) -> Set[str]:
        """The solutions built at enable: the top aot_ratio of the winners by keys won (0.1.2's
        rule: at least one when the ratio is > 0), and the definition's best for its miss policy.
        The rest are built by `build_late` at the first call routed to them."""
        ranked = [s for s, _ in Counter(table.winners.values()).most_common()]
        need = set(ranked[: max(1, int(len(ranked) * cfg.aot_ratio))] if cfg.aot_ratio > 0 else ())
        if cfg.on_miss == "definition_best" and table.best:
            need.add(table.best)
        return need

    def _prepare(self) -> None:
        defs = self._definitions()
        tables: Dict[str, DefinitionTable] = {}
        while True:  # a solution that fails to build hands its keys to the next best
            for d in defs:
                tables[d.name] = build_table(self.trace_set, d, self.hardware, self.config.for_definition(d.name), set(self.failed))
            missing = sorted(
                {(s, d.name) for d in defs for s in self._needed(tables[d.name], self.config.for_definition(d.name))}
                - {(s, n) for s in self._built for n in tables}
            )
            if not missing:
                break
            self._build_all(missing)
        for d in defs:
            self.tables[d.name] = tables[d.name]
            disp = self.dispatchers[d.name] = Dispatcher(self, d, tables[d.name])
            self.calls[d.name] = disp.call
        if not any(t.winners for t in self.tables.values()):
            if self.failed:
                why = f"every measured solution failed to build or load ({sorted(self.failed)})"
            elif not defs and self.trace_set.definitions:
                why = f"the config selects none of the definitions in {self.source}"
            else:
                others = sorted(set(self.trace_set.hardware()) - {self.hardware})
                why = f"no PASSED traces for hardware {self.hardware!r} in {self.source}" + (
                    f" (traces exist for {others})" if others else ""
                )
            self._warn_once(("no-traces",), f"apply: {why}; every call uses its fallback.")

    def _build_all(self, missing: Sequence[Tuple[str, str]]) -> None:
        """Build in parallel (each build is a child process), then load here, in order."""
        from concurrent.futures import ThreadPoolExecutor

        from flashinfer_bench.compile import build, load_runnable

        cache = Path(self.config.cache_dir) if self.config.cache_dir is not None else None
        todo = [(s, self.trace_set.definitions[dn]) for s, dn in missing]

        def one(item: Tuple[str, Definition]) -> Any:
            sol = self.trace_set.get_solution(item[0])
            assert sol is not None
            try:
                return build(sol, item[1], cache)
            except Exception:  # e.g. an unwritable cache: reported per solution below
                return traceback.format_exc()

        workers = max(1, min(len(todo), os.cpu_count() or 1, 8))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fib-apply-build") as pool:
            results = list(pool.map(one, todo))
        for (name, definition), result in zip(todo, results):
            try:
                if isinstance(result, str):
                    raise RuntimeError(f"build raised:\n{result}")
                if result.status != "OK":
                    raise RuntimeError(f"build status {result.status}:\n{result.log[-2000:]}")
                runnable = load_runnable(Path(result.artifact_dir), definition)
            except Exception:  # untrusted solution: any failure to build or load skips it
                why = traceback.format_exc()
                self.failed[name] = why
                self._warn_once(
                    ("build", name),
                    f"apply: solution {name!r} of {definition.name!r} could not be built or "
                    f"loaded; it is skipped.\n{why}",
                )
                continue
            self._built[name] = _Built(name, runnable)

    def build_late(self, solution: str, definition: Definition) -> Optional[_Built]:
        """Build a winner left out at enable (aot_ratio < 1) when a call first routes to it; None
        (the call falls back, with one warning) when it fails or failed before."""
        if solution in self.failed or self.trace_set.get_solution(solution) is None:
            return None
        self._build_all([(solution, definition.name)])
        return self._built.get(solution)

    # ------------------------------------------------------------------ call-time helpers
    def _choose(self, disp: Dispatcher, axes: Key) -> Optional[str]:
        table = disp.table
        if table is None or not table.winners:
            return None
        sol = table.winners.get(axes)
        if sol is not None and sol not in self.failed:
            return sol
        if axes in table.fallback_keys:  # measured: no solution beats the reference here
            return None
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
        call = self.calls.get(name)
        if call is None:
            return self._unknown(name, fallback, args, kwargs)
        return call(fallback, args, kwargs)

    def _unknown(self, name: str, fallback: Optional[Callable[..., Any]], args: tuple, kwargs: Dict[str, Any]) -> Any:
        self._warn_once(
            ("unknown", name),
            f"apply: definition {name!r} is "
            + ("not selected by the config" if name in self.trace_set.definitions else f"not in {self.source}")
            + "; using the fallback.",
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
        """Per definition: measured key -> the solution serving it ("fallback": no solution was
        measurably faster than the reference there)."""
        return {n: {**{k: FALLBACK for k in t.fallback_keys}, **t.winners} for n, t in self.tables.items()
                if t.winners or t.fallback_keys}

    @property
    def solutions_built(self) -> List[str]:
        return sorted(self._built)

    # context manager: `with enable_apply(...):`
    def __enter__(self) -> "ApplyRuntime":
        return self

    def __exit__(self, *exc: Any) -> None:
        _state.pop(self)
