"""Checking and staging a solution's sources: safe paths, syntax, unique import names."""
from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import List, Optional

from ..data import Definition, Solution

SRC_DIR = "src"  # sources live in <artifact>/src/, exactly as the solution lists them
PY_LANGS = ("python", "triton", "tilelang")
NATIVE_SUFFIXES = (".cu", ".cc", ".cpp", ".cxx", ".c")


def package_name(language: str, digest: str) -> str:
    """Import name of the artifact's package: unique per artifact, so two solutions with the same
    file names never collide in one process."""
    return f"fib_{language}_{digest[:16]}"


def spec_problems(solution: Solution, definition: Definition) -> List[str]:
    """Problems that make a build impossible before any code runs (bad paths, wrong entry file)."""
    out = list(solution.problems())
    if solution.definition != definition.name:
        out.append(
            f"solution {solution.name!r} implements definition {solution.definition!r}, "
            f"but was built against {definition.name!r}"
        )
    entry = PurePosixPath(solution.spec.entry_file)
    lang = solution.spec.language.value
    if lang in PY_LANGS and entry.suffix != ".py":
        out.append(f"spec.entry_point: a {lang} entry file must be a .py file, got {str(entry)!r}")
    if lang in ("cuda", "cpp") and not any(
        PurePosixPath(s.path).suffix in NATIVE_SUFFIXES for s in solution.sources
    ):
        out.append(
            f"sources: a {lang} solution needs at least one of {', '.join(NATIVE_SUFFIXES)} to compile"
        )
    if lang in ("cuda", "cpp") and solution.spec.effective_binding == "torch":
        text = "\n".join(s.content for s in solution.sources)
        if "PYBIND11_MODULE" not in text and not re.search(r"\bTORCH_LIBRARY", text):
            out.append(
                f"torch binding: the sources must export {solution.spec.entry_symbol!r} with "
                "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) or TORCH_LIBRARY(<namespace>, m)"
            )
    return out


def syntax_problem(solution: Solution) -> Optional[str]:
    """'file:line: SyntaxError: msg' for the first Python source that does not parse."""
    if solution.spec.language.value not in PY_LANGS:
        return None
    for s in solution.sources:
        if PurePosixPath(s.path).suffix != ".py":
            continue
        try:
            compile(s.content, s.path, "exec", dont_inherit=True)
        except SyntaxError as e:
            col = f":{e.offset}" if e.offset else ""
            return f"{s.path}:{e.lineno}{col}: SyntaxError: {e.msg}"
        except ValueError as e:  # e.g. null bytes in the source
            return f"{s.path}: cannot compile: {e}"
    return None


def write_sources(solution: Solution, dest: Path) -> Path:
    """Write every source under dest/src/ (paths already checked relative and inside)."""
    root = dest / SRC_DIR
    root.mkdir(parents=True, exist_ok=True)
    resolved_root = root.resolve()
    for s in solution.sources:
        target = (root / PurePosixPath(s.path)).resolve()
        if resolved_root not in target.parents:
            raise ValueError(f"source path {s.path!r} escapes the solution directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(s.content, encoding="utf-8")
    return root


def module_name(entry_file: str) -> Optional[str]:
    """Dotted module path of a .py entry inside the package, or None if not importable by name."""
    parts = list(PurePosixPath(entry_file).with_suffix("").parts)
    if all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p) for p in parts):
        return ".".join(parts)
    return None
