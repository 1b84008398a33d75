// SPDX-License-Identifier: MIT
#include <algorithm>

#include "src/platform/gpu_check.h"
#include "src/platform/gpu_runtime.h"
#include "src/ops/gemm/gemm_fused_kernel.h"

#include "src/kernels/gpu/elementwise.h"

namespace ssc::gpu {
namespace {

struct FlagList {
  const uint32_t* p[kFusedMaxWaits];
  uint32_t target[kFusedMaxWaits];
};
struct OutFlagList {
  uint32_t* p[kFusedMaxRanks];
};
struct SrcList {
  const void* p[kFusedMaxRanks];
};

__device__ __forceinline__ uint32_t loadVolatile(const uint32_t* p) {
  return *reinterpret_cast<const volatile uint32_t*>(p);
}

// Lane i of a warp polls flag i until it reaches its target. Peers write the flags from other
// processes (through their mappings of this memory), so each poll must reach memory: volatile
// loads. Gives up on a failure of another wait, an aborted communicator or the timeout (which
// it records in the sink).
__device__ void waitLane(int i, const FlagList& flags, int count, const FusedErrorSink& sink) {
  if (i >= count) return;
  const uint32_t target = flags.target[i];
  uint64_t start = 0;
  for (uint32_t iter = 1;; ++iter) {
    if (static_cast<int32_t>(loadVolatile(flags.p[i]) - target) >= 0) return;
    if ((iter & 255u) == 0) {
      if (loadVolatile(sink.word) != 0) return;  // another wait failed: stop, the host reports it
      // An aborted communicator ends the wait at once, as it ends the collectives' waits.
      if (sink.abort != nullptr && loadVolatile(sink.abort) != 0) return;
      const uint64_t now = sscGpuTimer();
      if (start == 0)
        start = now;
      else if (sink.timeoutTicks != 0 && now - start > sink.timeoutTicks) {
        volatile uint32_t* w = sink.word;
        w[1] = static_cast<uint32_t>(i);
        w[2] = loadVolatile(flags.p[i]);
        w[3] = target;
        w[4] = sink.site;
        __threadfence_system();
        w[0] = 1;
        return;
      }
    }
  }
}

// One warp: lane 0 first stores signalValue into every signals.p[j] (after a fence that orders
// the stream's earlier kernels' writes before them), then lane i polls flag i.
__global__ void fusedWaitKernel(FlagList flags, int count, OutFlagList signals, int nsig,
                                uint32_t signalValue, FusedErrorSink sink, PointerStore store) {
  const int i = threadIdx.x;
  // Plain stores: only later kernels of this stream read them (the BLAS's pointer arrays).
  for (int j = i; j < store.count; j += 32) store.dst[j] = const_cast<void*>(store.v[j]);
  if (nsig > 0 && i == 0) {
    __threadfence_system();  // the stream's earlier kernels' writes before the flags
    for (int j = 0; j < nsig; ++j)
      *reinterpret_cast<volatile uint32_t*>(signals.p[j]) = signalValue;
    __threadfence_system();
  }
  waitLane(i, flags, count, sink);
  // The data the flags announce is read by the next kernel on the stream; the fence orders this
  // kernel's flag reads before it on the GPU's side.
  __threadfence_system();
}

struct DstList {
  void* p[kFusedMaxRanks];
};

// The fused all-gather's push: the grid copies src to every destination, each element loaded
// once. vec: every pointer and the size are 16-byte multiples.
__global__ void fusedPushKernel(const void* src, DstList dsts, int ndst, size_t bytes, bool vec) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (vec) {
    const uint4* s = static_cast<const uint4*>(src);
    for (size_t v = first; v < bytes / 16; v += stride) {
      const uint4 x = s[v];
      for (int d = 0; d < ndst; ++d) static_cast<uint4*>(dsts.p[d])[v] = x;
    }
  } else {  // 2-byte elements (bf16 / fp16 rows at any even offset)
    const uint16_t* s = static_cast<const uint16_t*>(src);
    for (size_t e = first; e < bytes / 2; e += stride) {
      const uint16_t x = s[e];
      for (int d = 0; d < ndst; ++d) static_cast<uint16_t*>(dsts.p[d])[e] = x;
    }
  }
}

__global__ void fusedSignalKernel(OutFlagList flags, int count, uint32_t value) {
  __threadfence_system();  // the stream's earlier kernels' writes are visible before the flags
  for (int i = 0; i < count; ++i) *reinterpret_cast<volatile uint32_t*>(flags.p[i]) = value;
  __threadfence_system();
}

template <class Traits>
__device__ __forceinline__ float ld(const void* p, size_t i) {
  return Traits::load(reinterpret_cast<const typename Traits::Storage*>(p)[i]);
}

template <class T>
struct F32Traits {
  using Storage = float;
  static __device__ __forceinline__ float load(float v) { return v; }
  static __device__ __forceinline__ float store(float v) { return v; }
};

// Scalar path (any alignment). Loads bypass L1 (__ldcg through the pointer type is not portable;
// the data was written by other processes' kernels that finished before the flags were set, and
// this kernel starts after the wait kernel, so L1 holds no stale copy of it).
template <class Traits>
__global__ void fusedReduceScalar(typename Traits::Storage* dst, SrcList srcs, int count,
                                  size_t elems) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < elems;
       i += stride) {
    float acc = 0.0f;
    for (int s = 0; s < count; ++s) acc += ld<Traits>(srcs.p[s], i);
    dst[i] = static_cast<typename Traits::Storage>(Traits::store(acc));
  }
}

// 16-byte path: every pointer 16-byte aligned, 16 / sizeof(Storage) elements per vector.
template <class Traits>
__global__ void fusedReduceVec(uint4* dst, SrcList srcs, int count, size_t vecs) {
  using S = typename Traits::Storage;
  constexpr int kPer = 16 / sizeof(S);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t v = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < vecs;
       v += stride) {
    float acc[kPer];
#pragma unroll
    for (int e = 0; e < kPer; ++e) acc[e] = 0.0f;
    for (int s = 0; s < count; ++s) {
      const uint4 x = reinterpret_cast<const uint4*>(srcs.p[s])[v];
      const S* xs = reinterpret_cast<const S*>(&x);
#pragma unroll
      for (int e = 0; e < kPer; ++e) acc[e] += Traits::load(xs[e]);
    }
    uint4 out;
    S* os = reinterpret_cast<S*>(&out);
#pragma unroll
    for (int e = 0; e < kPer; ++e) os[e] = static_cast<S>(Traits::store(acc[e]));
    dst[v] = out;
  }
}

constexpr int kReduceThreads = 256;

// One row per y-index of the grid (strided), the row's columns over x: bias[j] stays in L1/L2
// across rows. Scalar: rows of odd n are not 16-byte aligned, and the pass is bound by HBM.
template <class Traits>
__global__ void addBiasKernel(typename Traits::Storage* y, const typename Traits::Storage* bias,
                              int64_t rows, int64_t n) {
  using S = typename Traits::Storage;
  const int64_t colStride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    S* row = y + r * n;
    for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n;
         j += colStride)
      row[j] = static_cast<S>(Traits::store(Traits::load(row[j]) + Traits::load(bias[j])));
  }
}

template <class Traits>
sscResult_t addBiasAs(void* y, const void* bias, int64_t rows, int64_t n, hipStream_t s) {
  using S = typename Traits::Storage;
  const int64_t colBlocks = std::min<int64_t>((n + kReduceThreads - 1) / kReduceThreads, 64);
  const int64_t rowBlocks = std::min<int64_t>(rows, 4096);
  addBiasKernel<Traits>
      <<<dim3(static_cast<unsigned>(colBlocks), static_cast<unsigned>(rowBlocks)),
         dim3(kReduceThreads), 0, s>>>(static_cast<S*>(y), static_cast<const S*>(bias), rows, n);
  const hipError_t e = hipGetLastError();
  if (e != hipSuccess)
    return SSC_GPU_FAIL(e, "launching the bias kernel ({} rows of {} elements)", rows, n);
  return sscSuccess;
}

template <class Traits>
sscResult_t reduceAs(void* dst, const SrcList& srcs, int count, size_t elems, int maxBlocks,
                     hipStream_t s) {
  using S = typename Traits::Storage;
  bool aligned = (reinterpret_cast<uintptr_t>(dst) & 15u) == 0 && (elems * sizeof(S)) % 16 == 0;
  for (int i = 0; i < count; ++i)
    aligned = aligned && (reinterpret_cast<uintptr_t>(srcs.p[i]) & 15u) == 0;
  const size_t work = aligned ? elems * sizeof(S) / 16 : elems;
  size_t blocks = (work + kReduceThreads - 1) / kReduceThreads;
  if (blocks > static_cast<size_t>(maxBlocks)) blocks = static_cast<size_t>(maxBlocks);
  if (blocks < 1) blocks = 1;
  if (aligned)
    fusedReduceVec<Traits><<<dim3(static_cast<unsigned>(blocks)), dim3(kReduceThreads), 0, s>>>(
        static_cast<uint4*>(dst), srcs, count, work);
  else
    fusedReduceScalar<Traits><<<dim3(static_cast<unsigned>(blocks)), dim3(kReduceThreads), 0, s>>>(
        static_cast<S*>(dst), srcs, count, work);
  const hipError_t e = hipGetLastError();
  if (e != hipSuccess)
    return SSC_GPU_FAIL(e, "launching the fused reduce kernel ({} elements from {} ranks)", elems,
                        count);
  return sscSuccess;
}

}  // namespace

sscResult_t launchFusedSignalWait(uint32_t* const* signals, int nsig, uint32_t signalValue,
                                  const uint32_t* const* flags, const uint32_t* targets, int count,
                                  FusedErrorSink sink, void* stream, const PointerStore* store) {
  FlagList l{};
  OutFlagList out{};
  PointerStore st{};
  if (store != nullptr && store->dst != nullptr) {
    st = *store;
    st.count = std::min(std::max(st.count, 0), kFusedMaxStores);
  }
  if (count > kFusedMaxWaits) count = kFusedMaxWaits;
  if (nsig > kFusedMaxRanks) nsig = kFusedMaxRanks;
  for (int i = 0; i < count; ++i) {
    l.p[i] = flags[i];
    l.target[i] = targets[i];
  }
  for (int i = 0; i < nsig; ++i) out.p[i] = signals[i];
  fusedWaitKernel<<<dim3(1), dim3(32), 0, static_cast<hipStream_t>(stream)>>>(
      l, count, out, nsig, signalValue, sink, st);
  const hipError_t e = hipGetLastError();
  if (e != hipSuccess)
    return SSC_GPU_FAIL(e,
                        "launching the fused wait kernel ({} flags to wait for, {} to signal, {} "
                        "pointers to store)",
                        count, nsig, st.count);
  return sscSuccess;
}

sscResult_t launchFusedWait(const uint32_t* const* flags, const uint32_t* targets, int count,
                            uint32_t* signal, uint32_t signalValue, FusedErrorSink sink,
                            void* stream, const PointerStore* store) {
  return launchFusedSignalWait(&signal, signal != nullptr ? 1 : 0, signalValue, flags, targets,
                               count, sink, stream, store);
}

sscResult_t launchFusedPush(const void* src, void* const* dsts, int ndst, size_t bytes,
                            int maxBlocks, void* stream) {
  DstList d{};
  if (ndst > kFusedMaxRanks) ndst = kFusedMaxRanks;
  bool vec = bytes % 16 == 0 && (reinterpret_cast<uintptr_t>(src) & 15u) == 0;
  for (int i = 0; i < ndst; ++i) {
    d.p[i] = dsts[i];
    vec = vec && (reinterpret_cast<uintptr_t>(dsts[i]) & 15u) == 0;
  }
  if (bytes == 0) ndst = 0;
  const size_t work = vec ? bytes / 16 : bytes / 2;
  size_t blocks = (work + 255) / 256;
  if (blocks > static_cast<size_t>(maxBlocks)) blocks = static_cast<size_t>(maxBlocks);
  if (blocks < 1) blocks = 1;
  fusedPushKernel<<<dim3(static_cast<unsigned>(blocks)), dim3(256), 0,
                    static_cast<hipStream_t>(stream)>>>(src, d, ndst, bytes, vec);
  const hipError_t e = hipGetLastError();
  if (e != hipSuccess)
    return SSC_GPU_FAIL(e, "launching the fused push kernel ({} bytes to {} ranks)", bytes, ndst);
  return sscSuccess;
}

sscResult_t launchFusedSignal(uint32_t* const* flags, int count, uint32_t value, void* stream) {
  OutFlagList l{};
  for (int i = 0; i < count && i < kFusedMaxRanks; ++i) l.p[i] = flags[i];
  fusedSignalKernel<<<dim3(1), dim3(1), 0, static_cast<hipStream_t>(stream)>>>(l, count, value);
  const hipError_t e = hipGetLastError();
  if (e != hipSuccess)
    return SSC_GPU_FAIL(e, "launching the fused signal kernel ({} flags)", count);
  return sscSuccess;
}

sscResult_t launchFusedReduce(void* dst, const void* const* srcs, int count, size_t elems,
                              int elemBytes, bool bf16, int maxBlocks, void* stream) {
  if (elems == 0) return sscSuccess;
  SrcList l{};
  for (int i = 0; i < count && i < kFusedMaxRanks; ++i) l.p[i] = srcs[i];
  const auto s = static_cast<hipStream_t>(stream);
  if (elemBytes == 4) return reduceAs<F32Traits<float>>(dst, l, count, elems, maxBlocks, s);
  return bf16 ? reduceAs<Bf16Traits>(dst, l, count, elems, maxBlocks, s)
              : reduceAs<HalfTraits>(dst, l, count, elems, maxBlocks, s);
}

sscResult_t launchAddBias(void* y, const void* bias, int64_t rows, int64_t n, int elemBytes,
                          bool bf16, void* stream) {
  if (rows <= 0 || n <= 0) return sscSuccess;
  const auto s = static_cast<hipStream_t>(stream);
  if (elemBytes == 4) return addBiasAs<F32Traits<float>>(y, bias, rows, n, s);
  return bf16 ? addBiasAs<Bf16Traits>(y, bias, rows, n, s)
              : addBiasAs<HalfTraits>(y, bias, rows, n, s);
}

namespace {

__global__ void countNonZeroKernel(const unsigned char* base, size_t entryBytes, size_t strideBytes,
                                   size_t total, unsigned long long* count) {
  unsigned long long mine = 0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    mine += base[(i / entryBytes) * strideBytes + i % entryBytes] != 0;
  if (mine != 0) atomicAdd(count, mine);
}

}  // namespace

sscResult_t launchCountNonZero(const void* base, size_t entryBytes, size_t strideBytes, int entries,
                               unsigned long long* count, int maxBlocks, void* stream) {
  const size_t total = entryBytes * static_cast<size_t>(entries > 0 ? entries : 0);
  if (total == 0) return sscSuccess;
  size_t blocks =
      std::min<size_t>((total + 255) / 256, static_cast<size_t>(std::max(1, maxBlocks)));
  countNonZeroKernel<<<dim3(static_cast<unsigned>(blocks)), dim3(256), 0,
                       static_cast<hipStream_t>(stream)>>>(static_cast<const unsigned char*>(base),
                                                           entryBytes, strideBytes, total, count);
  const hipError_t e = hipGetLastError();
  if (e != hipSuccess)
    return SSC_GPU_FAIL(e, "launching the non-zero count kernel ({} bytes)", total);
  return sscSuccess;
}

}  // namespace ssc::gpu
