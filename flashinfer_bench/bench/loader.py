"""Building and loading solutions: through `flashinfer_bench.compile` when it is there.

Until the compile package lands, a tiny internal shim builds and loads Python and Triton
solutions (sources written to a content-addressed directory, the entry imported from it); every
other language reports SKIPPED. Torch-free at import.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from ..data import Definition, Solution


def _compile_module() -> Optional[Any]:
    try:
        mod = importlib.import_module("flashinfer_bench.compile")
    except ImportError:
        return None
    # `load_runnable` is a lazy attribute there (it imports torch): look it up by name only
    if hasattr(mod, "build") and "load_runnable" in getattr(mod, "__all__", ()):
        return mod
    return None


def compile_available() -> bool:
    return _compile_module() is not None


def build_to_dict(build: Any) -> Dict[str, Any]:
    """A BuildResult (object with to_dict, dataclass or dict) as a plain dict."""
    if isinstance(build, dict):
        return dict(build)
    if hasattr(build, "to_dict"):
        return dict(build.to_dict())
    if hasattr(build, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(build)
    raise TypeError(f"cannot read a build result from {type(build).__name__}")


def build_solution(solution: Solution, definition: Definition, cache_dir: Optional[Path] = None) -> Dict[str, Any]:
    """Build (or find in the cache) one solution; never raises for a bad solution."""
    mod = _compile_module()
    if mod is not None:
        return build_to_dict(mod.build(solution, definition, cache_dir))
    return _shim_build(solution, cache_dir)


def load_runnable(build: Dict[str, Any], definition: Definition) -> Any:
    """The callable of a built artifact (raises what the solution's import raises)."""
    mod = _compile_module()
    if mod is not None and not build.get("shim"):
        return mod.load_runnable(Path(build["artifact_dir"]), definition)
    return _shim_load(build, definition)


# ----------------------------------------------------------------------------- the shim
_SHIM_LANGS = ("python", "triton")


def _shim_build(solution: Solution, cache_dir: Optional[Path]) -> Dict[str, Any]:
    from ..env import cache_path

    t0 = time.perf_counter()
    h = solution.content_hash()
    lang = solution.spec.language.value
    base = {"hash": h, "language": lang, "cache_hit": False, "toolchain": {"builder": "bench-shim"}, "shim": True,
            "solution_hash": h}
    if lang not in _SHIM_LANGS:
        return {
            **base, "status": "SKIPPED", "artifact_dir": "",
            "log": f"no builder for language {lang!r} until flashinfer_bench.compile is installed",
            "build_seconds": 0.0,
        }
    problems = solution.problems()
    if problems:
        return {**base, "status": "COMPILE_ERROR", "artifact_dir": "", "log": "\n".join(problems), "build_seconds": 0.0}
    root = Path(cache_dir) if cache_dir else cache_path()
    final = root / "shim" / h
    if (final / ".complete").is_file():
        return {**base, "status": "OK", "artifact_dir": str(final), "log": "", "cache_hit": True,
                "build_seconds": time.perf_counter() - t0}
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{h[:12]}.", dir=final.parent))
    try:
        for src in solution.sources:
            p = tmp / src.path
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(src.content, encoding="utf-8")
        entry = tmp / solution.spec.entry_file
        try:
            compile(entry.read_text(encoding="utf-8"), str(entry), "exec")
        except SyntaxError as e:
            return {**base, "status": "COMPILE_ERROR", "artifact_dir": "",
                    "log": f"{solution.spec.entry_file}:{e.lineno}: SyntaxError: {e.msg}", "build_seconds": time.perf_counter() - t0}
        (tmp / "entry.txt").write_text(
            f"{solution.spec.entry_point}\n{int(solution.spec.destination_passing_style)}\n", encoding="utf-8"
        )
        (tmp / ".complete").write_text("ok\n")
        try:
            os.rename(tmp, final)
        except OSError:
            if not (final / ".complete").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return {**base, "status": "OK", "artifact_dir": str(final), "log": "", "build_seconds": time.perf_counter() - t0}


class ShimRunnable:
    """Both calling conventions over the solution's native one."""

    def __init__(self, fn: Callable[..., Any], dps: bool, definition: Definition) -> None:
        self.fn = fn
        self.dps = dps
        self._n_in = len(definition.inputs)
        self._definition = definition

    def __call__(self, *args: Any) -> Any:
        """The native convention."""
        return self.fn(*args)

    def call_dps(self, *args: Any) -> None:
        if self.dps:
            self.fn(*args)
            return
        inputs, outs = args[: self._n_in], args[self._n_in :]
        res = self.fn(*inputs)
        res = res if isinstance(res, (tuple, list)) else (res,)
        for o, r in zip(outs, res):
            o.copy_(r)

    def call_value_returning(self, *inputs: Any) -> tuple:
        if not self.dps:
            res = self.fn(*inputs)
            return tuple(res) if isinstance(res, (tuple, list)) else (res,)
        raise NotImplementedError("value-returning calls of a DPS shim solution are not needed by the evaluator")


def _shim_load(build: Dict[str, Any], definition: Definition) -> ShimRunnable:
    art = Path(build["artifact_dir"])
    entry_point, dps = (art / "entry.txt").read_text(encoding="utf-8").split("\n")[:2]
    file, symbol = entry_point.split("::")
    name = "fib_solution_" + hashlib.sha256(str(art).encode()).hexdigest()[:16]
    if str(art) not in sys.path:
        sys.path.insert(0, str(art))
    spec = importlib.util.spec_from_file_location(name, art / file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {art / file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    fn = getattr(module, symbol, None)
    if not callable(fn):
        raise AttributeError(f"{file} has no callable {symbol!r}")
    return ShimRunnable(fn, dps == "1", definition)
