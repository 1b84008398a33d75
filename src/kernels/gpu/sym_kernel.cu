// SPDX-License-Identifier: MIT
// The symmetric executor's launches. One device header per protocol: sym_barrier.cuh (barriers),
// sym_bulk.cuh (bulk peer loads/stores), ll_kernel.cuh + ll_packet.h (LL packets), sym_ops.cuh
// (the arithmetic both share); data layouts in sym_kernel.h; the per-type kernels are compiled in
// sym_kernel_dtype.cu. Peer steps:
//   kPeerReduce       dst[i]   = post(op over q = 0..n-1 of pre(src@q[i]))
//   kPeerReduceBcast  dst@q[i] = the same, for every q (this rank computes its slice once)
//   kPeerPush         dst@q[i] = src[i], for every q
//   kPeerGather       dst[q * count + i] = src@q[i], for every q
//   kPeerSwap         src[q * count + i] <-> src@q[rank * count + i], for every q != rank and
//                     this rank's half of i (peerSwapHalf: the in-place all-to-all)
// (kPeerReduce/kPeerReduceBcast with recvPeer read only that rank's src; kPeerReduce with
// sendPeer stores to dst@sendPeer; see src/collectives/plan.h.)
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
#include "src/kernels/gpu/sym_bulk.cuh"
#include "src/kernels/gpu/sym_kernel.h"
#include "src/kernels/gpu/sym_launch.cuh"

namespace ssc::gpu {

// One translation unit per data type holds that type's kernels (sym_kernel_dtype.cu, compiled
// once per type by CMake), so that a parallel build compiles the 192 instantiations on as many
// cores instead of one nvcc spending minutes on them.
// The case macros six types a row, as clang-format cannot lay them out.
// clang-format off
int launchSymKernel(const SymArgs& args, int blocks, void* stream) {
  switch (args.reduce.dtype) {  // sscDataType_t values
#define SSC_SYM_CASE(d) \
    case d: return symLaunchForDtype<d>(args, blocks, stream, false);
    SSC_SYM_CASE(0) SSC_SYM_CASE(1) SSC_SYM_CASE(2) SSC_SYM_CASE(3) SSC_SYM_CASE(4) SSC_SYM_CASE(5)
    SSC_SYM_CASE(6) SSC_SYM_CASE(7) SSC_SYM_CASE(8) SSC_SYM_CASE(9) SSC_SYM_CASE(10) SSC_SYM_CASE(11)
    default: return -1;
  }
}

int launchLLAllReduce(const SymArgs& args, int blocks, void* stream) {
  switch (args.reduce.dtype) {
#undef SSC_SYM_CASE
#define SSC_SYM_CASE(d) \
    case d: return symLaunchForDtype<d>(args, blocks, stream, true);
    SSC_SYM_CASE(0) SSC_SYM_CASE(1) SSC_SYM_CASE(2) SSC_SYM_CASE(3) SSC_SYM_CASE(4) SSC_SYM_CASE(5)
    SSC_SYM_CASE(6) SSC_SYM_CASE(7) SSC_SYM_CASE(8) SSC_SYM_CASE(9) SSC_SYM_CASE(10) SSC_SYM_CASE(11)
#undef SSC_SYM_CASE
    default: return -1;
  }
}
// clang-format on

int symKernelBlocksPerSM() {
  int best = 1 << 30;
  const auto take = [&](auto kernel) {
    int n = 0;
    if (hipOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kSymThreads, 0) == hipSuccess)
      best = n < best ? n : best;
  };
  // fp8 (16 floats per vector and peer) and int64 are the register-hungriest instantiations.
  take(symKernel<NativeTraits<float>, 0, 0, kAnyDataOp>);
  take(symKernel<Fp8Traits<conv::Fp8E4M3>, 0, 0, kAnyDataOp>);
  take(symKernel<HalfTraits, 0, 0, kAnyDataOp>);
  take(symKernel<NativeTraits<int64_t>, 1, 0, kAnyDataOp>);
  take(symKernel<NativeTraits<double>, 3, 0, kAnyDataOp>);
  take(symKernel<NativeTraits<float>, 0, 2, kOpPeerReduceBcast>);
  take(symKernel<NativeTraits<double>, 3, 2, kOpPeerReduceBcast>);
  take(symKernel<NativeTraits<float>, 0, 4, kOpPeerReduce>);
  take(symKernel<HalfTraits, 0, 4, kOpPeerReduceBcast>);
  take(symKernel<Fp8Traits<conv::Fp8E4M3>, 0, 0, kOpPeerReduceBcast>);
  return best == (1 << 30) || best < 1 ? 1 : best;
}

}  // namespace ssc::gpu
