// SPDX-License-Identifier: MIT
// bulk_ab: Starscream's zero-copy bulk kernel (src/kernels/gpu/sym_bulk.cuh, launched as the
// library launches it) against the plain data loop of perf/bulk_shapes.cu, on the same buffers
// in the same process, K MPS ranks, and hybrids of the two, so that a gap between the library and
// what the machine does can be placed: in the data loop, the barriers or the kernel around them.
// This is how the K = 2 reduce-scatter gap was placed: the library's took 292 us where the plain
// loop took 219 (256 MiB), and the hybrids put the difference in the code around the loop.
//
//   tools/emulate/partition-run.sh K build/bin/bulk_ab [MiB per rank, default 256] [iterations,
//   default 20]
//
// Rows, each pattern (rs: reduce-scatter, ar: reduce + broadcast (two-shot all-reduce), ag:
// push all-gather, agp: pull all-gather (the library's kernels only)), two rounds in the same
// order so drift shows; us per call of the slowest rank (host wall clock and CUDA events),
// elements wrong (every run is checked):
//   W1  the plain loop with the library's element operations (run-time pre/post flags)
//   V0  bulk_shapes' kernel: the plain loop between flag barriers, 8 or 4 loads in flight
//   V1  the library's kernel, picked as launchSymKernel picks it (on this tool's grid: one block
//       per SM; at 2 ranks up to 256 MiB that is the push kernel with 256-thread blocks)
//   V2  the library's all-plans kernel (a loop over the steps, a switch over their kinds)
//   V3  the library's data step (SymRunner) between bulk_shapes' barriers
//   V4  the library's barriers around the plain loop
//   V5  the library's barriers, its data step copied out of the parameters first
// and for the push all-gather, on the library's push grid (256 threads, up to 8 blocks per SM,
// at most kMaxSymBlocks; sym_kernel.h):
//   V6  the library's push kernel (symPushKernel), whatever the size
//   V7  the plain loop at that shape between flag barriers (bulk_shapes' "t256 b8 L4")
//   V8  the library's barriers around that plain loop
// Not a library client: it includes the kernel headers and builds SymArgs itself. The plain
// loop, the fill and the check are bulk_shapes' (perf/bulk_move.cuh).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "perf/bulk_move.cuh"
#include "perf/mps_ranks.cuh"
#include "src/kernels/gpu/elementwise.h"
#include "src/kernels/gpu/sym_launch.cuh"

using namespace ssc::gpu;
using mps::check;
using Tr = NativeTraits<float>;

using bulk::Move;

// bulk_shapes' loop at its default shape (512 threads, grid stride, plain stores).
template <int kSrc, int kU>
__device__ __forceinline__ void moveLoop(const Move& m) {
  bulk::moveBody<512, kSrc, kU, false, 0>(m);
}

// V0: bulk_shapes' kernel (mps::meet barriers, moveLoop).
template <int kSrc, int kU>
__global__ void __launch_bounds__(512, 1)
    v0Kernel(const SSC_GRID_CONSTANT mps::Peers p, const SSC_GRID_CONSTANT Move m, uint64_t e0) {
  mps::meet(p, e0 + 1);
  moveLoop<kSrc, kU>(m);
  mps::meet(p, e0 + 2);
}
// V3: the library's data step (SymRunner) between mps::meet barriers: no switch, no library
// barrier.
template <int kPeers>
__global__ void __launch_bounds__(512)
    v3Kernel(const SSC_GRID_CONSTANT mps::Peers p, const SSC_GRID_CONSTANT SymArgs a, uint64_t e0) {
  const SymRunner<Tr, 0, kPeers> r(a);
  mps::meet(p, e0 + 1);
  const DevStep& s = a.steps[1];
  if (s.op == kOpPeerPush)
    r.push(s);
  else
    r.reduce(s, s.op == kOpPeerReduceBcast);
  mps::meet(p, e0 + 2);
}
// V4: the library's barriers around moveLoop.
template <int kSrc, int kU>
__global__ void __launch_bounds__(512)
    v4Kernel(const SSC_GRID_CONSTANT SymArgs a, const SSC_GRID_CONSTANT Move m) {
  uint64_t epoch = barrierBase(a);
  if (!peerBarrier(a, ++epoch)) return;
  moveLoop<kSrc, kU>(m);
  peerBarrier(a, ++epoch);
}
// V5: the library kernel with the step read into registers first (DevStep copy).
template <int kPeers>
__global__ void __launch_bounds__(512) v5Kernel(const SSC_GRID_CONSTANT SymArgs a) {
  const SymRunner<Tr, 0, kPeers> r(a);
  uint64_t epoch = barrierBase(a);
  if (!peerBarrier(a, ++epoch)) return;
  const DevStep s = a.steps[1];
  if (s.op == kOpPeerPush)
    r.push(s);
  else
    r.reduce(s, s.op == kOpPeerReduceBcast);
  peerBarrier(a, ++epoch);
}

// V7 / V8: the plain push loop at the push kernel's shape, between mps::meet barriers (V7) or
// the library's (V8).
template <bool kLibBarrier>
__global__ void __launch_bounds__(kSymPushThreads, kSymPushBlocksPerSM)
    pushShapeKernel(const SSC_GRID_CONSTANT mps::Peers p, const SSC_GRID_CONSTANT SymArgs a,
                    const SSC_GRID_CONSTANT Move m, uint64_t e0) {
  uint64_t epoch = 0;
  if constexpr (kLibBarrier) {
    epoch = barrierBase(a);
    if (!peerBarrier(a, ++epoch)) return;
  } else {
    mps::meet(p, e0 + 1);
  }
  bulk::moveBody<kSymPushThreads, 1, 4, false, 0>(m);
  if constexpr (kLibBarrier)
    peerBarrier(a, ++epoch);
  else
    mps::meet(p, e0 + 2);
}

// W1: moveLoop with the library's element ops (SymOps) and run-time pre/post flags in place of
// the plain float sum.
struct LibraryOps {
  using Ops = SymOps<Tr, 0>;
  Ops ops;
  bool pre, doPost;
  template <int kSrc, int kU>
  __device__ __forceinline__ uint4 operator()(const uint4 (&x)[kSrc][kU], int u, int nsrc) const {
    typename Ops::Vec v;
    v.u = x[0][u];
    float acc[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[e] = ops.in(v.e[e], pre);
#pragma unroll
    for (int j = 1; j < kSrc; ++j)
      if (j < nsrc) {
        v.u = x[j][u];
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[e] = ops.combine(acc[e], ops.in(v.e[e], pre), false);
      }
#pragma unroll
    for (int e = 0; e < 4; ++e) v.e[e] = ops.out(acc[e], doPost);
    return v.u;
  }
};

template <int kSrc, int kU>
__global__ void __launch_bounds__(512, 1)
    w1Kernel(const SSC_GRID_CONSTANT mps::Peers p, const SSC_GRID_CONSTANT Move m,
             const SSC_GRID_CONSTANT DevReduce red, int preI, int postI, uint64_t e0) {
  const LibraryOps::Ops ops(red);
  const LibraryOps combine{ops, preI && ops.scale, postI && ops.post.divisor != 0};
  mps::meet(p, e0 + 1);
  bulk::moveRange<512, kSrc, kU, false, 0>(m, 0, m.nvec, combine);
  mps::meet(p, e0 + 2);
}

using bulk::countWrong;
using bulk::fillKernel;

// The plain loop's instantiation for a pattern (2: the push, one source) and rank count, with
// `loads` (8 or 4) 16-byte loads in flight per thread, as bulk_shapes' SHAPE picks it.
template <int kS, int kV>
struct Src {
  static constexpr int kSrc = kS, kU = kV;
};
template <class F>
void bySources(int pat, int n, int loads, F&& f) {
  const bool l8 = loads == 8;
  if (pat == 2)
    l8 ? f(Src<1, 8>{}) : f(Src<1, 4>{});
  else if (n <= 2)
    l8 ? f(Src<2, 4>{}) : f(Src<2, 2>{});
  else if (n <= 4)
    l8 ? f(Src<4, 2>{}) : f(Src<4, 1>{});
  else
    f(Src<8, 1>{});
}

int main(int argc, char** argv) {
  const mps::Start st = mps::start(&argc, &argv);
  const int rank = st.rank, n = st.nranks;
  const uint64_t bytes = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256) << 20;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 20;
  hipStream_t stream;
  check(hipStreamCreateWithFlags(&stream, hipStreamNonBlocking), "stream");
  mps::Peers peers = mps::makePeers(rank, n);
  int sms = 0;
  check(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, 0), "attr");
  float *in, *out;
  check(hipMalloc(reinterpret_cast<void**>(&in), bytes), "in");
  check(hipMalloc(reinterpret_cast<void**>(&out), bytes), "out");
  fillKernel<<<4 * sms, 512, 0, stream>>>(in, bytes / 4, static_cast<float>(rank + 1));
  check(hipStreamSynchronize(stream), "fill");
  void *ins[64], *outs[64];
  mps::exchange(in, rank, n, ins);
  mps::exchange(out, rank, n, outs);
  // The library's control areas.
  char* ctrl = nullptr;
  const uint64_t ctrlBytes = SymCtrlLayout::bytes(n);
  check(hipMalloc(reinterpret_cast<void**>(&ctrl), ctrlBytes), "ctrl");
  check(hipMemset(ctrl, 0, ctrlBytes), "ctrl0");
  check(hipDeviceSynchronize(), "sync");
  void* ctrls[64];
  mps::exchange(ctrl, rank, n, ctrls);
  uint32_t *errDev, *errHost, *abortHost;
  check(hipMalloc(reinterpret_cast<void**>(&errDev), 16), "err");
  check(hipMemset(errDev, 0, 16), "err0");
  check(hipHostMalloc(reinterpret_cast<void**>(&errHost), 16, hipHostMallocMapped), "errh");
  check(hipHostMalloc(reinterpret_cast<void**>(&abortHost), 16, hipHostMallocMapped), "aborth");
  std::memset(errHost, 0, 16);
  std::memset(abortHost, 0, 16);
  uint32_t *errHostDev, *abortHostDev;
  check(hipHostGetDevicePointer(reinterpret_cast<void**>(&errHostDev), errHost, 0), "dp");
  check(hipHostGetDevicePointer(reinterpret_cast<void**>(&abortHostDev), abortHost, 0), "dp");
  unsigned long long* wrong;
  check(hipMalloc(reinterpret_cast<void**>(&wrong), 8), "wrong");

  const uint64_t total = bytes / 4, slice = total / n, off = static_cast<uint64_t>(rank) * slice;
  const int blocks = sms;  // 1 block per SM, as the library
  uint64_t e0 = 0;
  if (rank == 0)
    std::printf("# bulk_ab K=%d sms=%d %llu MiB per rank, %d iters\n", n, sms,
                (unsigned long long)(bytes >> 20), iters);
  const char* pats[] = {"rs", "ar", "ag", "agp"};
  for (int pat = 0; pat < 4; ++pat) {
    // The plain loop's Move (agp has none: its rows are the library's kernels only).
    const Move m = pat >= 3 ? Move{}
                            : bulk::peerMove(pat == 0   ? bulk::Pattern::kReduceScatter
                                             : pat == 1 ? bulk::Pattern::kAllReduce
                                                        : bulk::Pattern::kAllGather,
                                             in, out, ins, outs, n, off, slice);
    // SymArgs as the library builds them.
    SymArgs a{};
    a.nsteps = 3;
    a.nranks = n;
    a.rank = rank;
    a.elemBytes = 4;
    a.callHash = 0x1234 + pat;
    a.deviceScope = 1;
    a.timeoutTicks = 0;
    a.errorDevice = errDev;
    a.errorHost = errHostDev;
    a.abortHost = abortHostDev;
    a.reduce.dtype = 7;
    a.reduce.kind = 0;
    a.steps[0].op = kOpBarrier;
    a.steps[2].op = kOpBarrier;
    DevStep& s = a.steps[1];
    s.recvPeer = -1;
    s.sendPeer = -1;
    s.srcBuf = 0;
    s.dstBuf = 1;
    if (pat == 0) {
      s.op = kOpPeerReduce;
      s.flags = kPreOpFlag | kPostOpFlag;
      s.srcOff = off;
      s.dstOff = off;
      s.count = slice;
    }
    if (pat == 1) {
      s.op = kOpPeerReduceBcast;
      s.flags = kPreOpFlag | kPostOpFlag;
      s.srcOff = off;
      s.dstOff = off;
      s.count = slice;
    }
    if (pat == 2) {
      s.op = kOpPeerPush;
      s.srcOff = off;
      s.dstOff = off;
      s.count = slice;
    }
    // agp: all-gather by pulling (kPeerGather: slice q of the output from rank q's input).
    if (pat == 3) {
      s.op = kOpPeerGather;
      s.srcOff = 0;
      s.dstOff = 0;
      s.count = slice;
    }
    a.local[0] = in;
    a.local[1] = out;
    for (int q = 0; q < n; ++q) {
      a.ctrl[q] = static_cast<char*>(ctrls[q]);
      a.peer[0][q] = ins[q];
      a.peer[1][q] = outs[q];
    }
    const int kp = n <= 2 ? 2 : n <= 4 ? 4 : 0;
    struct V {
      const char* name;
      std::function<void()> fn;
    };
    auto v0 = [&] {
      bySources(pat, n, 8, [&](auto t) {
        v0Kernel<decltype(t)::kSrc, decltype(t)::kU><<<blocks, 512, 0, stream>>>(peers, m, e0);
      });
      e0 += 2;
    };
    auto v0L4 = [&] {
      bySources(pat, n, 4, [&](auto t) {
        v0Kernel<decltype(t)::kSrc, decltype(t)::kU><<<blocks, 512, 0, stream>>>(peers, m, e0);
      });
      e0 += 2;
    };
    auto v1 = [&] { BulkLauncher<Tr, 0>::launch(dim3(blocks), dim3(512), stream, a); };
    auto v2 = [&] { symKernel<Tr, 0, 0, kAnyDataOp><<<blocks, 512, 0, stream>>>(a); };
    auto v3 = [&] {
      if (kp == 2)
        v3Kernel<2><<<blocks, 512, 0, stream>>>(peers, a, e0);
      else if (kp == 4)
        v3Kernel<4><<<blocks, 512, 0, stream>>>(peers, a, e0);
      else
        v3Kernel<0><<<blocks, 512, 0, stream>>>(peers, a, e0);
      e0 += 2;
    };
    auto v4 = [&] {
      bySources(pat, n, 8, [&](auto t) {
        v4Kernel<decltype(t)::kSrc, decltype(t)::kU><<<blocks, 512, 0, stream>>>(a, m);
      });
    };
    auto v5 = [&] {
      if (kp == 2)
        v5Kernel<2><<<blocks, 512, 0, stream>>>(a);
      else if (kp == 4)
        v5Kernel<4><<<blocks, 512, 0, stream>>>(a);
      else
        v5Kernel<0><<<blocks, 512, 0, stream>>>(a);
    };
    auto w1 = [&] {
      bySources(pat, n, 8, [&](auto t) {
        w1Kernel<decltype(t)::kSrc, decltype(t)::kU>
            <<<blocks, 512, 0, stream>>>(peers, m, a.reduce, 1, 1, e0);
      });
      e0 += 2;
    };
    const int pushBlocks = std::min(kMaxSymBlocks, kSymPushBlocksPerSM * sms);
    auto v6 = [&] { symPushKernel<Tr><<<pushBlocks, kSymPushThreads, 0, stream>>>(a); };
    auto v7 = [&] {
      pushShapeKernel<false><<<pushBlocks, kSymPushThreads, 0, stream>>>(peers, a, m, e0);
      e0 += 2;
    };
    auto v8 = [&] {
      pushShapeKernel<true><<<pushBlocks, kSymPushThreads, 0, stream>>>(peers, a, m, e0);
    };
    std::vector<V> vs = {{"W1 move + runtime ops", w1}, {"V0 bulk_shapes L8", v0},
                         {"V0 bulk_shapes L4", v0L4},   {"V1 library kernel", v1},
                         {"V2 library any-op <0>", v2}, {"V3 lib data + meet", v3},
                         {"V4 lib barrier + move", v4}, {"V5 lib, step in regs", v5}};
    if (pat == 2) {
      vs.push_back({"V6 lib push kernel", v6});
      vs.push_back({"V7 t256 loop + meet", v7});
      vs.push_back({"V8 lib barrier + t256", v8});
    }
    if (pat == 3) vs = {{"V1 library kernel", v1}, {"V2 library any-op <0>", v2}};
    // Two rounds in alternating order, so drift shows.
    for (int round = 0; round < 2; ++round)
      for (const V& v : vs) {
        check(hipMemsetAsync(out, 0, bytes, stream), "memset");
        check(hipStreamSynchronize(stream), "sync");
        MPI_Barrier(MPI_COMM_WORLD);
        v.fn();
        v.fn();
        check(hipStreamSynchronize(stream), "warm");
        MPI_Barrier(MPI_COMM_WORLD);
        hipEvent_t ev0, ev1;
        check(hipEventCreate(&ev0), "event");
        check(hipEventCreate(&ev1), "event");
        const double t0 = mps::now();
        hipEventRecord(ev0, stream);
        for (int i = 0; i < iters; ++i) v.fn();
        hipEventRecord(ev1, stream);
        check(hipStreamSynchronize(stream), "timed");
        double us = (mps::now() - t0) * 1e6 / iters, worst = 0;
        float ms = 0;
        check(hipEventElapsedTime(&ms, ev0, ev1), "elapsed");
        double evus = ms * 1e3 / iters, evworst = 0;
        MPI_Allreduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&evus, &evworst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        check(hipMemsetAsync(wrong, 0, 8, stream), "m");
        const uint64_t lo = pat == 0 ? off : 0, hi = pat == 0 ? off + slice : slice * n;
        countWrong<<<4 * sms, 512, 0, stream>>>(out, lo, hi, slice, pat >= 2 ? 3 : 1, n, wrong);
        unsigned long long w = 0;
        check(hipMemcpyAsync(&w, wrong, 8, hipMemcpyDeviceToHost, stream), "c");
        check(hipStreamSynchronize(stream), "chk");
        unsigned long long wall = 0;
        MPI_Allreduce(&w, &wall, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0)
          std::printf("%s r%d %-24s wall %8.1f us  event %8.1f us  wrong %llu  err %u\n", pats[pat],
                      round, v.name, worst, evworst, wall, errHost[0]);
        std::fflush(stdout);
        hipEventDestroy(ev0);
        hipEventDestroy(ev1);
      }
  }
  const bool bad = mps::anyFailed(peers);
  if (rank == 0 && bad) std::printf("# meet timed out\n");
  MPI_Finalize();
  return 0;
}
