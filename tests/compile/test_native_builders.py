"""CUDA / C++ solutions. On CPU: CUDA compiles with nvcc (tvm-ffi binding) and stops there; C++
with tvm-ffi builds, loads and runs; CUDA with the torch binding needs a CUDA torch (SKIPPED)."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
import torch

from flashinfer_bench.compile import COMPILE_ERROR, OK, SKIPPED, build, load_runnable
from flashinfer_bench.compile import LoadError

from .helpers import CPP_ADD_TVM, CUDA_ADD_TVM, TORCH_ADD_CPP, TORCH_ADD_CU, VADD, solution

pytest.importorskip("tvm_ffi")
needs_nvcc = pytest.mark.skipif(
    shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(), reason="no nvcc"
)


def _published(cache: Path) -> list:
    arts = cache / "artifacts"
    return list(arts.iterdir()) if arts.exists() else []


@needs_nvcc
def test_good_cuda_kernel_compiles(cache):
    r = build(solution({"kernel.cu": CUDA_ADD_TVM}, "kernel.cu::run", language="cuda", dps=True), VADD, cache)
    assert r.status == OK, r.log
    m = json.loads((Path(r.artifact_dir) / "manifest.json").read_text())
    assert m["binding"] == "tvm-ffi"  # upstream's default when binding is unset
    assert (Path(r.artifact_dir) / m["library"]).is_file()
    assert m["toolchain"]["nvcc"] and m["toolchain"]["arch"]
    assert r.loadable_here == m["loadable_here"] == torch.cuda.is_available()
    if not torch.cuda.is_available():
        with pytest.raises(LoadError, match="needs a GPU"):
            load_runnable(Path(r.artifact_dir), VADD)


@needs_nvcc
def test_broken_cuda_kernel_gives_nvcc_file_and_line(cache):
    broken = CUDA_ADD_TVM.replace("c[i] = a[i] + b[i];", "c[i] = a[i] + undeclared_value;")
    r = build(solution({"kernel.cu": broken}, "kernel.cu::run", language="cuda", dps=True), VADD, cache)
    assert r.status == COMPILE_ERROR
    assert 'kernel.cu:6: error: identifier "undeclared_value" is undefined' in r.message, r.message
    assert "kernel.cu(6)" in r.log  # nvcc's own output is in the log
    assert _published(cache) == []


def test_cpp_with_tvm_ffi_builds_loads_and_runs_on_cpu(cache):
    r = build(solution({"add.cc": CPP_ADD_TVM}, "add.cc::run", language="cpp", dps=True), VADD, cache)
    assert r.status == OK, r.log
    assert r.loadable_here
    run = load_runnable(Path(r.artifact_dir), VADD)
    assert run.dps
    a, b = torch.arange(6.0), torch.full((6,), 0.5)
    (c,) = run.call_value_returning(a, b)
    assert torch.equal(c, a + b)


@pytest.mark.slow  # one more C++ build (~20 s here); the missing-entry case is also covered for Python
def test_library_without_the_entry_export(cache):
    src = CPP_ADD_TVM.replace("TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run);", "TVM_FFI_DLL_EXPORT_TYPED_FUNC(other, run);")
    r = build(solution({"add.cc": src}, "add.cc::run", language="cpp", dps=True), VADD, cache)
    assert r.status == COMPILE_ERROR
    assert "exports no function 'run'" in r.message and "TVM_FFI_DLL_EXPORT_TYPED_FUNC" in r.message
    assert _published(cache) == []


@pytest.mark.skipif(torch.version.cuda is not None, reason="this torch can build CUDA extensions")
def test_cuda_with_torch_binding_on_cpu_torch_is_skipped(cache):
    s = solution({"kernel.cu": TORCH_ADD_CU}, "kernel.cu::run", language="cuda", dps=True, binding="torch")
    t0 = time.perf_counter()
    r = build(s, VADD, cache)
    assert r.status == SKIPPED
    assert "needs a CUDA build of torch" in r.message
    assert time.perf_counter() - t0 < 2  # known from torch's version.py, no compiler started
    assert _published(cache) == [] and not (cache / "tmp").exists()


def test_torch_binding_without_an_export_macro(cache):
    s = solution({"k.cpp": "int run(int x) { return x; }\n"}, "k.cpp::run", language="cpp", binding="torch")
    r = build(s, VADD, cache)
    assert r.status == COMPILE_ERROR and "PYBIND11_MODULE" in r.message


@pytest.mark.slow  # compiling against torch/extension.h takes minutes on 2 cores
def test_cpp_with_torch_binding_builds_and_runs(cache):
    s = solution({"add.cpp": TORCH_ADD_CPP}, "add.cpp::run", language="cpp", binding="torch")
    r = build(s, VADD, cache)
    assert r.status == OK, r.log
    run = load_runnable(Path(r.artifact_dir), VADD)
    out = torch.empty(3)
    run.call_dps(torch.ones(3), torch.ones(3), out)
    assert torch.equal(out, torch.full((3,), 2.0))


@pytest.mark.gpu
def test_cuda_tvm_ffi_runs_on_gpu(cache):
    r = build(solution({"kernel.cu": CUDA_ADD_TVM}, "kernel.cu::run", language="cuda", dps=True), VADD, cache)
    assert r.status == OK and r.loadable_here, r.log
    run = load_runnable(Path(r.artifact_dir), VADD)
    a = torch.arange(1000.0, device="cuda")
    (c,) = run.call_value_returning(a, a)
    assert torch.equal(c, a + a)


@pytest.mark.gpu
def test_cuda_torch_binding_runs_on_gpu(cache):
    s = solution({"kernel.cu": TORCH_ADD_CU}, "kernel.cu::run", language="cuda", dps=True, binding="torch")
    r = build(s, VADD, cache)
    assert r.status == OK and r.loadable_here, r.log
    run = load_runnable(Path(r.artifact_dir), VADD)
    a = torch.arange(1000.0, device="cuda")
    (c,) = run.call_value_returning(a, a)
    assert torch.equal(c, a + a)
