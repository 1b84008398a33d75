// SPDX-License-Identifier: MIT
// The symmetric executor's own checks, below the public API (hand-built plans through the
// backend), for what the collective suite cannot reach:
//   1. registering memory that is not from sscMemAlloc maps nothing, on every rank;
//   2. a plan with a barrier in the middle (local grid sync + per-block barrier): two-shot
//      reduce into everyone's output, barrier, then every rank reduces all outputs into its input;
//   3. ranks that call with different arguments fail with sscInvalidUsage instead of hanging or
//      reading the wrong memory, on the LL path (header) and the bulk path (barrier hash).
//
//   mpirun -np K build/bin/gpu_symmetric_test     (tools/emulate/partition-run.sh)
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "src/comm/comm.h"
#include "src/platform/gpu_runtime.h"
#include "src/device/gpu/gpu_symmetric.h"
#include "starscream/starscream.h"
#include "tests/gpu/gpu_test_setup.h"

using namespace ssc;

namespace {

int g_rank = 0, g_nranks = 1, g_failures = 0;

void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++g_failures;
  std::fprintf(stderr, "rank %d FAIL %s\n", g_rank, what.c_str());
}

sscComm_t newComm() { return newMpiComm(g_rank, g_nranks); }

Step step(StepOp op, uint16_t src, uint64_t srcOff, uint16_t dst, uint64_t dstOff, uint64_t count) {
  return Step{
      op, static_cast<uint8_t>(kFlagPreOp | kFlagPostOp), src, dst, -1, -1, srcOff, dstOff, count};
}

// Test 2: [B, PeerReduceBcast(in slice -> out@all), B (middle), PeerReduce(out@all -> in), B].
// With int32 sum of x_r[i] = r + i: out = S[i] = sum_r (r + i), then in = n * S[i].
void middleBarrier(sscComm_t comm, void* in, void* out, const std::vector<void*>& pin,
                   const std::vector<void*>& pout, size_t count) {
  const int n = g_nranks, r = g_rank;
  std::vector<int32_t> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = r + static_cast<int32_t>(i);
  hipMemcpy(in, host.data(), count * 4, hipMemcpyHostToDevice);
  auto plan = std::make_shared<RankPlan>();
  plan->coll = CollKind::kAllReduce;
  plan->algo = Algo::kSymmetric;
  plan->rank = r;
  plan->nranks = n;
  plan->bufElems = {count, count, 0};
  plan->channels.resize(1);
  const uint64_t lo = count * r / n, hi = count * (r + 1) / n;
  const Step barrier = step(StepOp::kBarrier, kBufIn, 0, kBufOut, 0, 0);
  plan->channels[0].steps = {
      barrier, step(StepOp::kPeerReduceBcast, kBufIn, lo, kBufOut, lo, hi - lo), barrier,
      step(StepOp::kPeerReduce, kBufOut, 0, kBufIn, 0, count), barrier};
  auto work = std::make_shared<Work>();
  work->plan = plan;
  work->reduce.dtype = sscInt32;
  work->reduce.kind = ReduceKind::kSum;
  work->elemBytes = 4;
  work->buffers = {in, out};
  work->peerBuffers = {pin, pout};
  work->callHash = 0x5eed;
  expect(comm->backend->enqueue(comm, work, nullptr) == sscSuccess, "middle-barrier enqueue");
  expect(sscStreamSynchronize(nullptr) == sscSuccess,
         std::string("middle-barrier run: ") + sscGetLastError(comm));
  std::vector<int32_t> got(count), sum(count);
  hipMemcpy(got.data(), in, count * 4, hipMemcpyDeviceToHost);
  hipMemcpy(sum.data(), out, count * 4, hipMemcpyDeviceToHost);
  for (size_t i = 0; i < count; ++i) {
    const int32_t s = n * static_cast<int32_t>(i) + n * (n - 1) / 2;
    if (sum[i] != s || got[i] != n * s) {
      expect(false, "middle-barrier element " + std::to_string(i) + ": out " +
                        std::to_string(sum[i]) + " in " + std::to_string(got[i]) + ", expected " +
                        std::to_string(s) + " and " + std::to_string(n * s));
      break;
    }
  }
}

// Test 3: rank 0 reduces with max, the others with sum: every rank must fail with
// sscInvalidUsage (mismatch detected), not time out.
void mismatch(size_t count, const char* what) {
  sscComm_t comm = newComm();
  void *in = nullptr, *out = nullptr, *hin = nullptr, *hout = nullptr;
  sscMemAlloc(&in, count * 4);
  sscMemAlloc(&out, count * 4);
  sscCommRegister(comm, in, count * 4, &hin);
  sscCommRegister(comm, out, count * 4, &hout);
  hipMemset(in, 0, count * 4);
  const uint64_t before = gpu::symmetricLaunches();
  const sscResult_t r =
      sscAllReduce(in, out, count, sscFloat32, g_rank == 0 ? sscMax : sscSum, comm, nullptr);
  sscResult_t s = sscStreamSynchronize(nullptr);
  sscResult_t async = sscSuccess;
  sscCommGetAsyncError(comm, &async);
  expect(gpu::symmetricLaunches() > before,
         std::string(what) + ": the symmetric kernel did not run");
  expect(r == sscSuccess && (s == sscInvalidUsage || async == sscInvalidUsage),
         std::string(what) + ": expected sscInvalidUsage, got " + sscGetErrorString(s) + " / " +
             sscGetErrorString(async) + ": " + sscGetLastError(comm));
  sscCommDeregister(comm, hin);
  sscCommDeregister(comm, hout);
  sscCommAbort(comm);
  sscMemFree(in);
  sscMemFree(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (!startGpuRank(&argc, &argv, "gpu_symmetric_test", &g_rank, &g_nranks)) return 0;
  setenv("STARSCREAM_ALGO", "symmetric", 1);
  if (std::getenv("STARSCREAM_TIMEOUT") == nullptr) setenv("STARSCREAM_TIMEOUT", "20", 1);

  sscComm_t comm = newComm();
  const size_t count = (1u << 20) + 5;
  void *in = nullptr, *out = nullptr;
  sscMemAlloc(&in, count * 4);
  sscMemAlloc(&out, count * 4);

  // 1. Host memory is not shareable: empty on every rank, and not an error.
  std::vector<char> hostMem(4096);
  std::vector<void*> bases{reinterpret_cast<void*>(1)};
  expect(
      comm->backend->registerBuffer(comm, hostMem.data(), hostMem.size(), &bases) == sscSuccess &&
          bases.empty(),
      "host memory registration must succeed with no peer mapping");
  // An inner range of an sscMemAlloc allocation is shareable; registering the same allocation
  // twice opens each peer's allocation once (ImportCache) and maps it at the same place.
  std::vector<void*> pin, pout, inner;
  expect(comm->backend->registerBuffer(comm, in, count * 4, &pin) == sscSuccess &&
             pin.size() == static_cast<size_t>(g_nranks),
         "registering sscMemAlloc memory");
  expect(comm->backend->registerBuffer(comm, out, count * 4, &pout) == sscSuccess &&
             pout.size() == static_cast<size_t>(g_nranks),
         "registering sscMemAlloc memory (out)");
  expect(comm->backend->registerBuffer(comm, static_cast<char*>(in) + 4096, 4096, &inner) ==
                 sscSuccess &&
             inner.size() == pin.size(),
         "registering an inner range");
  for (size_t q = 0; q < inner.size() && q < pin.size(); ++q)
    expect(inner[q] == static_cast<char*>(pin[q]) + 4096, "inner range maps at base + offset");
  comm->backend->deregisterBuffer(comm, static_cast<char*>(in) + 4096, inner);

  // 2. Middle barrier, at a small and a large count (1 block and the full grid).
  if (pin.size() == static_cast<size_t>(g_nranks) && pout.size() == pin.size()) {
    middleBarrier(comm, in, out, pin, pout, 1000);
    middleBarrier(comm, in, out, pin, pout, count);
  }
  comm->backend->deregisterBuffer(comm, in, pin);
  comm->backend->deregisterBuffer(comm, out, pout);
  sscCommDestroy(comm);
  sscMemFree(in);
  sscMemFree(out);

  // 3. Mismatched calls, LL path (4 KiB) and bulk path (4 MiB), K > 1 only.
  if (g_nranks > 1) {
    mismatch(1024, "mismatch (LL)");
    mismatch(1 << 20, "mismatch (bulk)");
  }

  int total = 0;
  MPI_Allreduce(&g_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("gpu_symmetric_test K=%d: %s (%d failure(s))\n", g_nranks,
                total == 0 ? "PASSED" : "FAILED", total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
