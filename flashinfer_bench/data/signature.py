"""Does an entry function fit the call a definition makes? Shared by `validate` (from the source's
syntax tree, before anything runs) and the build (from the imported function).

A destination-passing-style (DPS) entry is called with the inputs then the outputs,
positionally; a value-returning one with the inputs.
"""
from __future__ import annotations

import ast
from typing import Any, List, Optional


def arity_problem(
    symbol: str,
    shown: str,
    n_required: int,
    n_max: Optional[int],
    kw_required: List[str],
    inputs: List[str],
    outputs: List[str],
    dps: bool,
) -> Optional[str]:
    """Why a function taking `n_required` to `n_max` (None: any number of) positional arguments
    cannot be called with the definition's arguments (None when it can)."""
    expected = len(inputs) + (len(outputs) if dps else 0)
    how = f"inputs ({', '.join(inputs)})" + (f" then outputs ({', '.join(outputs)})" if dps else "")
    if kw_required:
        return f"entry {symbol}{shown} has required keyword-only parameters {kw_required}"
    if n_required <= expected and (n_max is None or n_max >= expected):
        return None
    takes = f"{n_required}" if n_max == n_required else (
        f"{n_required} to {n_max}" if n_max is not None else f"at least {n_required}"
    )
    msg = (
        f"entry {symbol}{shown} takes {takes} positional parameter(s), but "
        f"destination_passing_style is {str(dps).lower()}, so it is called with {expected}: {how}"
    )
    other = len(inputs) + (0 if dps else len(outputs))
    if n_required <= other and (n_max is None or n_max >= other):
        msg += f"; set destination_passing_style to {str(not dps).lower()} if that is how it works"
    return msg


def ast_arity_problem(
    fn: ast.FunctionDef, inputs: List[str], outputs: List[str], dps: bool
) -> Optional[str]:
    """`arity_problem` for a function known by its syntax tree (a top-level `def` of the entry)."""
    a = fn.args
    positional = a.posonlyargs + a.args
    n_required = len(positional) - len(a.defaults)
    kw_required = [k.arg for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is None]
    shown = "(" + ", ".join(
        [p.arg for p in positional]
        + ([f"*{a.vararg.arg}"] if a.vararg else (["*"] if a.kwonlyargs else []))
        + [k.arg for k in a.kwonlyargs]
        + ([f"**{a.kwarg.arg}"] if a.kwarg else [])
    ) + ")"
    return arity_problem(
        fn.name, shown, n_required, None if a.vararg else len(positional), kw_required, inputs, outputs, dps
    )


PYTHON_ENTRY_LANGS = ("python", "triton", "tilelang")


def _entry_def(source: str, symbol: str) -> Optional[ast.FunctionDef]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == symbol]
    return found[-1] if found and isinstance(found[-1], ast.FunctionDef) else None


def effective_dps(solution: Any, definition: Any) -> bool:
    """The solution's calling convention. `spec.destination_passing_style` as written; when the
    solution does not say (0.1.2 then assumes true), what its Python entry's signature fits: a
    `run(input, residual, weight, eps)` that returns its outputs is value-returning, as the user's
    documents write it (example 04: "Triton: PASSED"). Both or neither fitting: the default."""
    spec = solution.spec
    if "destination_passing_style" in spec.model_fields_set or spec.language.value not in PYTHON_ENTRY_LANGS:
        return bool(spec.destination_passing_style)
    entry = solution.get_source(spec.entry_file)
    fn = _entry_def(entry.content, spec.entry_symbol) if entry is not None else None
    if fn is None:
        return bool(spec.destination_passing_style)
    ins, outs = list(definition.inputs), list(definition.outputs)
    if ast_arity_problem(fn, ins, outs, True) is None:
        return True
    if ast_arity_problem(fn, ins, outs, False) is None:
        return False
    return bool(spec.destination_passing_style)
