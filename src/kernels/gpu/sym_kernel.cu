// The symmetric executor's launches. One device header per protocol: sym_barrier.cuh (barriers),
// sym_bulk.cuh (bulk peer loads/stores), ll_kernel.cuh + ll_packet.h (LL packets), sym_ops.cuh
// (the arithmetic both share); data layouts in sym_kernel.h. Peer steps:
//   kPeerReduce       dst[i]   = post(op over q = 0..n-1 of pre(src@q[i]))
//   kPeerReduceBcast  dst@q[i] = the same, for every q (this rank computes its slice once)
//   kPeerPush         dst@q[i] = src[i], for every q
// Reductions run in rank order, so every rank (and the host backend) gets the same bits, and
// fp16/bf16/fp8 accumulate in float: each value is widened exactly, pre-scaled in float,
// combined in float, and rounded once at the end (one rounding instead of n - 1). Integers wrap,
// the post-step (integer Avg) divides once.
//
// Data path: every thread of the grid takes 16-byte vectors grid-stride, kU at a time, and loads
// the vectors of kG peers before reducing any of them, so kG * kU loads are in flight per
// thread. Peers' data is read with L2-only loads (.cg): the L1 is not coherent with other
// processes' stores.
#include <cstdint>

#include "src/platform/gpu_runtime.h"
#include "src/kernels/gpu/device_common.h"
#include "src/kernels/gpu/elementwise.h"
#include "src/kernels/gpu/ll_kernel.cuh"
#include "src/kernels/gpu/sym_bulk.cuh"
#include "src/kernels/gpu/sym_kernel.h"

namespace ssc::gpu {
namespace {
template <template <class, int> class K, int kThreads, class Tr>
int launchFor(const SymArgs& args, int blocks, hipStream_t stream) {
  const dim3 grid(blocks), block(kThreads);
  switch (args.reduce.kind) {
    case 0: K<Tr, 0>::launch(grid, block, stream, args); break;
    case 1: K<Tr, 1>::launch(grid, block, stream, args); break;
    case 2: K<Tr, 2>::launch(grid, block, stream, args); break;
    default: K<Tr, 3>::launch(grid, block, stream, args); break;
  }
  return static_cast<int>(hipGetLastError());
}

template <class Tr, int kKind>
struct BulkLauncher {
  static void launch(dim3 g, dim3 b, hipStream_t st, const SymArgs& a) {
    // Separate instantiations for few ranks, so their wider loops do not raise the register
    // pressure (and spill) of the one that serves more.
    if (a.nranks <= 2) symKernel<Tr, kKind, 2><<<g, b, 0, st>>>(a);
    else if (a.nranks <= 4) symKernel<Tr, kKind, 4><<<g, b, 0, st>>>(a);
    else symKernel<Tr, kKind, 0><<<g, b, 0, st>>>(a);
  }
};
template <class Tr, int kKind>
struct LLLauncher {
  static void launch(dim3 g, dim3 b, hipStream_t st, const SymArgs& a) {
    llAllReduceKernel<Tr, kKind><<<g, b, 0, st>>>(a);
  }
};

template <template <class, int> class K, int kThreads>
int dispatch(const SymArgs& args, int blocks, void* streamPtr) {
  hipStream_t stream = static_cast<hipStream_t>(streamPtr);
  switch (args.reduce.dtype) {  // sscDataType_t values
    case 0: return launchFor<K, kThreads, NativeTraits<int8_t>>(args, blocks, stream);
    case 1: return launchFor<K, kThreads, NativeTraits<uint8_t>>(args, blocks, stream);
    case 2: return launchFor<K, kThreads, NativeTraits<int32_t>>(args, blocks, stream);
    case 3: return launchFor<K, kThreads, NativeTraits<uint32_t>>(args, blocks, stream);
    case 4: return launchFor<K, kThreads, NativeTraits<int64_t>>(args, blocks, stream);
    case 5: return launchFor<K, kThreads, NativeTraits<uint64_t>>(args, blocks, stream);
    case 6: return launchFor<K, kThreads, HalfTraits>(args, blocks, stream);
    case 7: return launchFor<K, kThreads, NativeTraits<float>>(args, blocks, stream);
    case 8: return launchFor<K, kThreads, NativeTraits<double>>(args, blocks, stream);
    case 9: return launchFor<K, kThreads, Bf16Traits>(args, blocks, stream);
    case 10: return launchFor<K, kThreads, Fp8Traits<conv::Fp8E4M3>>(args, blocks, stream);
    case 11: return launchFor<K, kThreads, Fp8Traits<conv::Fp8E5M2>>(args, blocks, stream);
    default: return -1;
  }
}

}  // namespace

int launchSymKernel(const SymArgs& args, int blocks, void* stream) {
  return dispatch<BulkLauncher, kSymThreads>(args, blocks, stream);
}

int launchLLAllReduce(const SymArgs& args, int blocks, void* stream) {
  return dispatch<LLLauncher, kLLThreads>(args, blocks, stream);
}

int symKernelBlocksPerSM() {
  int best = 1 << 30;
  const auto take = [&](auto kernel) {
    int n = 0;
    if (hipOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kSymThreads, 0) == hipSuccess)
      best = n < best ? n : best;
  };
  // fp8 (16 floats per vector and peer) and int64 are the register-hungriest instantiations.
  take(symKernel<NativeTraits<float>, 0, 0>);
  take(symKernel<Fp8Traits<conv::Fp8E4M3>, 0, 0>);
  take(symKernel<HalfTraits, 0, 0>);
  take(symKernel<NativeTraits<int64_t>, 1, 0>);
  take(symKernel<NativeTraits<double>, 3, 0>);
  take(symKernel<NativeTraits<float>, 0, 2>);
  take(symKernel<NativeTraits<double>, 3, 2>);
  take(symKernel<NativeTraits<float>, 0, 4>);
  take(symKernel<HalfTraits, 0, 4>);
  return best == (1 << 30) || best < 1 ? 1 : best;
}

}  // namespace ssc::gpu
