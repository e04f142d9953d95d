// RMSNorm over the last axis, fp16 in/out, fp32 math; TVM-FFI binding, destination-passing style.
//
//   out[r, :] = fp16(x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * weight)
//
// One thread block per row. Each thread loads its part of the row with 16-byte vector loads
// (8 halves per load) and keeps it in registers as fp32, so the row is read from global memory
// exactly once. The sum of squares is reduced with warp shuffles, then across warps through a
// 32-float shared array. When the row or a pointer does not allow 16-byte access, the same
// kernel runs with 1-element "vectors".
//
// Exported symbol (entry point "kernel.cu::rmsnorm"):
//   rmsnorm(x: [batch, hidden] fp16, weight: [hidden] fp16, eps: float, out: [batch, hidden] fp16)
// The kernel is launched on the stream that TVM-FFI reports for the tensors' device, which is
// the caller's current torch stream when it is called with torch tensors.
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

// kVec halves moved by one load/store; alignas makes the 8-half vector a single 128-bit access
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
  // each warp reduces the per-warp totals itself, so no second barrier or broadcast is needed
  v = lane < kThreads / 32 ? warp_totals[lane] : 0.0f;
  return warp_sum(v);
}

// kItems vectors per thread: the row has at most kThreads * kItems vectors of kVec halves.
template <int kVec, int kItems>
__global__ void __launch_bounds__(kThreads)
    rmsnorm_kernel(const __half* __restrict__ x, const __half* __restrict__ weight,
                   __half* __restrict__ out, int n_vec, int64_t x_row_stride,
                   int64_t out_row_stride, float inv_n, float eps) {
  using Vec = HalfVec<kVec>;
  const int64_t row = blockIdx.x;
  const Vec* x_row = reinterpret_cast<const Vec*>(x + row * x_row_stride);
  const Vec* w_vec = reinterpret_cast<const Vec*>(weight);
  Vec* out_row = reinterpret_cast<Vec*>(out + row * out_row_stride);

  float vals[kItems][kVec];
  float sum_sq = 0.0f;
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int idx = threadIdx.x + i * kThreads;
    if (idx < n_vec) {
      const Vec packed = x_row[idx];
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        vals[i][j] = __half2float(packed.v[j]);
        sum_sq += vals[i][j] * vals[i][j];
      }
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
        result.v[j] = __float2half_rn(vals[i][j] * rstd * __half2float(w.v[j]));
      }
      out_row[idx] = result;
    }
  }
}

template <int kVec>
void launch(const __half* x, const __half* w, __half* out, int64_t rows, int64_t hidden,
            int64_t x_stride, int64_t out_stride, float eps, cudaStream_t stream) {
  const int n_vec = static_cast<int>(hidden / kVec);
  const int items = (n_vec + kThreads - 1) / kThreads;
  const float inv_n = 1.0f / static_cast<float>(hidden);
  const dim3 grid(static_cast<unsigned>(rows));
#define RMSNORM_LAUNCH(ITEMS)                                                                  \
  rmsnorm_kernel<kVec, ITEMS><<<grid, kThreads, 0, stream>>>(x, w, out, n_vec, x_stride,       \
                                                             out_stride, inv_n, eps)
  if (items <= 1) {
    RMSNORM_LAUNCH(1);
  } else if (items <= 2) {
    RMSNORM_LAUNCH(2);
  } else if (items <= 4) {
    RMSNORM_LAUNCH(4);
  } else if (items <= 8) {
    RMSNORM_LAUNCH(8);
  } else if (items <= 16) {
    RMSNORM_LAUNCH(16);
  } else {
    TVM_FFI_THROW(ValueError) << "rmsnorm: hidden size " << hidden << " is too large";
  }
#undef RMSNORM_LAUNCH
}

bool is_f16(const DLDataType& t) { return t.code == kDLFloat && t.bits == 16 && t.lanes == 1; }

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// first element of a tensor (DLPack keeps an optional byte offset next to the data pointer)
template <typename T>
T* first_element(const tvm::ffi::TensorView& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data_ptr()) + t.byte_offset());
}

void rmsnorm(tvm::ffi::TensorView x, tvm::ffi::TensorView weight, double eps,
             tvm::ffi::TensorView out) {
  TVM_FFI_CHECK(x.ndim() == 2 && out.ndim() == 2 && weight.ndim() == 1, ValueError)
      << "expected x [batch, hidden], weight [hidden], out [batch, hidden]";
  TVM_FFI_CHECK(is_f16(x.dtype()) && is_f16(weight.dtype()) && is_f16(out.dtype()), TypeError)
      << "x, weight and out must be float16";
  const int64_t rows = x.size(0);
  const int64_t hidden = x.size(1);
  TVM_FFI_CHECK(weight.size(0) == hidden && out.size(0) == rows && out.size(1) == hidden,
                ValueError)
      << "shape mismatch";
  TVM_FFI_CHECK(x.stride(1) == 1 && out.stride(1) == 1 && weight.stride(0) == 1, ValueError)
      << "the hidden axis must be contiguous";
  TVM_FFI_CHECK(x.device().device_type == kDLCUDA && weight.device().device_type == kDLCUDA &&
                    out.device().device_type == kDLCUDA,
                ValueError)
      << "tensors must be on a CUDA device";
  if (rows == 0 || hidden == 0) return;

  const DLDevice dev = x.device();
  tvm::ffi::CUDADeviceGuard guard(dev.device_id);
  cudaStream_t stream =
      static_cast<cudaStream_t>(TVMFFIEnvGetStream(dev.device_type, dev.device_id));

  const auto* xp = first_element<const __half>(x);
  const auto* wp = first_element<const __half>(weight);
  auto* op = first_element<__half>(out);
  const bool vec_ok = hidden % 8 == 0 && x.stride(0) % 8 == 0 && out.stride(0) % 8 == 0 &&
                      aligned16(xp) && aligned16(wp) && aligned16(op);
  if (vec_ok) {
    launch<8>(xp, wp, op, rows, hidden, x.stride(0), out.stride(0), static_cast<float>(eps),
              stream);
  } else {
    launch<1>(xp, wp, op, rows, hidden, x.stride(0), out.stride(0), static_cast<float>(eps),
              stream);
  }
  TVM_FFI_CHECK_CUDA_ERROR(cudaGetLastError());
}

}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(rmsnorm, rmsnorm);
