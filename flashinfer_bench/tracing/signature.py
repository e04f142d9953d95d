"""Normalise a call's arguments to positions in the definition's order (inputs, then outputs).

Shared by the tracer and apply's dispatcher (apply sits on tracing). Only calls that pass keyword
arguments pay for it.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Optional, Sequence

_SIGS: Dict[Any, Optional[inspect.Signature]] = {}


def _signature(fn: Optional[Callable[..., Any]]) -> Optional[inspect.Signature]:
    if fn is None:
        return None
    try:
        return _SIGS[fn]
    except (KeyError, TypeError):
        pass
    try:
        sig: Optional[inspect.Signature] = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    try:
        _SIGS[fn] = sig
    except TypeError:  # unhashable callable
        pass
    return sig


def merge_args(
    fallback: Optional[Callable[..., Any]],
    args: tuple,
    kwargs: Dict[str, Any],
    order: Sequence[str],
) -> tuple:
    """Positional arguments for a call made with keywords.

    With a fallback whose signature binds the call, its parameter order decides (defaults
    applied); otherwise keywords are placed by the definition's names in `order`.
    """
    sig = _signature(fallback)
    if sig is not None:
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError:
            bound = None
        if bound is not None:
            bound.apply_defaults()
            out = []
            for p in sig.parameters.values():
                if p.kind in (p.VAR_POSITIONAL,):
                    out.extend(bound.arguments.get(p.name, ()))
                elif p.kind == p.VAR_KEYWORD:
                    continue
                elif p.name in bound.arguments:
                    out.append(bound.arguments[p.name])
            return tuple(out)
    rest = [kwargs[n] for n in order[len(args):] if n in kwargs]
    return tuple(args) + tuple(rest)
