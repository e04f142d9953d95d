"""Importing a Python-style solution's entry function from an artifact, under a unique package.

The artifact's src/ directory becomes package `fib_<language>_<hash16>` (no sys.path change, no
file written into the sources), so relative imports between a solution's files work and two
solutions with the same file names never share a module. Used by the build (in its child process)
and by load_runnable (in the caller's process).
"""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import inspect
import re
import sys
from pathlib import Path, PurePosixPath
from typing import Any, Callable, List, Optional

from ..data.signature import arity_problem  # noqa: F401  (also imported from here)
from .messages import exception_location
from .sources import module_name


class EntryError(Exception):
    """The entry could not be imported or is not a usable function; str() says why."""


def _ensure_package(package: str, src_dir: Path) -> None:
    mod = sys.modules.get(package)
    if mod is not None and list(getattr(mod, "__path__", [])) == [str(src_dir)]:
        return
    spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
    spec.submodule_search_locations = [str(src_dir)]
    pkg = importlib.util.module_from_spec(spec)
    pkg.__path__ = [str(src_dir)]
    sys.modules[package] = pkg


def _import_entry_module(package: str, src_dir: Path, entry_file: str) -> Any:
    dotted = module_name(entry_file)
    if dotted is not None:
        return importlib.import_module(f"{package}.{dotted}")
    # File names that are not identifiers ('my-kernel.py'): load by path under a safe name.
    safe = re.sub(r"\W", "_", str(PurePosixPath(entry_file).with_suffix("")))
    name = f"{package}._entry_{safe}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, src_dir / entry_file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return mod


def _forget(package: str) -> None:
    """Drop a failed import's modules so a later attempt starts clean."""
    for k in [k for k in sys.modules if k == package or k.startswith(package + ".")]:
        del sys.modules[k]


def import_entry(package: str, src_dir: Path, entry_file: str, symbol: str) -> Callable[..., Any]:
    """The entry function; raises EntryError with a 'file:line: reason' message."""
    src_dir = Path(src_dir)
    if not (src_dir / entry_file).is_file():
        raise EntryError(f"entry file {entry_file!r} is missing from the artifact")
    _ensure_package(package, src_dir)
    try:
        mod = _import_entry_module(package, src_dir, entry_file)
    except SyntaxError as e:  # a source that is not the entry, or one the pre-check missed
        _forget(package)
        fname = str(Path(e.filename).resolve()) if e.filename else ""
        root = str(src_dir.resolve()) + "/"
        where = f"{fname[len(root):] if fname.startswith(root) else entry_file}:{e.lineno}"
        raise EntryError(f"{where}: SyntaxError: {e.msg}") from None
    except ModuleNotFoundError as e:
        _forget(package)
        where = exception_location(e, src_dir) or entry_file
        raise EntryError(
            f"{where}: imports module {e.name!r}, which is not installed here "
            f"(ModuleNotFoundError: {e})"
        ) from None
    except ImportError as e:
        _forget(package)
        where = exception_location(e, src_dir) or entry_file
        raise EntryError(f"{where}: ImportError: {e}") from None
    except BaseException as e:  # untrusted module body: report whatever it raised
        _forget(package)
        where = exception_location(e, src_dir) or entry_file
        raise EntryError(
            f"{where}: {type(e).__name__} while importing the entry module: {e}"
        ) from None
    if not hasattr(mod, symbol):
        names = sorted(
            n for n, v in vars(mod).items()
            if callable(v) and not n.startswith("_") and getattr(v, "__module__", None) == mod.__name__
        )
        raise EntryError(
            f"{entry_file}: no function {symbol!r} (entry_point names it; the module defines "
            f"{names or 'no public functions'})"
        )
    fn = getattr(mod, symbol)
    if type(fn).__module__.startswith("triton") and hasattr(fn, "fn"):
        raise EntryError(
            f"{entry_file}: {symbol!r} is a @triton.jit kernel; the entry must be a Python "
            "function that launches it"
        )
    if not callable(fn):
        raise EntryError(f"{entry_file}: {symbol!r} is a {type(fn).__name__}, not a function")
    return fn


def signature_problem(
    fn: Callable[..., Any],
    symbol: str,
    inputs: List[str],
    outputs: List[str],
    dps: bool,
) -> Optional[str]:
    """Why fn cannot be called as the definition calls it (None when it can, or cannot be told).

    DPS calls pass the inputs then the outputs positionally; value-returning calls the inputs.
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None  # builtins and extension functions: nothing to inspect
    P = inspect.Parameter
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is P.empty]
    var_pos = any(p.kind == P.VAR_POSITIONAL for p in params)
    kw_required = [p.name for p in params if p.kind == P.KEYWORD_ONLY and p.default is P.empty]
    return arity_problem(
        symbol, str(sig), len(required), None if var_pos else len(positional), kw_required,
        inputs, outputs, dps,
    )
