"""load_runnable(): an artifact's entry function, ready to call, in this process.

Triton: when torch sees no usable GPU, this sets TRITON_INTERPRET=1 in os.environ before the
solution module is imported (Triton reads it when @triton.jit decorates, so it takes effect even
if triton itself was imported earlier; a program that set triton.knobs.runtime.interpret
explicitly keeps its own setting). TRITON_CACHE_DIR is pointed at the artifact's triton_cache
when loading, and again before each call if something else changed it, so the kernels compiled
at build time are found instead of being JIT-compiled again. TRITON_CACHE_AUTOTUNING defaults to
1 (at build and load), so @triton.autotune results for the warm-up shapes travel with the artifact.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from ..data import Definition
from .cache import manifest_problem, read_manifest
from .pyimport import EntryError, import_entry
from .runnable import LoadError, Runnable
from .sources import SRC_DIR


def load_runnable(artifact_dir: Path, definition: Definition) -> Runnable:
    artifact_dir = Path(artifact_dir)
    m = read_manifest(artifact_dir)
    if m is None:
        raise LoadError(f"{artifact_dir}: no successful build here: {manifest_problem(artifact_dir)}")
    language = m["language"]
    entry_file, symbol = m["entry_point"].split("::")
    before: Optional[Callable[[], None]] = None
    if language in ("python", "triton", "tilelang"):
        if language == "triton":
            before = _prepare_triton(artifact_dir)
        elif language == "tilelang":
            os.environ["TILELANG_CACHE_DIR"] = _writable(artifact_dir / m.get("tilelang_cache", "tilelang_cache"))
        try:
            fn = import_entry(m["package"], artifact_dir / SRC_DIR, entry_file, symbol)
        except EntryError as e:
            raise LoadError(str(e)) from None
    elif m.get("binding") == "torch":
        _require_gpu_for_cuda(m, artifact_dir)
        from .builders.torch_ext import load_entry

        try:
            fn = load_entry(
                artifact_dir / m["library"], m["package"], bool(m.get("python_module")), symbol,
                list(m.get("namespaces", [])),
            )
        except (AttributeError, ImportError, OSError) as e:
            raise LoadError(f"{artifact_dir}: cannot load the extension: {e}") from None
    else:
        _require_gpu_for_cuda(m, artifact_dir)
        import tvm_ffi

        try:
            fn = getattr(tvm_ffi.load_module(str(artifact_dir / m["library"])), symbol)
        except (AttributeError, RuntimeError, OSError) as e:
            raise LoadError(f"{artifact_dir}: cannot load the library: {e}") from None
    return Runnable(
        fn, definition, bool(m["destination_passing_style"]), language=language,
        artifact_dir=artifact_dir, manifest=m, before_call=before,
    )


def _require_gpu_for_cuda(m: Dict[str, Any], artifact_dir: Path) -> None:
    if "nvcc" not in m.get("toolchain", {}):
        return  # C++ only: runs on the CPU
    import torch

    if not torch.cuda.is_available():
        raise LoadError(f"{artifact_dir}: a CUDA artifact needs a GPU; this process has none")


def _prepare_triton(artifact_dir: Path) -> Callable[[], None]:
    import torch

    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"
    os.environ.setdefault("TRITON_CACHE_AUTOTUNING", "1")  # reuse the build's autotuning results
    cache = _writable(artifact_dir / "triton_cache")
    os.environ["TRITON_CACHE_DIR"] = cache
    environ = os.environ

    def point_cache_here() -> None:
        if environ.get("TRITON_CACHE_DIR") != cache:
            environ["TRITON_CACHE_DIR"] = cache

    return point_cache_here


def _writable(cache: Path) -> str:
    """`cache`, or in a confined runner (FIB_SANDBOX_SCRATCH set) a copy of it in the runner's
    scratch directory: the artifact is read-only there, and a kernel compiled for a shape the build
    did not warm up must be written somewhere (bench.sandbox, issue 9)."""
    scratch = os.environ.get("FIB_SANDBOX_SCRATCH")
    if not scratch:
        return str(cache)
    import hashlib

    dest = Path(scratch) / "caches" / hashlib.sha256(str(cache).encode()).hexdigest()[:16]
    if not dest.is_dir():
        if cache.is_dir():
            _copy_contents(cache, dest)
        else:
            dest.mkdir(parents=True, exist_ok=True)
    return str(dest)


def _copy_contents(src: Path, dest: Path) -> None:
    """Files, directories and links of `src` under `dest`, without their metadata: the runner's
    seccomp filter refuses chmod and utime, which shutil.copytree calls on every file and directory
    (copy2, copystat)."""
    import shutil

    for dirpath, dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for name in [*filenames, *(d for d in dirnames if (Path(dirpath) / d).is_symlink())]:
            s, d = Path(dirpath) / name, dest / rel / name
            if s.is_symlink():
                os.symlink(os.readlink(s), d)
            else:
                shutil.copyfile(s, d)
