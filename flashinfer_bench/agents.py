"""Instructions for LLM agents that write CUDA solutions (FlashInfer-Bench 0.1.2 exports
`FFI_PROMPT` and `FFI_PROMPT_SIMPLE` at the top level; agent loops put them in their prompts).

Written for this harness: what its builder (`compile/builders/tvm_ffi.py`) compiles and loads,
how its evaluator calls the entry point, and what its measurement refuses. Plain text, no imports:
any layer may use it.
"""
from __future__ import annotations

FFI_PROMPT_SIMPLE = """\
Write a CUDA kernel for the given FlashInfer-Bench definition and expose it through TVM-FFI.

Solution JSON: "spec": {"language": "cuda", "binding": "tvm-ffi", "entry_point": "kernel.cu::<name>",
"destination_passing_style": true, "target_hardware": ["cuda"]}, "sources": [{"path": "kernel.cu",
"content": "..."}]. Export the entry with TVM_FFI_DLL_EXPORT_TYPED_FUNC(<name>, <C++ function>).
The function takes the definition's inputs in their declared order (tensors as
tvm::ffi::TensorView, scalars as double/int64_t/bool), then one TensorView per output, already
allocated with the declared shape and dtype: write into them and return void. Launch on the stream
TVM-FFI reports for the tensors' device (TVMFFIEnvGetStream), never on the legacy default stream.
Check shapes and dtypes with TVM_FFI_ICHECK and say what was expected.
"""

FFI_PROMPT = FFI_PROMPT_SIMPLE + """
How the harness builds it
- Sources are compiled with nvcc for the GPU's architecture (sm_90a on an H100) into one shared
  library; headers from tvm_ffi (tvm/ffi/function.h, tvm/ffi/container/tensor.h,
  tvm/ffi/extra/c_env_api.h, tvm/ffi/error.h) and the CUDA toolkit are on the include path.
  Several .cu/.cpp/.h files may be listed in "sources"; paths are relative, without "..".
- A compile error, a missing export or a signature that does not match the definition (number
  of inputs and outputs) is a COMPILE_ERROR trace naming file:line.
- Alternative binding: "binding": "torch" builds a PyTorch C++ extension (PYBIND11_MODULE or
  TORCH_LIBRARY) whose entry takes and returns torch.Tensor.

How the harness calls and times it
- The entry is called with contiguous CUDA tensors of the declared dtypes; a const axis is fixed
  by the definition, a var axis comes from the workload. Inputs drawn at random follow the
  definition's constraints (index ranges, monotonic indptr arrays, page tables).
- Correctness: outputs are compared with the definition's PyTorch reference on several input
  sets, with the definition's tolerances (atol/rtol, or a matched-ratio check for some families).
- Latency: CUDA events around each call, with the L2 cache flushed before each sample, fresh
  inputs between samples, until the statistic converges; the reported number is device time.

What is refused (the trace fails, and the attempt is recorded)
- Returning results computed earlier: outputs are re-checked on fresh secret inputs after the
  run, by a process the solution cannot reach; caching outputs by input address or content fails.
- Work outside the timed call: another stream, thread or process that keeps computing after the
  call returns, or that started before it, is not a faster kernel; the supervisor times calls
  from outside.
- Touching anything but the tensors passed in: the process is sandboxed (no network, no files
  outside its scratch directory, no other processes); a solution that writes elsewhere or exits
  the process fails only its own traces.

Aim for a kernel that is correct on every listed workload first, then fast on the large ones:
coalesced 16-byte loads, fp32 accumulation for fp16/bf16 data, enough blocks to fill the GPU at
small batch sizes (split the reduction dimension when there are few rows).
"""

__all__ = ["FFI_PROMPT", "FFI_PROMPT_SIMPLE"]
