// PyTorch C++ extension binding ("torch": built with torch.utils.cpp_extension.load) for the
// RMSNorm kernel in kernel.cu; destination-passing style, entry point "binding.cpp::run":
//
//   run(x: [batch, hidden] fp16, weight: [hidden] fp16, eps: float, out: [batch, hidden] fp16)
//
// The tensors are checked here, and the kernel is launched on torch's current CUDA stream of
// x's device.
#include <torch/extension.h>

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <cstdint>

// defined in kernel.cu
cudaError_t rmsnorm_fp16_launch(const void* x, const void* weight, void* out, int64_t rows,
                                int64_t hidden, int64_t x_stride, int64_t out_stride, float eps,
                                cudaStream_t stream);

void run(const torch::Tensor& x, const torch::Tensor& weight, double eps, torch::Tensor& out) {
  TORCH_CHECK(x.dim() == 2 && out.dim() == 2 && weight.dim() == 1,
              "expected x [batch, hidden], weight [hidden], out [batch, hidden]");
  TORCH_CHECK(x.scalar_type() == at::kHalf && weight.scalar_type() == at::kHalf &&
                  out.scalar_type() == at::kHalf,
              "x, weight and out must be float16");
  TORCH_CHECK(x.is_cuda() && weight.is_cuda() && out.is_cuda(), "tensors must be on CUDA");
  TORCH_CHECK(weight.device() == x.device() && out.device() == x.device(),
              "tensors must be on the same device");
  const int64_t rows = x.size(0);
  const int64_t hidden = x.size(1);
  TORCH_CHECK(weight.size(0) == hidden && out.size(0) == rows && out.size(1) == hidden,
              "shape mismatch");
  TORCH_CHECK(x.stride(1) == 1 && out.stride(1) == 1 && weight.stride(0) == 1,
              "the hidden axis must be contiguous");

  const c10::cuda::CUDAGuard guard(x.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(x.device().index()).stream();
  const cudaError_t err =
      rmsnorm_fp16_launch(x.data_ptr(), weight.data_ptr(), out.data_ptr(), rows, hidden,
                          x.stride(0), out.stride(0), static_cast<float>(eps), stream);
  TORCH_CHECK(err == cudaSuccess, "rmsnorm launch failed (hidden=", hidden,
              "): ", cudaGetErrorString(err));
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("run", &run, "RMSNorm (fp16, fp32 math), destination-passing: run(x, weight, eps, out)",
        pybind11::arg("x"), pybind11::arg("weight"), pybind11::arg("eps"), pybind11::arg("out"));
}
