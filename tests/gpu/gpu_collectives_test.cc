// SPDX-License-Identifier: MIT
// GPU correctness suite: every collective, dtype and op on the GPU backend against a host
// reference, for each algorithm (STARSCREAM_ALGO) at counts 0, 1, 7, 1000 and 2^20+3. The
// symmetric algorithm runs on registered buffers (sscCommRegister of sscMemAlloc memory), twice:
// with the LL small-message path ("symmetric") and with the bulk kernel only ("symmetric_bulk":
// also the bulk grid for all-gather), plus a count above the one-shot limit (two-shot); and
// "symmetric_wide", all-gather's push on the wide grid (STARSCREAM_ZERO_COPY_GRID=wide); the run
// fails if its kernels never ran.
//
//   mpirun -np K build/bin/gpu_collectives_test [--quick] [--algos
//   symmetric,symmetric_bulk,symmetric_wide] (tools/emulate/partition-run.sh; --algos: only those
//   variants, comma-separated)
//
// Inputs are small integers (-1, 0, 1; unsigned 0..2) so every partial sum, product and average
// is exact in every type, fp8 included: results then do not depend on the reduction order, and
// the check is bitwise. Prints "SKIPPED" and exits 0 where no GPU is visible.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/gpu/gpu_test_setup.h"
#include "src/platform/gpu_runtime.h"
#include "src/comm/comm.h"
#include "src/device/gpu/gpu_symmetric.h"
#include "src/kernels/host/reduce.h"
#include "starscream/starscream.h"

using namespace ssc;

namespace {

int g_rank = 0, g_nranks = 1, g_failures = 0, g_checks = 0;

// Element i of rank r's input. Unsigned types get 0..2, everything else -1..1; products use
// nonzero values so they exercise the combiner rather than collapse to zero.
double inputValue(sscDataType_t t, int r, size_t i, sscRedOp_t op) {
  const bool isUnsigned = t == sscUint8 || t == sscUint32 || t == sscUint64;
  const size_t h = i * 7 + static_cast<size_t>(r) * 3 + 1;
  if (op == sscProd) return isUnsigned ? 1.0 + static_cast<double>(h % 2) : (h % 2 ? 1.0 : -1.0);
  return isUnsigned ? static_cast<double>(h % 3) : static_cast<double>(h % 3) - 1.0;
}

void fillInput(std::vector<char>& buf, sscDataType_t t, int r, size_t n, sscRedOp_t op) {
  buf.resize(n * dtypeSize(t));
  for (size_t i = 0; i < n; ++i) setElementFromDouble(t, buf.data(), i, inputValue(t, r, i, op));
}

// The reduction over ranks of their inputs [off, off + n), as the library defines it (Avg: float
// types pre-scale by 1/nranks, integers divide the sum), combined in rank order.
std::vector<char> reference(sscDataType_t t, sscRedOp_t op, size_t off, size_t n) {
  const size_t es = dtypeSize(t);
  const ReduceKind kind = op == sscProd  ? ReduceKind::kProd
                          : op == sscMax ? ReduceKind::kMax
                          : op == sscMin ? ReduceKind::kMin
                                         : ReduceKind::kSum;
  const bool floatAvg = op == sscAvg && dtypeIsFloat(t);
  Scalar scale;
  scale.f = 1.0 / g_nranks;
  std::vector<char> acc, in;
  for (int r = 0; r < g_nranks; ++r) {
    fillInput(in, t, r, off + n, op);
    std::vector<char> mine(in.begin() + off * es, in.end());
    if (floatAvg) hostScale(t, mine.data(), mine.data(), n, scale);
    if (r == 0)
      acc = mine;
    else
      hostReduce(t, kind, acc.data(), mine.data(), acc.data(), n);
  }
  if (op == sscAvg && !floatAvg) hostDivide(t, acc.data(), acc.data(), n, g_nranks);
  return acc;
}

struct Buffers {
  void* in = nullptr;
  void* out = nullptr;
  size_t bytes = 0;
};

void upload(void* dev, const std::vector<char>& host) {
  if (!host.empty()) CHECK_GPU(hipMemcpy(dev, host.data(), host.size(), hipMemcpyHostToDevice));
}
std::vector<char> download(const void* dev, size_t bytes) {
  std::vector<char> host(bytes);
  if (bytes) CHECK_GPU(hipMemcpy(host.data(), dev, bytes, hipMemcpyDeviceToHost));
  return host;
}

void expectEqual(const char* what, const std::vector<char>& got, const std::vector<char>& want,
                 sscDataType_t t, const std::string& ctx) {
  ++g_checks;
  if (got.size() == want.size() && std::memcmp(got.data(), want.data(), got.size()) == 0) return;
  ++g_failures;
  const size_t es = dtypeSize(t);
  size_t i = 0;
  while (i * es < got.size() && std::memcmp(got.data() + i * es, want.data() + i * es, es) == 0)
    ++i;
  if (g_failures <= 20)
    std::fprintf(stderr, "rank %d FAIL %s %s: element %zu is %g, expected %g\n", g_rank, what,
                 ctx.c_str(), i, getElementAsDouble(t, got.data(), i),
                 getElementAsDouble(t, want.data(), i));
}

void callOk(sscResult_t r, const char* what, const std::string& ctx, sscComm_t comm) {
  if (r == sscSuccess) return;
  ++g_failures;
  std::fprintf(stderr, "rank %d FAIL %s %s: %s (%s)\n", g_rank, what, ctx.c_str(),
               sscGetErrorString(r), sscGetLastError(comm));
}

void sync(sscComm_t comm, const std::string& ctx) {
  callOk(sscStreamSynchronize(nullptr), "sync", ctx, comm);
}

void runCase(sscComm_t comm, Buffers& b, sscDataType_t t, sscRedOp_t op, size_t n,
             const std::string& algo) {
  const size_t es = dtypeSize(t);
  const int K = g_nranks, me = g_rank;
  const std::string ctx =
      algo + " " + dtypeName(t) + " op" + std::to_string(op) + " n=" + std::to_string(n);
  std::vector<char> in;
  const bool reduces = true;
  (void)reduces;

  // all-reduce
  fillInput(in, t, me, n, op);
  upload(b.in, in);
  callOk(sscAllReduce(b.in, b.out, n, t, op, comm, nullptr), "allreduce", ctx, comm);
  sync(comm, ctx);
  expectEqual("allreduce", download(b.out, n * es), reference(t, op, 0, n), t, ctx);
  // in place (small sizes take the LL packets, whose one-shot is safe in place)
  upload(b.in, in);
  callOk(sscAllReduce(b.in, b.in, n, t, op, comm, nullptr), "allreduce in place", ctx, comm);
  sync(comm, ctx);
  expectEqual("allreduce in place", download(b.in, n * es), reference(t, op, 0, n), t, ctx);

  // reduce-scatter: block `me` of the reduction of everyone's K * n inputs
  fillInput(in, t, me, K * n, op);
  upload(b.in, in);
  callOk(sscReduceScatter(b.in, b.out, n, t, op, comm, nullptr), "reducescatter", ctx, comm);
  sync(comm, ctx);
  expectEqual("reducescatter", download(b.out, n * es), reference(t, op, me * n, n), t, ctx);

  // reduce to the last rank
  const int root = K - 1;
  fillInput(in, t, me, n, op);
  upload(b.in, in);
  callOk(sscReduce(b.in, b.out, n, t, op, root, comm, nullptr), "reduce", ctx, comm);
  sync(comm, ctx);
  if (me == root) expectEqual("reduce", download(b.out, n * es), reference(t, op, 0, n), t, ctx);
}

void runMoves(sscComm_t comm, Buffers& b, sscDataType_t t, size_t n, const std::string& algo) {
  const size_t es = dtypeSize(t);
  const int K = g_nranks, me = g_rank;
  const std::string ctx = algo + " " + dtypeName(t) + " n=" + std::to_string(n);
  std::vector<char> in, want, peer;

  // all-gather
  fillInput(in, t, me, n, sscSum);
  upload(b.in, in);
  callOk(sscAllGather(b.in, b.out, n, t, comm, nullptr), "allgather", ctx, comm);
  sync(comm, ctx);
  want.clear();
  for (int r = 0; r < K; ++r) {
    fillInput(peer, t, r, n, sscSum);
    want.insert(want.end(), peer.begin(), peer.end());
  }
  expectEqual("allgather", download(b.out, K * n * es), want, t, ctx);

  // broadcast from rank 0
  fillInput(in, t, me, n, sscSum);
  upload(b.in, in);
  callOk(sscBroadcast(b.in, b.out, n, t, 0, comm, nullptr), "broadcast", ctx, comm);
  sync(comm, ctx);
  fillInput(want, t, 0, n, sscSum);
  expectEqual("broadcast", download(b.out, n * es), want, t, ctx);

  // all-to-all: out[p * n + i] = in_p[me * n + i]
  fillInput(in, t, me, K * n, sscSum);
  upload(b.in, in);
  callOk(sscAllToAll(b.in, b.out, n, t, comm, nullptr), "alltoall", ctx, comm);
  sync(comm, ctx);
  want.clear();
  for (int p = 0; p < K; ++p) {
    fillInput(peer, t, p, K * n, sscSum);
    want.insert(want.end(), peer.begin() + me * n * es, peer.begin() + (me + 1) * n * es);
  }
  expectEqual("alltoall", download(b.out, K * n * es), want, t, ctx);

  // send/recv around the ring, fused in a group
  fillInput(in, t, me, n, sscSum);
  upload(b.in, in);
  sscGroupStart();
  callOk(sscSend(b.in, n, t, (me + 1) % K, comm, nullptr), "send", ctx, comm);
  callOk(sscRecv(b.out, n, t, (me + K - 1) % K, comm, nullptr), "recv", ctx, comm);
  callOk(sscGroupEnd(), "groupend", ctx, comm);
  sync(comm, ctx);
  fillInput(want, t, (me + K - 1) % K, n, sscSum);
  expectEqual("sendrecv", download(b.out, n * es), want, t, ctx);
}

}  // namespace

int main(int argc, char** argv) {
  // A topology file with several nodes routes traffic through the network proxy, which calls MPI.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_nranks);
  bool quick = false;
  std::vector<std::string> algos = {"default",        "ring",          "bidir_ring",
                                    "direct",         "hierarchical",  "symmetric",
                                    "symmetric_bulk", "symmetric_wide"};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--algos") == 0 && i + 1 < argc) {
      const std::vector<std::string> all = algos;
      algos.clear();
      std::string list = argv[++i];
      for (size_t at = 0; at <= list.size();) {
        const size_t comma = std::min(list.find(',', at), list.size());
        const std::string name = list.substr(at, comma - at);
        if (std::find(all.begin(), all.end(), name) == all.end()) {
          if (g_rank == 0)
            std::fprintf(stderr, "gpu_collectives_test: unknown variant '%s'\n", name.c_str());
          MPI_Finalize();
          return 2;
        }
        algos.push_back(name);
        at = comma + 1;
      }
    } else {
      if (g_rank == 0)
        std::fprintf(
            stderr,
            "usage: gpu_collectives_test [--quick] [--algos default,ring,...,symmetric_wide]\n");
      MPI_Finalize();
      return 2;
    }
  }

  if (setUpGpuRank("gpu_collectives_test", g_rank, g_nranks) < 0) {
    MPI_Finalize();
    return 0;
  }

  const std::vector<size_t> counts = quick ? std::vector<size_t>{0, 1, 7, 1000}
                                           : std::vector<size_t>{0, 1, 7, 1000, (1u << 20) + 3};
  const size_t maxBytes =
      8 * static_cast<size_t>(g_nranks) * std::max<size_t>(counts.back(), 70001);
  Buffers b;
  if (sscMemAlloc(&b.in, maxBytes) != sscSuccess || sscMemAlloc(&b.out, maxBytes) != sscSuccess) {
    std::fprintf(stderr, "rank %d: sscMemAlloc failed: %s\n", g_rank, sscGetLastError(nullptr));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  // "default": the tuner's choice on unregistered buffers (small all-reduces take the LL packets
  // without registration); the symmetric variants run on registered buffers.
  for (const std::string& algo : algos) {
    const bool sym = algo.rfind("symmetric", 0) == 0;
    const bool expectSym = sym || algo == "default";
    setenv("STARSCREAM_ALGO", sym ? "symmetric" : algo == "default" ? "" : algo.c_str(), 1);
    sscUniqueId id;
    if (g_rank == 0) sscGetUniqueId(&id);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    sscComm_t comm = nullptr;
    sscResult_t r = sscCommInitRank(&comm, g_nranks, id, g_rank);
    if (r != sscSuccess) {
      std::fprintf(stderr, "rank %d: comm init (%s) failed: %s\n", g_rank, algo.c_str(),
                   sscGetLastError(nullptr));
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    comm->config.packetMaxBytes = algo == "symmetric_bulk" ? 0 : UINT64_MAX;  // bulk: no LL
    comm->config.zeroCopyGrid = algo == "symmetric_bulk"   ? ZeroCopyGrid::kBulk
                                : algo == "symmetric_wide" ? ZeroCopyGrid::kWide
                                                           : ZeroCopyGrid::kAuto;
    void *hIn = nullptr, *hOut = nullptr;
    if (sym) {
      callOk(sscCommRegister(comm, b.in, maxBytes, &hIn), "register", algo, comm);
      callOk(sscCommRegister(comm, b.out, maxBytes, &hOut), "register", algo, comm);
    }
    const int before = g_failures;
    const uint64_t launchesBefore = gpu::symmetricLaunches();
    std::vector<size_t> mine = counts;
    // Two-shot for every type (> 64 KiB), odd slice offsets; unregistered: through the staging.
    if (expectSym) mine.push_back(70001);
    for (size_t n : mine) {
      for (int t = 0; t < sscNumTypes; ++t) {
        for (int op = 0; op < sscNumOps; ++op)
          runCase(comm, b, static_cast<sscDataType_t>(t), static_cast<sscRedOp_t>(op), n, algo);
        runMoves(comm, b, static_cast<sscDataType_t>(t), n, algo);
      }
    }
    // Zero-copy and LL packets need every peer mapped, so across nodes the symmetric algorithm
    // falls back to the FIFO algorithms (checked above like any other); within a node it runs.
    sscRankTopology_t where{};
    callOk(sscCommGetRankTopology(comm, g_rank, &where), "topology", algo, comm);
    const bool ranSymmetric = gpu::symmetricLaunches() != launchesBefore;
    if (expectSym && ranSymmetric != (where.nodes == 1)) {
      ++g_failures;
      std::fprintf(stderr, "rank %d FAIL %s: symmetric kernels %s on %d node(s)\n", g_rank,
                   algo.c_str(), ranSymmetric ? "ran" : "did not run", where.nodes);
    }
    if (hIn) callOk(sscCommDeregister(comm, hIn), "deregister", algo, comm);
    if (hOut) callOk(sscCommDeregister(comm, hOut), "deregister", algo, comm);
    sscCommDestroy(comm);
    int local = g_failures - before, total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0)
      std::printf("gpu_collectives_test K=%d algo=%-14s %s (%d failure(s))\n", g_nranks,
                  algo.c_str(), total == 0 ? "PASSED" : "FAILED", total);
    std::fflush(stdout);
  }
  sscMemFree(b.in);
  sscMemFree(b.out);
  int total = 0;
  MPI_Allreduce(&g_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("gpu_collectives_test K=%d: %s, %d checks per rank\n", g_nranks,
                total == 0 ? "ALL PASSED" : "FAILED", g_checks);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
