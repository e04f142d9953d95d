"""The cache key: a content hash of everything that changes the built artifact, and nothing else.

In the key: language, entry point, binding, calling convention, dependencies, every source path
and byte, our compiler flags and builder version, the toolchain versions relevant to the language,
the target GPU architecture (languages compiled for a GPU), and the definition's interface (axes,
tensor names/shapes/dtypes, constraints: the build checks the entry's signature against it and
the Triton warm-up runs on inputs made from it). Not in the key: the solution's name, author,
description, target_hardware; the definition's name, description, tags and reference.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import PurePosixPath
from typing import Any, Dict, List, Optional, Tuple

from ..data import Definition, Solution
from ..data.signature import effective_dps
from . import toolchain as tc

# Bump when a builder changes how it builds (flags, layout of the artifact, warm-up policy).
BUILDER_VERSION = 1

CXX_FLAGS: Tuple[str, ...] = ("-O3",)
# nvcc: -O only affects host code (ptxas optimises device code at -O3 by default).
CUDA_FLAGS: Tuple[str, ...] = ("-lineinfo",)

PYTHON_LANGS = ("python", "triton", "tilelang")
NATIVE_LANGS = ("cuda", "cpp")


def source_digest(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def definition_interface(definition: Definition) -> Dict[str, Any]:
    """The parts of a definition a build depends on (not its name, description or reference)."""

    def tensors(specs: Dict[str, Any]) -> List[Any]:
        return [[n, s.shape, s.dtype.value] for n, s in specs.items()]

    return {
        "axes": {
            k: (["const", a.value] if a.type == "const" else ["var"])
            for k, a in definition.axes.items()
        },
        "inputs": tensors(definition.inputs),
        "outputs": tensors(definition.outputs),
        "constraints": list(definition.constraints),
    }


def toolchain_for(language: str, binding: Optional[str], has_cuda_sources: bool) -> Dict[str, Any]:
    """Toolchain versions (and target arch) that the language's artifact depends on."""
    tc_: Dict[str, Any] = {"python": tc.python_version()}
    if language == "python":
        tc_["torch"] = tc.package_version("torch")
    elif language == "triton":
        tc_.update(
            torch=tc.package_version("torch"),
            triton=tc.package_version("triton"),
            triton_backend=tc.triton_backend(),
            arch=tc.target_arch(),
        )
    elif language == "tilelang":
        tc_.update(
            torch=tc.package_version("torch"),
            tilelang=tc.package_version("tilelang"),
            arch=tc.target_arch(),
        )
    elif binding == "torch":
        tc_.update(torch=tc.package_version("torch"), cxx=tc.cxx_version())
        if has_cuda_sources:
            tc_.update(torch_cuda=tc.torch_cuda_version(), nvcc=tc.nvcc_version(), arch=tc.target_arch())
    else:  # tvm-ffi: a C ABI, independent of the Python and torch versions
        del tc_["python"]
        tc_.update(**{"tvm-ffi": tc.package_version("tvm-ffi"), "cxx": tc.cxx_version()})
        if has_cuda_sources:
            tc_.update(nvcc=tc.nvcc_version(), arch=tc.target_arch())
    return tc_


def has_cuda_sources(solution: Solution) -> bool:
    return solution.spec.language.value == "cuda" or any(
        PurePosixPath(s.path).suffix == ".cu" for s in solution.sources
    )


def build_key(solution: Solution, definition: Definition) -> Dict[str, Any]:
    """The JSON-able payload whose hash names the artifact."""
    spec = solution.spec
    language = spec.language.value
    binding = spec.effective_binding
    cuda = has_cuda_sources(solution)
    if language in NATIVE_LANGS:
        flags: Dict[str, Any] = {"cxx": list(CXX_FLAGS)}
        if cuda:
            flags["cuda"] = list(CUDA_FLAGS)
    else:
        flags = {}
    return {
        "builder_version": BUILDER_VERSION,
        "language": language,
        "entry_point": spec.entry_point,
        "binding": binding,
        "destination_passing_style": effective_dps(solution, definition),
        "dependencies": sorted(spec.dependencies),
        "sources": sorted(
            [str(PurePosixPath(s.path)), source_digest(s.content)] for s in solution.sources
        ),
        "flags": flags,
        "toolchain": toolchain_for(language, binding, cuda),
        "definition": definition_interface(definition),
    }


def key_hash(key: Dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode("utf-8")).hexdigest()
