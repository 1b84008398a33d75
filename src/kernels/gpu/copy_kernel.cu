// SPDX-License-Identifier: MIT
#include "src/kernels/gpu/copy_kernel.h"

#include <cstdint>

#include "src/platform/gpu_runtime.h"

namespace ssc::gpu {
namespace {

constexpr int kCopyThreads = 512;
constexpr int kCopyUnroll = 4;  // 16-byte loads in flight per thread

__global__ void __launch_bounds__(kCopyThreads)
    copyKernel(char* dst, const char* src, uint64_t bytes) {
  const uint64_t tid = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t threads = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t misaligned = reinterpret_cast<uintptr_t>(dst) & 15u;
  const uint64_t head = ((16u - misaligned) & 15u) < bytes ? ((16u - misaligned) & 15u) : bytes;
  for (uint64_t i = tid; i < head; i += threads) dst[i] = src[i];
  const uint64_t nvec = (bytes - head) / 16;
  const uint4* s = reinterpret_cast<const uint4*>(src + head);
  uint4* d = reinterpret_cast<uint4*>(dst + head);
  for (uint64_t v = tid; v < nvec; v += threads * kCopyUnroll) {
    uint4 x[kCopyUnroll];
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u)
      if (v + u * threads < nvec) x[u] = s[v + u * threads];
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u)
      if (v + u * threads < nvec) d[v + u * threads] = x[u];
  }
  for (uint64_t i = head + nvec * 16 + tid; i < bytes; i += threads) dst[i] = src[i];
}

}  // namespace

int launchCopyKernel(void* dst, const void* src, size_t bytes, int maxBlocks, void* stream) {
  const uint64_t perBlock = static_cast<uint64_t>(kCopyThreads) * 16 * kCopyUnroll;
  uint64_t blocks = (bytes + perBlock - 1) / perBlock;
  if (blocks > static_cast<uint64_t>(maxBlocks)) blocks = static_cast<uint64_t>(maxBlocks);
  if (blocks < 1) blocks = 1;
  copyKernel<<<dim3(static_cast<unsigned>(blocks)), dim3(kCopyThreads), 0,
               static_cast<hipStream_t>(stream)>>>(static_cast<char*>(dst),
                                                   static_cast<const char*>(src), bytes);
  return static_cast<int>(hipGetLastError());
}

}  // namespace ssc::gpu
