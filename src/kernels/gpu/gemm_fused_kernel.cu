#include "src/platform/gpu_runtime.h"
#include "src/kernels/gpu/gemm_fused_kernel.h"

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

// One warp: lane i polls flag i. Peers write the flags from other processes (through their
// mappings of this memory), so each poll must reach memory: volatile loads.
__global__ void fusedWaitKernel(FlagList flags, int count, uint32_t* signal, uint32_t signalValue,
                                FusedErrorSink sink) {
  const int i = threadIdx.x;
  if (signal != nullptr && i == 0) {
    __threadfence_system();  // the stream's earlier kernels' writes before the flag
    *reinterpret_cast<volatile uint32_t*>(signal) = signalValue;
    __threadfence_system();
  }
  if (i < count) {
    const uint32_t target = flags.target[i];
    uint64_t start = 0;
    for (uint32_t iter = 1;; ++iter) {
      if (static_cast<int32_t>(loadVolatile(flags.p[i]) - target) >= 0) break;
      if ((iter & 255u) == 0) {
        if (loadVolatile(sink.word) != 0) break;  // another wait failed: stop, the host reports it
        // An aborted communicator ends the wait at once, as it ends the collectives' waits.
        if (sink.abort != nullptr && loadVolatile(sink.abort) != 0) break;
        const uint64_t now = sscGpuTimer();
        if (start == 0) start = now;
        else if (sink.timeoutTicks != 0 && now - start > sink.timeoutTicks) {
          volatile uint32_t* w = sink.word;
          w[1] = static_cast<uint32_t>(i);
          __threadfence_system();
          w[0] = 1;
          break;
        }
      }
    }
  }
  // The data the flags announce is read by the next kernel on the stream; the fence orders this
  // kernel's flag reads before it on the GPU's side.
  __threadfence_system();
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
__global__ void fusedReduceScalar(typename Traits::Storage* dst, SrcList srcs, int count, size_t elems) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < elems; i += stride) {
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
  for (size_t v = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < vecs; v += stride) {
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

template <class Traits>
int reduceAs(void* dst, const SrcList& srcs, int count, size_t elems, int maxBlocks, hipStream_t s) {
  using S = typename Traits::Storage;
  bool aligned = (reinterpret_cast<uintptr_t>(dst) & 15u) == 0 && (elems * sizeof(S)) % 16 == 0;
  for (int i = 0; i < count; ++i) aligned = aligned && (reinterpret_cast<uintptr_t>(srcs.p[i]) & 15u) == 0;
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
  return static_cast<int>(hipGetLastError());
}

}  // namespace

int launchFusedWait(const uint32_t* const* flags, const uint32_t* targets, int count,
                    uint32_t* signal, uint32_t signalValue, FusedErrorSink sink, void* stream) {
  FlagList l{};
  if (count > kFusedMaxWaits) count = kFusedMaxWaits;
  for (int i = 0; i < count; ++i) {
    l.p[i] = flags[i];
    l.target[i] = targets[i];
  }
  fusedWaitKernel<<<dim3(1), dim3(32), 0, static_cast<hipStream_t>(stream)>>>(l, count, signal, signalValue, sink);
  return static_cast<int>(hipGetLastError());
}

int launchFusedSignal(uint32_t* const* flags, int count, uint32_t value, void* stream) {
  OutFlagList l{};
  for (int i = 0; i < count && i < kFusedMaxRanks; ++i) l.p[i] = flags[i];
  fusedSignalKernel<<<dim3(1), dim3(1), 0, static_cast<hipStream_t>(stream)>>>(l, count, value);
  return static_cast<int>(hipGetLastError());
}

int launchFusedReduce(void* dst, const void* const* srcs, int count, size_t elems, int elemBytes,
                      bool bf16, int maxBlocks, void* stream) {
  if (elems == 0) return 0;
  SrcList l{};
  for (int i = 0; i < count && i < kFusedMaxRanks; ++i) l.p[i] = srcs[i];
  const auto s = static_cast<hipStream_t>(stream);
  if (elemBytes == 4) return reduceAs<F32Traits<float>>(dst, l, count, elems, maxBlocks, s);
  return bf16 ? reduceAs<Bf16Traits>(dst, l, count, elems, maxBlocks, s)
              : reduceAs<HalfTraits>(dst, l, count, elems, maxBlocks, s);
}

}  // namespace ssc::gpu
