"""Public apply API: enable_apply / disable_apply, the @apply decorator and its imperative form.

The decorated function's body is the fallback. A decorated call, when neither apply nor tracing
is active, costs two attribute reads on top of the fallback.
"""
from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Union

from flashinfer_bench import env
from flashinfer_bench.data import TraceSet
from flashinfer_bench.tracing import _state as _tracing
from flashinfer_bench.tracing import enable_tracing

from . import _state
from .config import ApplyConfig, ApplyConfigRegistry, as_apply_config
from .runtime import ApplyRuntime, ApplyWarning


def _load(source: Union[TraceSet, str, Path, None]) -> TraceSet:
    if isinstance(source, TraceSet):
        return source
    path = Path(source) if source is not None else env.dataset_path()
    if path.is_file():
        return TraceSet.load(path)  # a single-file bundle (seed example 04)
    if not path.is_dir():
        raise FileNotFoundError(f"enable_apply: dataset {str(path)!r} does not exist")
    return TraceSet.from_path(path)


def enable_apply(
    trace_set_or_dataset_path: Union[TraceSet, str, Path, None] = None,
    config: Union[ApplyConfig, ApplyConfigRegistry, None] = None,
    *,
    dataset_path: Union[str, Path, None] = None,
    apply_config: Union[ApplyConfig, ApplyConfigRegistry, None] = None,
) -> ApplyRuntime:
    """Route @apply calls to the best measured solutions; also a context manager.

    Builds every solution that wins some key now (the top `aot_ratio` of them), so no build
    happens on a hot call. The source is a TraceSet, a dataset directory, a bundle file, or
    (None) FLASHINFER_BENCH_DATASET_PATH / FIB_DATASET_PATH. `dataset_path=` and `apply_config=`
    are upstream's spellings; so is an ApplyConfigRegistry for the config.
    """
    source = trace_set_or_dataset_path if trace_set_or_dataset_path is not None else dataset_path
    ts = _load(source)
    rt = ApplyRuntime(ts, as_apply_config(config or apply_config), source=str(source) if source is not None else "")
    _state.push(rt)
    return rt


def disable_apply() -> None:
    """Stop routing (restores the previously enabled runtime, if any); calls use fallbacks."""
    if _state.STACK:
        _state.pop(_state.STACK[-1])


def _activate_from_env() -> None:
    """FIB_ENABLE_APPLY / FLASHINFER_BENCH_ENABLE_TRACING (and aliases), read at the first call."""
    _state.ENV_PENDING = False
    if _state.APPLY is None and env.apply_enabled():
        try:
            enable_apply(env.dataset_path())
        except (OSError, ValueError) as e:
            warnings.warn(f"FIB_ENABLE_APPLY is set but apply could not start: {e}", ApplyWarning, 3)
    if _tracing.TRACER is None and env.tracing_enabled():
        enable_tracing()


def _call(name: str, fallback: Callable[..., Any], args: tuple, kwargs: Dict[str, Any]) -> Any:
    if _state.ENV_PENDING:
        _activate_from_env()
    tr = _tracing.TRACER
    if tr is not None:
        tr.collect(name, args, kwargs, fallback)
    rt = _state.APPLY
    if rt is not None:
        return rt.dispatch(name, fallback, args, kwargs)
    return fallback(*args, **kwargs)


def apply(
    definition: str,
    args: Optional[tuple] = None,
    kwargs: Optional[Dict[str, Any]] = None,
    fallback: Optional[Callable[..., Any]] = None,
) -> Any:
    """`@apply("def_name")` decorates a fallback; `apply("def_name", args=..., fallback=...)` calls.

    Value-returning callers pass the inputs; destination-passing callers pass inputs then
    outputs (and get None back). Either way the chosen solution is adapted to the caller.
    """
    if args is None and kwargs is None:
        if fallback is not None:
            raise TypeError("apply(name, fallback=...) needs args= or kwargs= to call")
        return functools.partial(_decorate, definition)
    if fallback is None:
        fallback = _no_fallback(definition)
    return _call(definition, _adapting(fallback), tuple(args or ()), dict(kwargs or {}))


def _no_fallback(name: str) -> Callable[..., Any]:
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"apply({name!r}): no solution serves this call and no fallback was given")

    return missing


def _adapting(fallback: Callable[..., Any]) -> Callable[..., Any]:
    """A value-returning fallback that also serves destination-passing callers.

    When a caller passes more positional arguments than the fallback takes (inputs, then
    outputs), the fallback runs on the inputs and its results are copied into the outputs.
    """
    import inspect

    try:
        params = inspect.signature(fallback).parameters.values()
    except (TypeError, ValueError):
        return fallback
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return fallback
    n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)

    @functools.wraps(fallback)
    def adapted(*args: Any, **kwargs: Any) -> Any:
        if len(args) <= n:
            return fallback(*args, **kwargs)
        outs = args[n:]
        res = fallback(*args[:n], **kwargs)
        res = res if isinstance(res, (tuple, list)) else (res,)
        if len(res) != len(outs):
            raise TypeError(f"{fallback.__name__} returned {len(res)} outputs for {len(outs)} destination arguments")
        for dst, src in zip(outs, res):
            dst.copy_(src)
        return None

    return adapted


def _decorate(name: str, fallback: Callable[..., Any]) -> Callable[..., Any]:
    state, tracing = _state, _tracing
    user_fallback = fallback
    fallback = _adapting(fallback)

    @functools.wraps(fallback)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if state.ENV_PENDING:
            _activate_from_env()
        tr = tracing.TRACER
        if tr is not None:
            tr.collect(name, args, kwargs, fallback)
        rt = state.APPLY
        if rt is None:
            return fallback(*args, **kwargs)
        call = rt.calls.get(name)
        if call is None:
            return rt._unknown(name, fallback, args, kwargs)
        return call(fallback, args, kwargs)

    wrapper.__fib_definition__ = name  # type: ignore[attr-defined]
    wrapper.__wrapped_fallback__ = user_fallback  # type: ignore[attr-defined]
    return wrapper


def active_runtime() -> Optional[ApplyRuntime]:
    return _state.APPLY


def stats(by_axes: bool = False) -> Dict[str, Dict[Any, Any]]:
    """Calls per definition and target ("fallback" or a solution name) of the active (or last)
    runtime; by_axes=True splits them by var-axis tuple (None: calls that did not bind)."""
    rt = _state.APPLY or _state.LAST
    return rt.stats(by_axes) if rt is not None else {}


def reset_stats() -> None:
    rt = _state.APPLY or _state.LAST
    if rt is not None:
        rt.reset_stats()


def dispatch_table() -> Dict[str, Dict[tuple, str]]:
    """{definition: {var-axis tuple: solution}} decided at enable (measured keys only)."""
    rt = _state.APPLY or _state.LAST
    return rt.dispatch_table() if rt is not None else {}
