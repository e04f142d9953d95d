"""What the build machine has: package versions, nvcc, the C++ compiler, the target GPU arch.

Everything here is cheap and torch-free, because it feeds the cache key that every build (and so
every cache hit) computes. Subprocess answers (nvcc, c++, nvidia-smi) are memoised per process.
"""
from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

DEFAULT_ARCH = "9.0"
_DIST_NAMES = {"tvm-ffi": "apache-tvm-ffi"}


@functools.lru_cache(maxsize=None)
def package_version(name: str) -> Optional[str]:
    """Installed version of a distribution, without importing it (None when absent)."""
    try:
        return importlib.metadata.version(_DIST_NAMES.get(name, name))
    except importlib.metadata.PackageNotFoundError:
        return None


# optional toolchains a language needs here, and how to get them (issue 17: a fresh set-up
# reported the shipped TileLang solution as failed, COMPILE_ERROR "tilelang is not installed")
INSTALL_HINTS = {
    "triton": "pip install triton",
    "tilelang": "pip install 'flashinfer-bench[tilelang]' (TileLang needs apache-tvm-ffi<0.1.13: use a separate environment)",
}


@functools.lru_cache(maxsize=None)
def missing_toolchain(language: str) -> Optional[str]:
    """Why this machine cannot build `language` at all (an optional package is missing), or None."""
    hint = INSTALL_HINTS.get(language)
    if hint is None or importlib.util.find_spec(language) is not None:
        return None
    return f"{language} is not installed here: {hint}"


@functools.lru_cache(maxsize=None)
def torch_build() -> Optional[Dict[str, Optional[str]]]:
    """torch's version.py values ('__version__', 'cuda'), read without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "version.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    out: Dict[str, Optional[str]] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and value is not None:
            try:
                out[target.id] = ast.literal_eval(value)
            except ValueError:
                continue
    return out if "__version__" in out else None


def torch_cuda_version() -> Optional[str]:
    """The CUDA version torch was built with; None for a CPU-only torch (or no torch)."""
    info = torch_build()
    return None if info is None else info.get("cuda")


def python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _is_cuda_prefix(p: Path) -> bool:
    return (p / "bin" / "nvcc").is_file() and (p / "include" / "cuda_runtime.h").is_file()


def _nvcc_reported_prefix(nvcc: str) -> Optional[Path]:
    """nvcc on PATH may be a wrapper script; a dry run says where the real one lives."""
    try:
        err = subprocess.run(
            [nvcc, "--dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull],
            capture_output=True, text=True, timeout=30,
        ).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"_HERE_=(\S+)", err)
    return Path(m.group(1)).parent if m else None


@functools.lru_cache(maxsize=None)
def _cuda_home_cached(env_home: Optional[str], path_env: Optional[str]) -> Optional[str]:
    if env_home and _is_cuda_prefix(Path(env_home)):
        return str(Path(env_home).resolve())
    nvcc = shutil.which("nvcc", path=path_env)
    if nvcc:
        prefix = Path(os.path.realpath(nvcc)).parent.parent
        if _is_cuda_prefix(prefix):
            return str(prefix)
        prefix = _nvcc_reported_prefix(nvcc)
        if prefix is not None and _is_cuda_prefix(prefix):
            return str(prefix.resolve())
    if _is_cuda_prefix(Path("/usr/local/cuda")):
        return str(Path("/usr/local/cuda").resolve())
    return None


def cuda_home() -> Optional[str]:
    """The CUDA toolkit prefix: $CUDA_HOME/$CUDA_PATH, else where the nvcc on PATH lives."""
    return _cuda_home_cached(
        os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH"), os.environ.get("PATH")
    )


@functools.lru_cache(maxsize=None)
def _tool_version(cmd: tuple) -> Optional[str]:
    try:
        p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0:
        return None
    return p.stdout.strip()


def nvcc_version() -> Optional[str]:
    """'13.0.88' style version of the toolkit's nvcc (None when there is no toolkit)."""
    home = cuda_home()
    if home is None:
        return None
    out = _tool_version((str(Path(home) / "bin" / "nvcc"), "--version"))
    if not out:
        return None
    m = re.search(r"release [\d.]+, V([\d.]+)", out)
    return m.group(1) if m else out.splitlines()[-1]


def cxx_version() -> Optional[str]:
    """First line of `$CXX --version` (compiler family and version)."""
    cxx = os.environ.get("CXX", "c++")
    out = _tool_version((cxx, "--version"))
    return out.splitlines()[0] if out else None


@functools.lru_cache(maxsize=None)
def _smi_rows() -> List[List[str]]:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        p = subprocess.run(
            [smi, "--query-gpu=index,uuid,compute_cap", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if p.returncode != 0:
        return []
    return [[c.strip() for c in line.split(",")] for line in p.stdout.splitlines() if line.count(",") == 2]


_DRIVER_PROBE = """
import ctypes, sys
try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError:
    sys.exit(0)
n, major, minor, dev = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(n)) != 0 or n.value == 0:
    sys.exit(0)
cuda.cuDeviceGet(ctypes.byref(dev), 0)
cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)
cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)
print(f"{major.value}.{minor.value}")
"""


@functools.lru_cache(maxsize=None)
def _driver_arch(visible: Optional[str]) -> Optional[str]:
    """Ask the CUDA driver, in a subprocess (initialising CUDA here would break a later fork)."""
    if not Path("/dev/nvidiactl").exists():
        return None
    try:
        p = subprocess.run([sys.executable, "-c", _DRIVER_PROBE], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    out = p.stdout.strip()
    return out if re.fullmatch(r"\d+\.\d+", out) else None


def visible_gpu_arch() -> Optional[str]:
    """Compute capability ('9.0') of the first GPU this process may use: nvidia-smi, else the
    CUDA driver (probed in a subprocess), else None."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    rows = _smi_rows()
    if not rows:
        return _driver_arch(visible)
    if visible is None:
        return rows[0][2]
    first = visible.split(",")[0].strip()
    if first in ("", "-1", "none", "NoDevFiles"):
        return None
    for idx, uuid, cap in rows:
        if first == idx or (first.startswith("GPU-") and uuid.startswith(first)):
            return cap
    return rows[0][2]  # MIG ids and other forms: assume a homogeneous machine


def _normalise_arch_list(value: str) -> str:
    items = [a.strip().removesuffix("+PTX") for a in re.split(r"[;\s,]+", value) if a.strip()]
    return " ".join(items)


def target_arch() -> str:
    """The GPU architecture builds target, as a space-separated list ('9.0', '8.0 9.0a').

    Order: $FIB_CUDA_ARCH (explicit override, e.g. '9.0a' for wgmma/TMA), the visible GPU,
    $TORCH_CUDA_ARCH_LIST / $TVM_FFI_CUDA_ARCH_LIST, else 9.0 (the Hopper machines we run on).
    """
    override = os.environ.get("FIB_CUDA_ARCH")
    if override and override.strip():
        return _normalise_arch_list(override)
    gpu = visible_gpu_arch()
    if gpu:
        return gpu
    for var in ("TORCH_CUDA_ARCH_LIST", "TVM_FFI_CUDA_ARCH_LIST"):
        v = os.environ.get(var)
        if v and _normalise_arch_list(v):
            return _normalise_arch_list(v)
    return DEFAULT_ARCH


def gpu_visible() -> bool:
    """Whether nvidia-smi reports a GPU this process may use (decides Triton interpret mode)."""
    return visible_gpu_arch() is not None


def triton_backend() -> str:
    """'interpreter' when Triton will run under TRITON_INTERPRET=1 here, else 'cuda'."""
    if os.environ.get("TRITON_INTERPRET", "").strip().lower() in ("1", "true", "on", "yes"):
        return "interpreter"
    return "cuda" if gpu_visible() else "interpreter"


def describe() -> Dict[str, Optional[str]]:
    """Everything known about the toolchains, for logs and the GPU check script."""
    return {
        "python": python_version(),
        "torch": package_version("torch"),
        "triton": package_version("triton"),
        "tvm-ffi": package_version("tvm-ffi"),
        "tilelang": package_version("tilelang"),
        "nvcc": nvcc_version(),
        "cuda_home": cuda_home(),
        "cxx": cxx_version(),
        "arch": target_arch(),
    }
