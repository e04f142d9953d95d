"""Imports flow one way (docs/internals.md): data <- compile <- bench <- tracing/apply/report <-
pipeline (the workflow) <- cli, with no circle between two modules.

Every way one of our modules reaches another counts, wherever it stands (a function-level import
is still a dependency): `import`/`from ... import`, a module named in a string (an
`importlib.import_module` argument, a lazy-import table, a `python -m` command line), and a file
of the package loaded by path (`_PKG / "bench" / "protocol.py"`, as the stdlib-only job clients
do). Run as a script, it prints the edges that break a rule.
"""
from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

PKG = Path(__file__).resolve().parents[1] / "flashinfer_bench"
ROOT = "flashinfer_bench"

# What each part may import (besides itself). `atomic`, `env`, `device`, `fingerprint`, `measure_lock` are
# helpers that import nothing of ours; `sandbox` is the confinement library the builders and the
# runners apply.
_BASE = {"atomic", "env", "device", "fingerprint", "measure_lock"}
ALLOWED: Dict[str, Set[str]] = {
    "atomic": set(),
    "env": set(),
    "device": set(),
    "fingerprint": set(),
    "measure_lock": set(),
    "agents": set(),  # instructions for agents: text only
    "data": _BASE,
    "sandbox": _BASE,
    "compile": {"data", "sandbox"} | _BASE,  # builders know no runner
    "bench": {"compile", "data", "sandbox"} | _BASE,
    "tracing": {"data"} | _BASE,
    # apply runs inside the user's program: it builds winners (compile) and feeds the tracer from
    # its call sites, but never loads the evaluator (bench)
    "apply": {"tracing", "compile", "data"} | _BASE,
    "report": {"bench", "compile", "data"} | _BASE,
    "pipeline": {"report", "apply", "tracing", "bench", "compile", "data", "sandbox"} | _BASE,
    "cli": {"pipeline", "report", "apply", "tracing", "bench", "compile", "data", "sandbox"} | _BASE,
    "__main__": {"cli"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules() -> Dict[str, Path]:
    # _workflow holds links to the repository's workflow files (package data for the wheel)
    return {module_name(p): p for p in sorted(PKG.rglob("*.py")) if "_workflow" not in p.relative_to(PKG).parts}


def part(module: str) -> str:
    """The layer a module belongs to: its sub-package, or a top-level module's own name."""
    bits = module.split(".")
    return bits[1] if len(bits) > 1 else ROOT


def _from_target(module: str, is_pkg: bool, node: ast.ImportFrom, modules: Dict[str, Path]) -> List[str]:
    if node.level:
        base = module.split(".")[: len(module.split(".")) - (0 if is_pkg else 1)]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    if prefix == ROOT and all(a.name == "__version__" for a in node.names):
        return []  # the root package is imported before any of its modules: no layer dependency
    out = []
    for a in node.names:
        sub = f"{prefix}.{a.name}"
        out.append(sub if sub in modules else prefix)
    return out


def _path_target(node: ast.BinOp, modules: Dict[str, Path]) -> str:
    """`<anything> / "bench" / "protocol.py"` -> flashinfer_bench.bench.protocol (else "")."""
    names: List[str] = []
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        if not (isinstance(node.right, ast.Constant) and isinstance(node.right.value, str)):
            return ""
        names.insert(0, node.right.value)
        node = node.left
    if not names or not names[-1].endswith(".py"):
        return ""
    names[-1] = names[-1][:-3]
    for i in range(len(names)):
        cand = ".".join([ROOT, *names[i:]])
        if cand in modules:
            return cand
    return ""


def edges() -> Iterator[Tuple[str, str, int, str]]:
    """(importer, imported, line, how) for every reference of one of our modules to another."""
    modules = package_modules()
    for mod, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            targets: List[Tuple[str, str]] = []
            if isinstance(node, ast.Import):
                targets = [(a.name, "import") for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                targets = [(t, "import") for t in _from_target(mod, path.name == "__init__.py", node, modules)]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in modules and node.value != ROOT:
                # (the bare package name is also a logger's and a distribution's name)
                targets = [(node.value, "module named in a string")]
            elif isinstance(node, ast.BinOp):
                t = _path_target(node, modules)
                targets = [(t, "file loaded by path")] if t else []
            for target, how in targets:
                if target.split(".")[0] == ROOT and target != mod:
                    yield mod, target, getattr(node, "lineno", 0), how


def layer_violations() -> List[str]:
    out = []
    for src, dst, line, how in edges():
        a, b = part(src), part(dst)
        if a == b or a == ROOT:  # the root package is the seeds' facade over everything
            continue
        if b not in ALLOWED.get(a, set()):
            out.append(f"{src} -> {dst} ({how}, line {line}): {a} may not import {b}")
    return sorted(set(out))


def circles() -> List[List[str]]:
    """Sets of modules that reach each other (strongly connected components of two or more)."""
    graph: Dict[str, Set[str]] = defaultdict(set)
    for src, dst, _, _ in edges():
        graph[src].add(dst)
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_part_has_a_layer() -> None:
    parts = {part(m) for m in package_modules()} - {ROOT}
    assert parts <= set(ALLOWED), f"parts without a rule in ALLOWED: {sorted(parts - set(ALLOWED))}"


def test_the_checker_sees_every_kind_of_reference() -> None:
    hows = {how for _, _, _, how in edges()}
    assert {"import", "module named in a string", "file loaded by path"} <= hows


def test_imports_flow_one_way() -> None:
    bad = layer_violations()
    assert not bad, "imports against the layers:\n" + "\n".join(bad)


def test_no_import_circles() -> None:
    found = circles()
    assert not found, "modules that import each other:\n" + "\n".join(" <-> ".join(c) for c in found)


if __name__ == "__main__":
    for line in layer_violations():
        print("layer:", line)
    for c in circles():
        print("circle:", " <-> ".join(c))
    sys.exit(1 if layer_violations() or circles() else 0)
