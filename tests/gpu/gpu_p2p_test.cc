// SPDX-License-Identifier: MIT
// Point-to-point on the GPU, one rank per process (K MPS partitions of one GPU, or one GPU each):
// the one-copy path of transports/usr/p2p_directory.h and the plan kernel's handshake
// (src/kernels/gpu/p2p_handshake.cuh) against the FIFOs it replaces. On plain runtime
// allocations, as PyTorch's are: the first group into a new allocation takes the FIFOs (the
// sender maps it at that launch), later ones go one-copy; every round is checked either way, and
// the program checks that one-copy offers were made. Cases: a ring of sends of 0, 1, odd and
// large sizes; all-to-allv with uneven splits (0 and 1 included, sends to self); in-place
// all-to-all (the pairwise swap); several messages to one peer; a captured group replayed with new
// data; and, last, a send whose receive is larger: both ranks must fail with an error naming
// both, never hang or write past the buffer.
//
//   mpirun -np K build/bin/gpu_p2p_test   (tools/emulate/partition-run.sh K ...)
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "src/comm/comm.h"
#include "src/platform/gpu_runtime.h"
#include "starscream/starscream.h"
#include "tests/gpu/gpu_test_setup.h"
#include "transports/usr/p2p_directory.h"

namespace {

int g_rank = 0, g_n = 1, g_failures = 0, g_checks = 0;
sscComm_t g_comm = nullptr;
hipStream_t g_stream = nullptr;

void expect(bool ok, const std::string& what) {
  ++g_checks;
  if (ok) return;
  ++g_failures;
  if (g_failures <= 20) std::fprintf(stderr, "rank %d FAIL %s\n", g_rank, what.c_str());
}

uint8_t byteOf(int from, int to, int round, uint64_t i) {
  return static_cast<uint8_t>(from * 37 + to * 11 + round * 5 + i * 13 + 1);
}

// A device buffer with a guard band after it (checked: one-copy stores must stay in bounds).
struct DevBuf {
  uint8_t* p = nullptr;
  uint64_t bytes = 0;
  static constexpr uint64_t kGuard = 256;
  explicit DevBuf(uint64_t n) : bytes(n) {
    checkGpuOrAbort(hipMalloc(reinterpret_cast<void**>(&p), n + kGuard), "hipMalloc", g_rank);
    checkGpuOrAbort(hipMemset(p, 0xee, n + kGuard), "hipMemset", g_rank);
  }
  ~DevBuf() { (void)hipFree(p); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  // From pageable memory hipMemcpy may return before the data has landed, and the test's stream
  // is not ordered after it: wait for the device.
  void fill(const std::vector<uint8_t>& h, uint64_t at = 0) {
    if (h.empty()) return;
    checkGpuOrAbort(hipMemcpy(p + at, h.data(), h.size(), hipMemcpyHostToDevice), "upload", g_rank);
    checkGpuOrAbort(hipDeviceSynchronize(), "upload", g_rank);
  }
  std::vector<uint8_t> read() const {
    std::vector<uint8_t> h(bytes + kGuard);
    checkGpuOrAbort(hipMemcpy(h.data(), p, h.size(), hipMemcpyDeviceToHost), "download", g_rank);
    return h;
  }
};

std::vector<uint8_t> pattern(int from, int to, int round, uint64_t n) {
  std::vector<uint8_t> h(n);
  for (uint64_t i = 0; i < n; ++i) h[i] = byteOf(from, to, round, i);
  return h;
}

// Elements `from` sends to `to` (uneven, 0 and 1 included, odd, one large).
uint64_t split(int from, int to) {
  static const uint64_t kSizes[] = {0, 1, 7, 1000, 4099, 300007, 2, 65537};
  return kSizes[(from * 5 + to * 3) % 8];
}

void sync(const char* what) {
  checkGpuOrAbort(hipStreamSynchronize(g_stream), what, g_rank);
  sscResult_t async = sscSuccess;
  sscCommGetAsyncError(g_comm, &async);
  if (async != sscSuccess) {
    std::fprintf(stderr, "rank %d: %s: %s\n", g_rank, what, sscGetLastError(g_comm));
    MPI_Abort(MPI_COMM_WORLD, 4);
  }
}

void ring(uint64_t n, int rounds) {
  const int next = (g_rank + 1) % g_n, prev = (g_rank + g_n - 1) % g_n;
  DevBuf in(n), out(n);
  for (int r = 0; r < rounds; ++r) {
    in.fill(pattern(g_rank, next, r, n));
    checkSscOrAbort(sscGroupStart(), "group", g_rank);
    checkSscOrAbort(sscSend(in.p, n, sscUint8, next, g_comm, g_stream), "send", g_rank);
    checkSscOrAbort(sscRecv(out.p, n, sscUint8, prev, g_comm, g_stream), "recv", g_rank);
    checkSscOrAbort(sscGroupEnd(), "group end", g_rank);
    sync("ring");
    const std::vector<uint8_t> got = out.read(), want = pattern(prev, g_rank, r, n);
    expect(std::equal(want.begin(), want.end(), got.begin()),
           "ring of " + std::to_string(n) + " bytes, round " + std::to_string(r));
    for (uint64_t i = n; i < n + DevBuf::kGuard; ++i)
      if (got[i] != 0xee) {
        expect(false, "ring wrote past " + std::to_string(n) + " bytes");
        break;
      }
  }
}

void allToAllv(int rounds) {
  std::vector<uint64_t> sendOff(g_n + 1, 0), recvOff(g_n + 1, 0);
  for (int q = 0; q < g_n; ++q) {
    sendOff[q + 1] = sendOff[q] + split(g_rank, q);
    recvOff[q + 1] = recvOff[q] + split(q, g_rank);
  }
  DevBuf in(sendOff[g_n]), out(recvOff[g_n]);
  for (int r = 0; r < rounds; ++r) {
    for (int q = 0; q < g_n; ++q) in.fill(pattern(g_rank, q, r, split(g_rank, q)), sendOff[q]);
    checkSscOrAbort(sscGroupStart(), "group", g_rank);
    for (int q = 0; q < g_n; ++q) {
      checkSscOrAbort(sscSend(in.p + sendOff[q], split(g_rank, q), sscUint8, q, g_comm, g_stream),
                      "send", g_rank);
      checkSscOrAbort(sscRecv(out.p + recvOff[q], split(q, g_rank), sscUint8, q, g_comm, g_stream),
                      "recv", g_rank);
    }
    checkSscOrAbort(sscGroupEnd(), "group end", g_rank);
    sync("all-to-allv");
    const std::vector<uint8_t> got = out.read();
    for (int q = 0; q < g_n; ++q) {
      const std::vector<uint8_t> want = pattern(q, g_rank, r, split(q, g_rank));
      expect(std::equal(want.begin(), want.end(), got.begin() + recvOff[q]),
             "all-to-allv block from rank " + std::to_string(q) + ", round " + std::to_string(r));
    }
  }
}

// Every block q of one buffer is sent to q and replaced by what q sent (nccl-tests' in-place
// alltoall, PyTorch's all_to_all_single with one tensor).
void allToAllInPlace(uint64_t block, int rounds) {
  DevBuf buf(block * g_n);
  for (int r = 0; r < rounds; ++r) {
    for (int q = 0; q < g_n; ++q) buf.fill(pattern(g_rank, q, r, block), q * block);
    checkSscOrAbort(sscGroupStart(), "group", g_rank);
    for (int q = 0; q < g_n; ++q) {
      checkSscOrAbort(sscSend(buf.p + q * block, block, sscUint8, q, g_comm, g_stream), "send",
                      g_rank);
      checkSscOrAbort(sscRecv(buf.p + q * block, block, sscUint8, q, g_comm, g_stream), "recv",
                      g_rank);
    }
    checkSscOrAbort(sscGroupEnd(), "group end", g_rank);
    sync("in-place all-to-all");
    const std::vector<uint8_t> got = buf.read();
    for (int q = 0; q < g_n; ++q) {
      const std::vector<uint8_t> want = pattern(q, g_rank, r, block);
      expect(std::equal(want.begin(), want.end(), got.begin() + q * block),
             "in-place all-to-all block " + std::to_string(q) + " of " + std::to_string(block) +
                 " bytes, round " + std::to_string(r));
    }
  }
}

// Several messages to one peer in one group: they pair in posting order.
void manyToOne(int rounds) {
  static const uint64_t kSizes[] = {33, 0, 1 << 20, 5, 70001};
  const int next = (g_rank + 1) % g_n, prev = (g_rank + g_n - 1) % g_n;
  std::vector<DevBuf*> in, out;
  for (uint64_t n : kSizes) in.push_back(new DevBuf(n)), out.push_back(new DevBuf(n));
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < in.size(); ++k)
      in[k]->fill(pattern(g_rank, next, r * 7 + static_cast<int>(k), kSizes[k]));
    checkSscOrAbort(sscGroupStart(), "group", g_rank);
    for (size_t k = 0; k < in.size(); ++k) {
      checkSscOrAbort(sscSend(in[k]->p, kSizes[k], sscUint8, next, g_comm, g_stream), "send",
                      g_rank);
      checkSscOrAbort(sscRecv(out[k]->p, kSizes[k], sscUint8, prev, g_comm, g_stream), "recv",
                      g_rank);
    }
    checkSscOrAbort(sscGroupEnd(), "group end", g_rank);
    sync("many to one");
    for (size_t k = 0; k < out.size(); ++k) {
      const std::vector<uint8_t> got = out[k]->read();
      const std::vector<uint8_t> want =
          pattern(prev, g_rank, r * 7 + static_cast<int>(k), kSizes[k]);
      expect(std::equal(want.begin(), want.end(), got.begin()),
             "message " + std::to_string(k) + " to one peer, round " + std::to_string(r));
    }
  }
  for (size_t k = 0; k < in.size(); ++k) delete in[k], delete out[k];
}

// A sendrecv group captured into a graph after an eager call mapped its buffers; replays with new
// data each time.
void captured(uint64_t n) {
  const int next = (g_rank + 1) % g_n, prev = (g_rank + g_n - 1) % g_n;
  DevBuf in(n), out(n);
  const auto group = [&] {
    checkSscOrAbort(sscGroupStart(), "group", g_rank);
    checkSscOrAbort(sscSend(in.p, n, sscUint8, next, g_comm, g_stream), "send", g_rank);
    checkSscOrAbort(sscRecv(out.p, n, sscUint8, prev, g_comm, g_stream), "recv", g_rank);
    checkSscOrAbort(sscGroupEnd(), "group end", g_rank);
  };
  in.fill(pattern(g_rank, next, 100, n));
  group();
  sync("eager call before capture");
  hipGraph_t graph = nullptr;
  hipGraphExec_t exec = nullptr;
  checkGpuOrAbort(hipStreamBeginCapture(g_stream, hipStreamCaptureModeGlobal), "capture", g_rank);
  group();
  checkGpuOrAbort(hipStreamEndCapture(g_stream, &graph), "end capture", g_rank);
  checkGpuOrAbort(hipGraphInstantiateWithFlags(&exec, graph, 0), "instantiate", g_rank);
  for (int r = 0; r < 3; ++r) {
    in.fill(pattern(g_rank, next, 101 + r, n));
    MPI_Barrier(MPI_COMM_WORLD);  // every rank's input is in place before any replay reads it
    checkGpuOrAbort(hipGraphLaunch(exec, g_stream), "graph launch", g_rank);
    sync("graph replay");
    const std::vector<uint8_t> got = out.read(), want = pattern(prev, g_rank, 101 + r, n);
    expect(std::equal(want.begin(), want.end(), got.begin()),
           "captured sendrecv replay " + std::to_string(r));
    MPI_Barrier(MPI_COMM_WORLD);  // the peer read its output before this rank refills its input
  }
  (void)hipGraphExecDestroy(exec);
  (void)hipGraphDestroy(graph);
}

// A send whose receive is 16 bytes longer, after a matching call mapped the buffers: both ranks
// of every pair fail, with a message that names both, within the timeout. Last: the communicator
// is in error afterwards.
void mismatch() {
  sscComm_t comm = g_comm;
  const int next = (g_rank + 1) % g_n, prev = (g_rank + g_n - 1) % g_n;
  const uint64_t n = 4096;
  DevBuf in(n), out(n + 16);
  for (int r = 0; r < 3; ++r) {
    const uint64_t want = r < 2 ? n : n + 16;
    checkSscOrAbort(sscGroupStart(), "group", g_rank);
    checkSscOrAbort(sscSend(in.p, n, sscUint8, next, comm, g_stream), "send", g_rank);
    checkSscOrAbort(sscRecv(out.p, want, sscUint8, prev, comm, g_stream), "recv", g_rank);
    (void)sscGroupEnd();
    (void)hipStreamSynchronize(g_stream);
    // The backend's watcher turns the kernel's error word into the communicator's error.
    sscResult_t async = sscSuccess;
    for (int wait = 0; wait < (r < 2 ? 1 : 5000); ++wait) {
      sscCommGetAsyncError(comm, &async);
      if (async != sscSuccess) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (r < 2) {
      expect(async == sscSuccess, "matching calls before the mismatch succeed");
      continue;
    }
    // The communicator's asynchronous failure, read on a thread with no failure of its own (this
    // thread's last error may be an earlier call's).
    std::string msg;
    std::thread([&] { msg = sscGetLastError(comm); }).join();
    expect(async == sscInvalidUsage,
           std::string("mismatch reported as invalid usage, got ") + sscGetErrorString(async));
    expect(msg.find("rank " + std::to_string(g_rank)) != std::string::npos &&
               (msg.find("rank " + std::to_string(next)) != std::string::npos ||
                msg.find("rank " + std::to_string(prev)) != std::string::npos),
           "mismatch message names both ranks: " + msg);
    const std::vector<uint8_t> got = out.read();
    for (uint64_t i = n + 16; i < n + 16 + DevBuf::kGuard; ++i)
      if (got[i] != 0xee) {
        expect(false, "a mismatched receive was written past its end");
        break;
      }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (!startGpuRank(&argc, &argv, "gpu_p2p_test", &g_rank, &g_n)) return 0;
  g_comm = newMpiComm(g_rank, g_n);
  checkGpuOrAbort(hipStreamCreateWithFlags(&g_stream, hipStreamNonBlocking), "stream", g_rank);
  for (uint64_t n :
       {uint64_t{0}, uint64_t{1}, uint64_t{7}, uint64_t{65537}, (uint64_t{4} << 20) + 3})
    ring(n, 3);
  allToAllv(3);
  allToAllInPlace(1000, 3);
  allToAllInPlace(uint64_t{1} << 20, 3);
  manyToOne(3);
  captured(uint64_t{1} << 20);
  const uint64_t offers =
      g_comm->p2pDirectory == nullptr ? 0 : g_comm->p2pDirectory->stats().oneCopyOffers;
  if (g_n > 1) expect(offers > 0, "one-copy offers were made");
  if (g_n > 1) mismatch();
  sscCommAbort(g_comm);
  (void)hipStreamDestroy(g_stream);
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf(
        "gpu_p2p_test: %d ranks, %d checks on rank 0, one-copy offers on rank 0: %llu, "
        "%d failure(s)\n",
        g_n, g_checks, static_cast<unsigned long long>(offers), failures);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
