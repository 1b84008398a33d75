// SPDX-License-Identifier: MIT
// bulk_shapes: which launch shape lets K ranks' zero-copy data loops reach the copy roofline.
// The data patterns of Starscream's bulk kernel (src/kernels/gpu/sym_bulk.cuh) alone, between the
// same two flag barriers, over a table of shapes: threads per block, blocks per SM, 16-byte loads
// in flight per thread, grid-stride or one contiguous range per block, plain or streaming stores.
// The bulk kernel once reached 87-94 % of the roofline at K = 8 but 67-82 % at K = 2 and 4; this
// tool measures which shape closes such a gap, without the library around it, and what the
// machine allows each pattern.
//
//   mpirun -np K bulk_shapes [MiB per rank ...]   (tools/emulate/partition-run.sh K
//   build/bin/bulk_shapes 256)
//
// Patterns, each rank on its own slice (N / K elements) of N-element float buffers, N = the size:
//   copy   this rank's buffer into its own output, no peers: the reference rate C (bytes copied
//          per second by all ranks together, the best shape)
//   rs     reduce-scatter: the sum over every rank's input slice into this rank's output slice
//          (reads N, writes N / K per rank)
//   ar     all-reduce, reduce + broadcast: that sum written into every rank's output (reads N,
//          writes N per rank: the two-shot all-reduce in one pass)
//   ag     all-gather, push: this rank's slice written into every rank's output (reads N / K,
//          writes N per rank)
//   agx, rsx   ag and rs with each rank's loop started at its own pseudo-random place in its
//          slice (wrapping round): do K ranks marching in step, their addresses a power of two
//          apart, cost bandwidth?
// and, to split the copy rate into its two directions (is the all-gather's ceiling the write
// rate?), every rank on its own buffer, no peers, no barriers:
//   rd     read N bytes (summed, the sum kept only if it is an impossible value)
//   wr     write N bytes
//   memset / memcpy   the runtime's own fill and device-to-device copy of N bytes
// Each cell is the slowest rank's time per call and % of the roofline: the bytes the pattern
// must read and write on every rank, at C (so 100 % = the pattern moves its bytes as fast as
// a plain copy). Every cell is checked (a wrong element fails the run).
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "perf/bulk_move.cuh"
#include "perf/mps_ranks.cuh"

namespace {

using mps::check;

using bulk::kMaxPeers;
using bulk::Move;

template <int kThreads, int kMinBlocks, int kSrc, int kU, bool kContig, int kStore>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    moveKernel(const SSC_GRID_CONSTANT mps::Peers p, const SSC_GRID_CONSTANT Move m,
               uint64_t epoch0) {
  mps::meet(p, epoch0 + 1);
  bulk::moveBody<kThreads, kSrc, kU, kContig, kStore>(m);
  mps::meet(p, epoch0 + 2);
}

using Launch = void (*)(int blocks, hipStream_t, const mps::Peers&, const Move&, uint64_t);

template <int kThreads, int kMinBlocks, int kSrc, int kU, bool kContig, int kStore>
void launchOne(int blocks, hipStream_t st, const mps::Peers& p, const Move& m, uint64_t epoch0) {
  moveKernel<kThreads, kMinBlocks, kSrc, kU, kContig, kStore>
      <<<blocks, kThreads, 0, st>>>(p, m, epoch0);
}

struct Shape {
  const char* name;
  int threads, blocksPerSM;
  Launch bySrc[4];  // kSrc = 1, 2, 4, 8
};

// kLoads 16-byte loads in flight per thread whatever the source count (kU = kLoads / kSrc).
#define SHAPE(name, T, B, L, C, S)                                               \
  Shape {                                                                        \
    name, T, B, {                                                                \
      launchOne<T, B, 1, L, C, S>, launchOne<T, B, 2, std::max(1, L / 2), C, S>, \
          launchOne<T, B, 4, std::max(1, L / 4), C, S>,                          \
          launchOne<T, B, 8, std::max(1, L / 8), C, S>                           \
    }                                                                            \
  }

// The first is the bulk kernel's shape today (512 threads, 1 block per SM, 8 loads in flight
// for reductions; its copies keep 4).
const Shape kShapes[] = {
    SHAPE("t512 b1 L8", 512, 1, 8, false, 0),       SHAPE("t512 b1 L4", 512, 1, 4, false, 0),
    SHAPE("t512 b1 L16", 512, 1, 16, false, 0),     SHAPE("t512 b2 L8", 512, 2, 8, false, 0),
    SHAPE("t512 b2 L4", 512, 2, 4, false, 0),       SHAPE("t512 b2 L16", 512, 2, 16, false, 0),
    SHAPE("t512 b4 L4", 512, 4, 4, false, 0),       SHAPE("t256 b4 L8", 256, 4, 8, false, 0),
    SHAPE("t256 b8 L4", 256, 8, 4, false, 0),       SHAPE("t1024 b1 L8", 1024, 1, 8, false, 0),
    SHAPE("t512 b1 L8 contig", 512, 1, 8, true, 0), SHAPE("t512 b2 L8 contig", 512, 2, 8, true, 0),
    SHAPE("t512 b1 L8 stcs", 512, 1, 8, false, 1),  SHAPE("t512 b2 L8 stcs", 512, 2, 8, false, 1),
};

constexpr int kIters = 10;  // timed calls per cell (after 2 untimed)

int srcIndex(int nsrc) { return nsrc <= 1 ? 0 : nsrc <= 2 ? 1 : nsrc <= 4 ? 2 : 3; }

using bulk::countWrong;
using bulk::fillKernel;

// Read-only and write-only loops, kU 16-byte accesses in flight per thread, grid-stride.
template <int kThreads, int kU>
__global__ void __launch_bounds__(kThreads) readKernel(const uint4* p, uint64_t nvec, uint4* sink) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * kThreads;
  uint4 acc = {0, 0, 0, 0};
  for (uint64_t v0 = blockIdx.x * static_cast<uint64_t>(kThreads) + threadIdx.x; v0 < nvec;
       v0 += stride * kU) {
    uint4 x[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u)
      if (v0 + u * stride < nvec) x[u] = sscLoadCg(p + v0 + u * stride);
#pragma unroll
    for (int u = 0; u < kU; ++u)
      if (v0 + u * stride < nvec)
        acc = {acc.x ^ x[u].x, acc.y ^ x[u].y, acc.z ^ x[u].z, acc.w + x[u].w};
  }
  if (acc.x == 0x9e3779b9u && acc.y == 0x7f4a7c15u) *sink = acc;  // never, but the loads must stay
}

template <int kThreads, int kU>
__global__ void __launch_bounds__(kThreads) writeKernel(uint4* p, uint64_t nvec, uint4 v) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * kThreads;
  for (uint64_t v0 = blockIdx.x * static_cast<uint64_t>(kThreads) + threadIdx.x; v0 < nvec;
       v0 += stride * kU)
#pragma unroll
    for (int u = 0; u < kU; ++u)
      if (v0 + u * stride < nvec) p[v0 + u * stride] = v;
}

struct LocalRow {
  const char* name;
  int blocksPerSM;  // of the kernel `launch` starts (0: the runtime's own call)
  bool write;
  void (*launch)(int blocks, hipStream_t, float* in, float* out, uint64_t nvec, uint4* sink);
};

template <int kThreads, int kU, bool kWrite>
void launchLocal(int blocks, hipStream_t st, float* in, float* out, uint64_t nvec, uint4* sink) {
  if constexpr (kWrite)
    writeKernel<kThreads, kU>
        <<<blocks, kThreads, 0, st>>>(reinterpret_cast<uint4*>(out), nvec, uint4{1, 2, 3, 4});
  else
    readKernel<kThreads, kU>
        <<<blocks, kThreads, 0, st>>>(reinterpret_cast<const uint4*>(in), nvec, sink);
}

const LocalRow kLocalRows[] = {
    {"rd t512 b1 U8", 1, false, launchLocal<512, 8, false>},
    {"rd t512 b2 U4", 2, false, launchLocal<512, 4, false>},
    {"rd t256 b8 U4", 8, false, launchLocal<256, 4, false>},
    {"wr t512 b1 U8", 1, true, launchLocal<512, 8, true>},
    {"wr t512 b2 U4", 2, true, launchLocal<512, 4, true>},
    {"wr t256 b8 U4", 8, true, launchLocal<256, 4, true>},
    {"memset", 0, true, nullptr},
    {"memcpy", 0, false, nullptr},
};

struct Cell {
  std::string pattern, shape;
  uint64_t bytes;
  double us, pct;
};

}  // namespace

int main(int argc, char** argv) {
  const mps::Start started = mps::start(&argc, &argv);
  const int rank = started.rank, nranks = started.nranks;
  std::vector<uint64_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10) << 20);
  if (sizes.empty()) sizes = {uint64_t{64} << 20, uint64_t{256} << 20};
  if (nranks > kMaxPeers) {
    if (rank == 0) std::fprintf(stderr, "bulk_shapes: at most %d ranks\n", kMaxPeers);
    MPI_Finalize();
    return 2;
  }
  hipStream_t stream;
  check(hipStreamCreateWithFlags(&stream, hipStreamNonBlocking), "stream");
  mps::Peers peers = mps::makePeers(rank, nranks);
  int sms = 0;
  check(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, 0), "attribute");
  const uint64_t maxBytes = *std::max_element(sizes.begin(), sizes.end());
  float *in = nullptr, *out = nullptr;
  check(hipMalloc(reinterpret_cast<void**>(&in), maxBytes), "hipMalloc in");
  check(hipMalloc(reinterpret_cast<void**>(&out), maxBytes), "hipMalloc out");
  fillKernel<<<4 * sms, 512, 0, stream>>>(in, maxBytes / 4, static_cast<float>(rank + 1));
  check(hipStreamSynchronize(stream), "fill");
  void* ins[mps::kMaxRanks];
  void* outs[mps::kMaxRanks];
  mps::exchange(in, rank, nranks, ins);
  mps::exchange(out, rank, nranks, outs);
  unsigned long long* wrong = nullptr;
  check(hipMalloc(reinterpret_cast<void**>(&wrong), 16), "hipMalloc");  // also the read rows' sink

  uint64_t epoch = 0;
  std::vector<Cell> cells;
  unsigned long long totalWrong = 0;
  const char* patterns[] = {"copy", "rs", "ar", "ag", "agx", "rsx"};
  for (const uint64_t bytes : sizes) {
    const uint64_t n = bytes / 4, slice = n / nranks,
                   sliceOff = static_cast<uint64_t>(rank) * slice;
    for (int pat0 = 0; pat0 < 6; ++pat0) {
      const int pat = pat0 == 4 ? 3 : pat0 == 5 ? 1 : pat0;  // agx, rsx: ag, rs rotated
      Move m{};
      if (pat == 0) {  // copy: the whole buffer, locally
        m.nsrc = m.ndst = 1;
        m.src[0] = in;
        m.dst[0] = out;
        m.nvec = bytes / 16;
      } else {
        const bulk::Pattern p = pat == 1   ? bulk::Pattern::kReduceScatter
                                : pat == 2 ? bulk::Pattern::kAllReduce
                                           : bulk::Pattern::kAllGather;
        m = bulk::peerMove(p, in, out, ins, outs, nranks, sliceOff, slice);
      }
      if (pat0 >= 4)  // a multiple of 16 vectors, different on every rank
        m.rot = ((static_cast<uint64_t>(rank) * 2654435761ull * 4096) % (m.nvec + 1)) / 16 * 16;
      // Bytes read + written on every rank, and the time all ranks' copies would take for them.
      const double traffic = pat == 0   ? 2.0 * bytes
                             : pat == 1 ? bytes + bytes / double(nranks)
                             : pat == 2 ? 2.0 * bytes
                                        : bytes / double(nranks) + bytes;
      for (const Shape& sh : kShapes) {
        const int blocks = std::min(sh.blocksPerSM * sms, mps::kMaxBlocks);
        const Launch fn = sh.bySrc[srcIndex(m.nsrc)];
        check(hipMemsetAsync(out, 0, bytes, stream), "memset");
        check(hipStreamSynchronize(stream), "sync");
        MPI_Barrier(MPI_COMM_WORLD);
        const double worst = mps::slowestUs(stream, 2, kIters, [&] {
          fn(blocks, stream, peers, m, epoch);
          epoch += 2;
        });
        MPI_Barrier(MPI_COMM_WORLD);  // every rank's writes into this rank's output are done
        check(hipMemsetAsync(wrong, 0, sizeof(*wrong), stream), "memset");
        const uint64_t lo = pat == 1 ? sliceOff : 0,
                       hi = pat == 1 ? sliceOff + slice : slice * nranks;
        countWrong<<<4 * sms, 512, 0, stream>>>(out, lo, hi, slice, pat == 0 ? 0 : pat, nranks,
                                                wrong);
        unsigned long long w = 0;
        check(hipMemcpyAsync(&w, wrong, sizeof(w), hipMemcpyDeviceToHost, stream), "copy");
        check(hipStreamSynchronize(stream), "check");
        if (pat == 0) w = 0;  // copy: out == in == rank + 1, not the sum; its time is what counts
        totalWrong += w;
        cells.push_back({patterns[pat0], sh.name, bytes, worst, traffic});
      }
    }
    // The two directions of the copy rate, every rank on its own buffers at once.
    for (const LocalRow& row : kLocalRows) {
      const double worst = mps::slowestUs(stream, 2, kIters, [&] {
        if (row.launch != nullptr)
          row.launch(std::min(row.blocksPerSM * sms, mps::kMaxBlocks), stream, in, out, bytes / 16,
                     reinterpret_cast<uint4*>(wrong));
        else if (row.write)
          check(hipMemsetAsync(out, 0, bytes, stream), "memset");
        else
          check(hipMemcpyAsync(out, in, bytes, hipMemcpyDeviceToDevice, stream), "memcpy");
      });
      const bool copy = row.launch == nullptr && !row.write;
      cells.push_back({row.write ? "wr"
                       : copy    ? "cp"
                                 : "rd",
                       row.name, bytes, worst, copy ? 2.0 * bytes : double(bytes)});
    }
  }
  unsigned long long allWrong = 0;
  MPI_Reduce(&totalWrong, &allWrong, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  const bool timedOut = mps::anyFailed(peers);
  if (rank == 0) {
    std::printf(
        "# bulk_shapes: %d ranks, SM share %d; %% = the pattern's bytes at the best copy rate\n",
        nranks, sms);
    std::printf(
        "# rd / wr / cp rows: GB/s = bytes read or written (cp: both) per second by all ranks\n");
    for (const uint64_t bytes : sizes) {
      double bestCopy = 1e30;
      for (const Cell& c : cells)
        if (c.bytes == bytes && c.pattern == "copy") bestCopy = std::min(bestCopy, c.us);
      // us per byte of traffic at the copy rate: a copy of `bytes` moves 2 x bytes.
      const double usPerByte = bestCopy / (2.0 * bytes);
      std::printf("# %llu MiB per rank: copy %.1f us = %.0f GB/s copied by all ranks\n",
                  static_cast<unsigned long long>(bytes >> 20), bestCopy,
                  1e-3 * bytes * nranks / bestCopy);
      std::printf("%-4s %-20s %10s %7s\n", "pat", "shape", "us", "% roof");
      for (const Cell& c : cells)
        if (c.bytes == bytes)
          std::printf("%-4s %-20s %10.1f %6.1f%% %8.0f GB/s\n", c.pattern.c_str(), c.shape.c_str(),
                      c.us, 100.0 * c.pct * usPerByte / c.us, 1e-3 * c.pct * nranks / c.us);
    }
    if (allWrong != 0)
      std::printf("# WRONG: %llu elements differ from the expected sums\n", allWrong);
    if (timedOut) std::printf("# WARNING: a barrier wait timed out; the rows are not valid\n");
  }
  mps::unmap(ins, rank, nranks);
  mps::unmap(outs, rank, nranks);
  mps::freePeers(peers);
  (void)hipFree(in);
  (void)hipFree(out);
  (void)hipFree(wrong);
  MPI_Finalize();
  return (allWrong != 0 || timedOut) && rank == 0 ? 1 : 0;
}
