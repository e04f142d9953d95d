"""Small definitions and inline solutions for the compile tests (no dependency on dataset/)."""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Dict, Optional

from flashinfer_bench.data import Definition, Solution

VADD = Definition(
    name="vadd_fp32",
    op_type="elementwise",
    description="c = a + b over a vector of fp32",
    axes={"N": {"type": "var"}},
    inputs={"a": {"shape": ["N"], "dtype": "float32"}, "b": {"shape": ["N"], "dtype": "float32"}},
    outputs={"c": {"shape": ["N"], "dtype": "float32"}},
    reference="def run(a, b):\n    return a + b\n",
)

# Two outputs, to exercise tuple / dict returns and DPS with several outputs.
ADDSUB = Definition(
    name="addsub_fp32",
    op_type="elementwise",
    axes={"N": {"type": "var"}},
    inputs={"a": {"shape": ["N"], "dtype": "float32"}, "b": {"shape": ["N"], "dtype": "float32"}},
    outputs={"s": {"shape": ["N"], "dtype": "float32"}, "d": {"shape": ["N"], "dtype": "float32"}},
    reference="def run(a, b):\n    return a + b, a - b\n",
)

PY_ADD = "def run(a, b):\n    return a + b\n"
PY_ADD_DPS = "def run(a, b, c):\n    c[:] = a + b\n"

TRITON_ADD = textwrap.dedent(
    """
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(a, b, c, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(c + offs, tl.load(a + offs, mask=m) + tl.load(b + offs, mask=m), mask=m)

    def run(a, b, c):
        n = a.numel()
        add_kernel[(triton.cdiv(n, 128),)](a, b, c, n, BLOCK=128)
    """
)

CUDA_ADD_TVM = textwrap.dedent(
    """\
    #include <tvm/ffi/container/tensor.h>
    #include <tvm/ffi/function.h>

    __global__ void add_kernel(const float* a, const float* b, float* c, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) c[i] = a[i] + b[i];
    }

    void run(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
      int n = static_cast<int>(a.shape()[0]);
      add_kernel<<<(n + 255) / 256, 256>>>(static_cast<const float*>(a.data_ptr()),
                                           static_cast<const float*>(b.data_ptr()),
                                           static_cast<float*>(c.data_ptr()), n);
    }
    TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run);
    """
)

CPP_ADD_TVM = textwrap.dedent(
    """\
    #include <tvm/ffi/container/tensor.h>
    #include <tvm/ffi/function.h>

    void run(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
      const float* x = static_cast<const float*>(a.data_ptr());
      const float* y = static_cast<const float*>(b.data_ptr());
      float* z = static_cast<float*>(c.data_ptr());
      for (int64_t i = 0; i < a.shape()[0]; ++i) z[i] = x[i] + y[i];
    }
    TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run);
    """
)

TORCH_ADD_CPP = textwrap.dedent(
    """\
    #include <torch/extension.h>
    torch::Tensor run(torch::Tensor a, torch::Tensor b) { return a + b; }
    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }
    """
)

TORCH_ADD_CU = textwrap.dedent(
    """\
    #include <torch/extension.h>
    __global__ void add_kernel(const float* a, const float* b, float* c, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) c[i] = a[i] + b[i];
    }
    void run(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
      int n = a.numel();
      add_kernel<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);
    }
    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }
    """
)


def solution(
    files: Dict[str, str],
    entry: str,
    language: str = "python",
    dps: bool = False,
    name: str = "sol",
    binding: Optional[str] = None,
    definition: Definition = VADD,
    **extra,
) -> Solution:
    spec = {"language": language, "entry_point": entry, "destination_passing_style": dps}
    if binding:
        spec["binding"] = binding
    return Solution(
        name=name,
        definition=definition.name,
        author=extra.pop("author", "tests"),
        spec=spec,
        sources=[{"path": p, "content": c} for p, c in files.items()],
        **extra,
    )


def daemon_pid_in_logs(cache: Path, within_s: float = 60.0) -> Optional[int]:
    """The pid a build's daemon printed ("DAEMON PID n") into a build log under `cache`, waiting
    up to `within_s` for it; None when none appeared."""
    import re
    import time

    end = time.monotonic() + within_s
    while time.monotonic() < end:
        for log in cache.rglob("build.log"):
            m = re.search(r"DAEMON PID (\d+)", log.read_text(errors="replace"))
            if m:
                return int(m.group(1))
        time.sleep(0.2)
    return None


def state_after(pid: int, within_s: float = 10.0) -> Optional[str]:
    """`pid`'s task state once it is gone or a zombie, or after `within_s` (None: gone)."""
    import time

    from flashinfer_bench.sandbox.procfs import task_state

    end = time.monotonic() + within_s
    while time.monotonic() < end and task_state(pid) not in (None, "Z"):
        time.sleep(0.1)
    return task_state(pid)
