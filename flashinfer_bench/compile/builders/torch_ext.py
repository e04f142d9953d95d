"""CUDA/C++ with the torch binding: `torch.utils.cpp_extension.load` into the artifact.

The sources export the entry either with PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) (the module is
named after the artifact, so it is unique) or with TORCH_LIBRARY(namespace, m) (found as
torch.ops.<namespace>.<entry>; two solutions registering the same namespace and op cannot be
loaded into one process, a limit of torch's op registry). CUDA sources need a CUDA build of torch:
with a CPU-only torch the build is SKIPPED, not failed.
"""
from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...data import Definition
from ..pyimport import arity_problem
from .common import BuildFailure, BuildSkipped, Outcome, src_dir, torch_cuda_available, work_dir
from .tvm_ffi import compile_failure, cuda_env, native_sources

_TORCH_LIBRARY = re.compile(r"\bTORCH_LIBRARY(?:_FRAGMENT)?\s*\(\s*(\w+)\s*,")


def library_namespaces(src: Path) -> List[str]:
    out: List[str] = []
    for p in sorted(src.rglob("*")):
        if p.is_file():
            try:
                text = p.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            out += [ns for ns in _TORCH_LIBRARY.findall(text) if ns not in out]
    return out


def load_entry(
    library: Path, package: str, python_module: bool, symbol: str, namespaces: List[str]
) -> Callable[..., Any]:
    """Import the built extension and return its entry (AttributeError when absent)."""
    import torch

    if python_module:
        spec = importlib.util.spec_from_file_location(package, library)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return getattr(mod, symbol)
    torch.ops.load_library(str(library))
    for ns in namespaces:
        packet = getattr(torch.ops, ns)
        if hasattr(packet, symbol):
            return getattr(packet, symbol)
    raise AttributeError(f"no op {symbol!r} in torch.ops namespaces {namespaces}")


def _split_top(args: str) -> List[str]:
    parts, depth, cur = [], 0, ""
    for ch in args:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts]


def entry_arity(fn: Any, symbol: str) -> Optional[Tuple[str, int, int]]:
    """(shown signature, required, maximum) of a pybind11 function or torch op, when known."""
    schema = getattr(getattr(fn, "default", None), "_schema", None)
    if schema is not None:
        args = list(schema.arguments)
        required = sum(1 for a in args if not a.has_default_value() and not a.kwarg_only)
        positional = sum(1 for a in args if not a.kwarg_only)
        return str(schema), required, positional
    doc = (getattr(fn, "__doc__", None) or "").strip()
    m = re.match(rf"{re.escape(symbol)}\((.*)\) ->", doc.splitlines()[0] if doc else "")
    if not m or "Overloaded" in doc:
        return None
    params = _split_top(m.group(1))
    required = sum(1 for p in params if "=" not in p and not p.startswith("*"))
    return f"({m.group(1)})", required, len(params)


def build(job: Dict[str, Any]) -> Outcome:
    try:
        import torch
        import torch.utils.cpp_extension as cpp_extension
    except ImportError as e:
        raise BuildSkipped(f"the torch binding needs torch: {e}")
    if job["has_cuda_sources"] and torch.version.cuda is None:
        raise BuildSkipped(
            f"needs a CUDA build of torch (this torch {torch.__version__} is CPU-only, and "
            "torch.utils.cpp_extension refuses CUDA sources)"
        )
    cuda_env(job)
    src = src_dir(job)
    texts = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in src.rglob("*") if p.is_file())
    python_module = "PYBIND11_MODULE" in texts
    namespaces = library_namespaces(src)
    if not python_module and not namespaces:
        raise BuildFailure(
            f"torch binding: the sources must export {job['entry_symbol']!r} with "
            "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) or TORCH_LIBRARY(<namespace>, m)"
        )
    build_dir = work_dir(job) / "build"
    build_dir.mkdir(parents=True, exist_ok=True)
    try:
        cpp_extension.load(
            name=job["package"],
            sources=native_sources(job),
            extra_cflags=list(job["cxx_flags"]),
            extra_cuda_cflags=list(job["cuda_flags"]),
            extra_include_paths=[str(src)],
            build_directory=str(build_dir),
            with_cuda=job["has_cuda_sources"],
            is_python_module=python_module,
            verbose=True,
        )
    except (RuntimeError, OSError, ValueError, subprocess.CalledProcessError) as e:
        raise compile_failure(e, job) from None
    library = build_dir / f"{job['package']}.so"
    symbol = job["entry_symbol"]
    try:
        fn = load_entry(library, job["package"], python_module, symbol, namespaces)
    except AttributeError:
        how = "m.def(...) in PYBIND11_MODULE" if python_module else "m.def(...) in TORCH_LIBRARY"
        raise BuildFailure(f"the extension exports no function {symbol!r} (add {how})") from None
    except (ImportError, OSError, RuntimeError) as e:
        raise BuildFailure(f"the built extension does not load: {e}", str(e)) from None
    arity = entry_arity(fn, symbol)
    if arity is not None:
        definition = Definition.model_validate(job["definition"])
        why = arity_problem(
            symbol, arity[0], arity[1], arity[2], [], definition.input_names,
            definition.output_names, job["dps"],
        )
        if why:
            raise BuildFailure(f"{job['entry_file']}: {why}")
    return Outcome.ok(
        library=str(library.relative_to(work_dir(job))),
        python_module=python_module,
        namespaces=namespaces,
        loadable_here=(not job["has_cuda_sources"]) or torch_cuda_available(),
    )
