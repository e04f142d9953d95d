// Fused residual add + RMSNorm, fp16 in/out, fp32 math; TVM-FFI binding, destination-passing
// style.
//
//   s            = input + residual                       (fp32)
//   residual_out = fp16(s)
//   out          = fp16(s * rsqrt(mean(s^2) + eps) * weight)
//
// One thread block per row and one pass over the data: each thread loads its slice of input
// and residual with 16-byte vector loads (8 halves each), adds them in fp32 and keeps the sum in
// registers; residual_out is stored straight away, the sum of squares is reduced with warp
// shuffles and a 32-float shared array, and out is computed from the registers. Nothing is read
// back from global memory (bytes moved: 4 * batch * hidden * 2, plus the weight).
// When the row or a pointer does not allow 16-byte access, the same kernel runs with 1-element
// "vectors".
//
// Exported symbol (entry point "kernel.cu::fused_add_rmsnorm"):
//   fused_add_rmsnorm(input, residual, weight, eps, out, residual_out)
// launched on the stream that TVM-FFI reports for the tensors' device (the caller's current
// torch stream when called with torch tensors).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/base.h>
#include <tvm/ffi/extra/cuda/device_guard.h>
#include <tvm/ffi/function.h>

namespace {

constexpr int kThreads = 256;  // 8 warps per row

template <int kVec>
struct alignas(sizeof(__half) * kVec) HalfVec {
  __half v[kVec];
};

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Sum over the whole block; every thread gets the total.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float warp_totals[kThreads / 32];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  v = warp_sum(v);
  if (lane == 0) warp_totals[warp] = v;
  __syncthreads();
  v = lane < kThreads / 32 ? warp_totals[lane] : 0.0f;
  return warp_sum(v);
}

// Row pointers are not __restrict__ between residual and residual_out: an in-place call
// (residual_out aliasing residual) stays correct because every element is read before the same
// thread writes it.
template <int kVec, int kItems>
__global__ void __launch_bounds__(kThreads)
    fused_add_rmsnorm_kernel(const __half* input, const __half* residual,
                             const __half* __restrict__ weight, __half* out,
                             __half* residual_out, int n_vec, int64_t in_stride,
                             int64_t res_stride, int64_t out_stride, int64_t res_out_stride,
                             float inv_n, float eps) {
  using Vec = HalfVec<kVec>;
  const int64_t row = blockIdx.x;
  const Vec* in_row = reinterpret_cast<const Vec*>(input + row * in_stride);
  const Vec* res_row = reinterpret_cast<const Vec*>(residual + row * res_stride);
  const Vec* w_vec = reinterpret_cast<const Vec*>(weight);
  Vec* out_row = reinterpret_cast<Vec*>(out + row * out_stride);
  Vec* res_out_row = reinterpret_cast<Vec*>(residual_out + row * res_out_stride);

  float sums[kItems][kVec];
  float sum_sq = 0.0f;
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int idx = threadIdx.x + i * kThreads;
    if (idx < n_vec) {
      const Vec a = in_row[idx];
      const Vec b = res_row[idx];
      Vec s_half;
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const float s = __half2float(a.v[j]) + __half2float(b.v[j]);
        sums[i][j] = s;
        sum_sq += s * s;
        s_half.v[j] = __float2half_rn(s);
      }
      res_out_row[idx] = s_half;
    }
  }

  const float rstd = rsqrtf(block_sum(sum_sq) * inv_n + eps);

#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int idx = threadIdx.x + i * kThreads;
    if (idx < n_vec) {
      const Vec w = w_vec[idx];
      Vec result;
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        result.v[j] = __float2half_rn(sums[i][j] * rstd * __half2float(w.v[j]));
      }
      out_row[idx] = result;
    }
  }
}

struct Args {
  const __half* input;
  const __half* residual;
  const __half* weight;
  __half* out;
  __half* residual_out;
  int64_t rows, hidden, in_stride, res_stride, out_stride, res_out_stride;
  float eps;
};

template <int kVec>
void launch(const Args& a, cudaStream_t stream) {
  const int n_vec = static_cast<int>(a.hidden / kVec);
  const int items = (n_vec + kThreads - 1) / kThreads;
  const float inv_n = 1.0f / static_cast<float>(a.hidden);
  const dim3 grid(static_cast<unsigned>(a.rows));
#define FUSED_LAUNCH(ITEMS)                                                                      \
  fused_add_rmsnorm_kernel<kVec, ITEMS><<<grid, kThreads, 0, stream>>>(                          \
      a.input, a.residual, a.weight, a.out, a.residual_out, n_vec, a.in_stride, a.res_stride,    \
      a.out_stride, a.res_out_stride, inv_n, a.eps)
  if (items <= 1) {
    FUSED_LAUNCH(1);
  } else if (items <= 2) {
    FUSED_LAUNCH(2);
  } else if (items <= 4) {
    FUSED_LAUNCH(4);
  } else if (items <= 8) {
    FUSED_LAUNCH(8);
  } else if (items <= 16) {
    FUSED_LAUNCH(16);
  } else {
    TVM_FFI_THROW(ValueError) << "fused_add_rmsnorm: hidden size " << a.hidden
                              << " is too large";
  }
#undef FUSED_LAUNCH
}

bool is_f16(const DLDataType& t) { return t.code == kDLFloat && t.bits == 16 && t.lanes == 1; }

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// first element of a tensor (DLPack keeps an optional byte offset next to the data pointer)
template <typename T>
T* first_element(const tvm::ffi::TensorView& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data_ptr()) + t.byte_offset());
}

void fused_add_rmsnorm(tvm::ffi::TensorView input, tvm::ffi::TensorView residual,
                       tvm::ffi::TensorView weight, double eps, tvm::ffi::TensorView out,
                       tvm::ffi::TensorView residual_out) {
  const tvm::ffi::TensorView rows2d[] = {input, residual, out, residual_out};
  TVM_FFI_CHECK(weight.ndim() == 1 && is_f16(weight.dtype()), ValueError)
      << "weight must be a 1-D float16 tensor";
  TVM_FFI_CHECK(input.ndim() == 2, ValueError) << "input must be [batch, hidden]";
  const int64_t rows = input.size(0);
  const int64_t hidden = input.size(1);
  for (const auto& t : rows2d) {
    TVM_FFI_CHECK(t.ndim() == 2 && t.size(0) == rows && t.size(1) == hidden, ValueError)
        << "input, residual, out and residual_out must all be [batch, hidden]";
    TVM_FFI_CHECK(is_f16(t.dtype()), TypeError) << "tensors must be float16";
    TVM_FFI_CHECK(t.stride(1) == 1, ValueError) << "the hidden axis must be contiguous";
    TVM_FFI_CHECK(t.device().device_type == kDLCUDA, ValueError)
        << "tensors must be on a CUDA device";
  }
  TVM_FFI_CHECK(weight.size(0) == hidden && weight.stride(0) == 1, ValueError)
      << "weight must be a contiguous [hidden] tensor";
  if (rows == 0 || hidden == 0) return;

  const DLDevice dev = input.device();
  tvm::ffi::CUDADeviceGuard guard(dev.device_id);
  cudaStream_t stream =
      static_cast<cudaStream_t>(TVMFFIEnvGetStream(dev.device_type, dev.device_id));

  Args a;
  a.input = first_element<const __half>(input);
  a.residual = first_element<const __half>(residual);
  a.weight = first_element<const __half>(weight);
  a.out = first_element<__half>(out);
  a.residual_out = first_element<__half>(residual_out);
  a.rows = rows;
  a.hidden = hidden;
  a.in_stride = input.stride(0);
  a.res_stride = residual.stride(0);
  a.out_stride = out.stride(0);
  a.res_out_stride = residual_out.stride(0);
  a.eps = static_cast<float>(eps);

  const bool vec_ok = hidden % 8 == 0 && a.in_stride % 8 == 0 && a.res_stride % 8 == 0 &&
                      a.out_stride % 8 == 0 && a.res_out_stride % 8 == 0 &&
                      aligned16(a.input) && aligned16(a.residual) && aligned16(a.weight) &&
                      aligned16(a.out) && aligned16(a.residual_out);
  if (vec_ok) {
    launch<8>(a, stream);
  } else {
    launch<1>(a, stream);
  }
  TVM_FFI_CHECK_CUDA_ERROR(cudaGetLastError());
}

}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(fused_add_rmsnorm, fused_add_rmsnorm);
