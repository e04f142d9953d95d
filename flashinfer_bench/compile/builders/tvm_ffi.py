"""CUDA/C++ with the tvm-ffi binding (upstream's default): `tvm_ffi.cpp.build` into a shared
library inside the artifact, then `tvm_ffi.load_module` to check the entry is exported.

Loading the library needs no GPU (the CUDA driver is linked 'as needed'), so the export check
runs on CPU machines too; running a CUDA kernel does need one, hence `loadable_here`.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any, Dict, List, Optional

from ..messages import compiler_errors, relativise
from ..sources import NATIVE_SUFFIXES
from .common import BuildFailure, BuildSkipped, Outcome, src_dir, torch_cuda_available, work_dir


def native_sources(job: Dict[str, Any]) -> List[str]:
    return [
        str(src_dir(job) / p) for p in job["source_paths"] if PurePosixPath(p).suffix in NATIVE_SUFFIXES
    ]


def cuda_env(job: Dict[str, Any]) -> None:
    """Point the build at the toolkit and the target arch (there may be no GPU to detect)."""
    if job["has_cuda_sources"]:
        if not job.get("cuda_home"):
            raise BuildSkipped("nvcc (the CUDA toolkit) was not found: set CUDA_HOME or put nvcc on PATH")
        os.environ["CUDA_HOME"] = job["cuda_home"]
        os.environ["PATH"] = f"{job['cuda_home']}/bin{os.pathsep}{os.environ.get('PATH', '')}"
        arch = job["arch"].split()
        os.environ["TVM_FFI_CUDA_ARCH_LIST"] = " ".join(arch)
        os.environ["TORCH_CUDA_ARCH_LIST"] = ";".join(arch)


def _libcuda(cuda_home: Path) -> Optional[Path]:
    """A libcuda to link the driver API against: the toolkit's stub, else the driver itself."""
    dirs = [cuda_home / "lib64" / "stubs", cuda_home / "lib" / "stubs",
            *sorted(cuda_home.glob("targets/*/lib/stubs")),
            Path("/usr/lib/x86_64-linux-gnu"), Path("/usr/lib64"), Path("/usr/local/nvidia/lib64")]
    for d in dirs:
        for name in ("libcuda.so", "libcuda.so.1"):
            if (d / name).exists():
                return d / name
    return None


def cuda_ldflags(cuda_home: Path) -> List[str]:
    """rpath to the toolkit's cudart (found at load time without LD_LIBRARY_PATH), and the
    driver library linked only if the code calls the driver API (--as-needed)."""
    flags = [f"-Wl,-rpath,{cuda_home / 'lib64'}"]
    lib = _libcuda(cuda_home)
    if lib is not None:
        flags += [f"-L{lib.parent}", "-Wl,--as-needed", f"-l:{lib.name}", "-Wl,--no-as-needed"]
    else:
        print("note: no libcuda.so found to link; solutions calling the CUDA driver API will not load")
    return flags


def compile_failure(err: BaseException, job: Dict[str, Any]) -> BuildFailure:
    text = relativise(str(err), src_dir(job))
    errors = compiler_errors(text)
    lines = text.strip().splitlines()
    summary = "; ".join(errors) if errors else (lines[-1] if lines else type(err).__name__)
    return BuildFailure(f"compilation failed: {summary}", text)


def build(job: Dict[str, Any]) -> Outcome:
    cuda_env(job)
    try:
        import tvm_ffi
        import tvm_ffi.cpp
    except ImportError as e:
        raise BuildSkipped(f"apache-tvm-ffi is not installed (pip install apache-tvm-ffi): {e}")
    build_dir = work_dir(job) / "build"
    build_dir.mkdir(parents=True, exist_ok=True)
    ldflags: List[str] = []
    if job["has_cuda_sources"]:
        ldflags += cuda_ldflags(Path(job["cuda_home"]))
    try:
        files = native_sources(job)
        # cpp_files / cuda_files: accepted by every apache-tvm-ffi release (newer ones merge them)
        lib = tvm_ffi.cpp.build(
            name=job["package"],
            cpp_files=[f for f in files if not f.endswith(".cu")],
            cuda_files=[f for f in files if f.endswith(".cu")],
            extra_cflags=list(job["cxx_flags"]),
            extra_cuda_cflags=list(job["cuda_flags"]),
            extra_ldflags=ldflags,
            extra_include_paths=[str(src_dir(job))],
            build_directory=str(build_dir),
        )
    except (RuntimeError, OSError, ValueError, subprocess.CalledProcessError) as e:
        raise compile_failure(e, job) from None
    rel = os.path.relpath(lib, work_dir(job))
    try:
        mod = tvm_ffi.load_module(lib)
    except (RuntimeError, OSError) as e:
        if "libcuda" in str(e) and not torch_cuda_available():
            return Outcome.ok(library=rel, loadable_here=False,
                              note="export not checked: the library needs the CUDA driver")
        raise BuildFailure(f"the built library does not load: {e}", str(e)) from None
    symbol = job["entry_symbol"]
    try:
        getattr(mod, symbol)
    except AttributeError:
        raise BuildFailure(
            f"{job['entry_file']}: the library exports no function {symbol!r}; export it with "
            f"TVM_FFI_DLL_EXPORT_TYPED_FUNC({symbol}, <your function>)"
        ) from None
    loadable = (not job["has_cuda_sources"]) or torch_cuda_available()
    return Outcome.ok(library=rel, loadable_here=loadable)
