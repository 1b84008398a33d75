// SPDX-License-Identifier: MIT
// sm_free: can a partition move bytes and order itself against its peers without its SMs? The
// facts the GEMM ops' next design needs (docs/gemm.md, Left): the fused GEMM-collectives hid no
// communication at K = 8 because every copy and every wait took SMs from the partition's GEMM.
// Two mechanisms take none on paper: copy engines (cudaMemcpyAsync device to device) and stream
// memory operations (sscStreamWaitValueGeq32 / sscStreamWriteValue32). Whether they do under MPS,
// between MPS clients, is what this measures. No library: the machine, not Starscream.
//
//   mpirun -np K sm_free [MiB]     (tools/emulate/partition-run.sh K build/bin/sm_free 64)
//
// Rows, each the slowest rank's figure, all ranks running at once:
//   spin                  a kernel that keeps every SM of the rank's share busy for 2 ms
//   copy own / peer       cudaMemcpyAsync of S MiB: within the rank's memory / from the next
//                         rank's buffer through its IPC mapping
//   copy own|peer + spin  the same copy on a second stream while the spin runs on the first:
//                         the copy's own time (events around it on its stream). About the copy
//                         alone: it ran beside the spin (a copy engine); about 2 ms more: it
//                         waited for SMs
//   ping-pong             rank pairs (0-1, 2-3, ...) pass a counter back and forth with stream
//                         memory operations only (write the peer's word, wait for one's own):
//                         microseconds per round trip
//   ping-pong + spin      the same while a spin kernel holds the SMs on another stream
// A row reads "n/a" where the runtime refused the operation (its error on stderr).
#include <algorithm>
#include <cstdlib>
#include <string>

#include "perf/mps_ranks.cuh"

namespace {

using mps::check;
constexpr double kSpinSeconds = 2e-3;

__global__ void spinKernel(unsigned long long ticks) {
  const unsigned long long start = sscGpuTimer();
  while (sscGpuTimer() - start < ticks) {
  }
}

unsigned long long g_spinTicks = 0;  // kSpinSeconds in sscGpuTimer's ticks

// Every SM of the share busy: several full blocks per SM, each spinning for the same time.
void launchSpin(hipStream_t s, int sms) {
  spinKernel<<<dim3(4 * sms), dim3(256), 0, s>>>(g_spinTicks);
  check(hipGetLastError(), "spin launch");
}

// Milliseconds between two events already completed.
double ms(hipEvent_t a, hipEvent_t b) {
  float t = 0;
  check(hipEventElapsedTime(&t, a, b), "hipEventElapsedTime");
  return t;
}

struct Streams {
  hipStream_t main = nullptr, side = nullptr;
  hipEvent_t e[4] = {};
};

// The copy's own time in ms (events on the copy's stream), with or without a spin beside it.
double copyMs(Streams& st, void* dst, const void* src, size_t bytes, bool spin, int sms) {
  check(hipDeviceSynchronize(), "sync");
  MPI_Barrier(MPI_COMM_WORLD);
  if (spin) launchSpin(st.main, sms);
  check(hipEventRecord(st.e[0], st.side), "record");
  check(hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToDevice, st.side), "hipMemcpyAsync");
  check(hipEventRecord(st.e[1], st.side), "record");
  check(hipDeviceSynchronize(), "sync");
  return ms(st.e[0], st.e[1]);
}

// Round trips of `rounds` between this rank and its partner (rank ^ 1) with stream memory
// operations only; microseconds per round trip, or a negative value when refused.
double pingPongUs(Streams& st, uint32_t* mine, uint32_t* partnerWord, bool first, int rounds,
                  uint32_t* base, bool spin, int sms) {
  check(hipDeviceSynchronize(), "sync");
  MPI_Barrier(MPI_COMM_WORLD);
  if (spin) launchSpin(st.main, sms);
  check(hipEventRecord(st.e[2], st.side), "record");
  hipError_t e = hipSuccess;
  for (int i = 1; i <= rounds && e == hipSuccess; ++i) {
    const uint32_t v = *base + static_cast<uint32_t>(i);
    if (first) {
      e = sscStreamWriteValue32(st.side, partnerWord, v);
      if (e == hipSuccess) e = sscStreamWaitValueGeq32(st.side, mine, v);
    } else {
      e = sscStreamWaitValueGeq32(st.side, mine, v);
      if (e == hipSuccess) e = sscStreamWriteValue32(st.side, partnerWord, v);
    }
  }
  *base += static_cast<uint32_t>(rounds);
  if (e != hipSuccess) {
    std::fprintf(stderr, "stream memory operation refused: %s\n", hipGetErrorString(e));
    check(hipDeviceSynchronize(), "sync");
    return -1;
  }
  check(hipEventRecord(st.e[3], st.side), "record");
  check(hipDeviceSynchronize(), "sync");
  return 1000.0 * ms(st.e[2], st.e[3]) / rounds;
}

// One row on rank 0: the largest value over ranks (a time), or with `lowest` the smallest (a
// bandwidth); "n/a" when any rank's value is negative (refused). Collective.
void row(int rank, const char* name, double value, const char* unit, bool lowest = false) {
  double most = 0, least = 0;
  MPI_Allreduce(&value, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&value, &least, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  if (rank != 0) return;
  if (least < 0)
    std::printf("  %-24s %12s\n", name, "n/a");
  else
    std::printf("  %-24s %12.1f %s\n", name, lowest ? least : most, unit);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const mps::Start w = mps::start(&argc, &argv);
  const size_t mib = argc > 1 ? std::max(1, std::atoi(argv[1])) : 64;
  const size_t bytes = mib << 20;
  int dev = 0, sms = 1;
  check(hipGetDevice(&dev), "hipGetDevice");
  check(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, dev), "SM count");
  g_spinTicks = static_cast<unsigned long long>(kSpinSeconds * sscGpuTimerTicksPerSecond(dev));
  Streams st;
  check(hipStreamCreateWithFlags(&st.main, hipStreamNonBlocking), "stream");
  check(hipStreamCreateWithFlags(&st.side, hipStreamNonBlocking), "stream");
  for (auto& e : st.e) check(hipEventCreate(&e), "event");
  void* src = nullptr;
  void* dst = nullptr;
  check(hipMalloc(&src, bytes), "hipMalloc");
  check(hipMalloc(&dst, bytes), "hipMalloc");
  check(hipMemset(src, 1, bytes), "hipMemset");
  uint32_t* word = nullptr;  // this rank's ping-pong word, which its partner writes
  check(hipMalloc(reinterpret_cast<void**>(&word), 256), "hipMalloc");
  check(hipMemset(word, 0, 256), "hipMemset");
  check(hipDeviceSynchronize(), "sync");
  void* srcs[mps::kMaxRanks];
  void* words[mps::kMaxRanks];
  mps::exchange(src, w.rank, w.nranks, srcs);
  mps::exchange(word, w.rank, w.nranks, words);
  const int next = (w.rank + 1) % w.nranks;
  if (w.rank == 0)
    std::printf("# sm_free: %d ranks, %d SMs a rank, copies of %zu MiB, spin %.1f ms\n", w.nranks,
                sms, mib, kSpinSeconds * 1e3);

  // The spin alone (also a warm-up of every launch path below).
  check(hipDeviceSynchronize(), "sync");
  MPI_Barrier(MPI_COMM_WORLD);
  check(hipEventRecord(st.e[0], st.main), "record");
  launchSpin(st.main, sms);
  check(hipEventRecord(st.e[1], st.main), "record");
  check(hipDeviceSynchronize(), "sync");
  row(w.rank, "spin", 1000.0 * ms(st.e[0], st.e[1]), "us");
  const double gb = static_cast<double>(bytes) / 1e9;
  for (bool spin : {false, true}) {
    for (bool peer : {false, true}) {
      (void)copyMs(st, dst, peer ? srcs[next] : src, bytes, false, sms);  // warm
      const double t = copyMs(st, dst, peer ? srcs[next] : src, bytes, spin, sms);
      const std::string name =
          std::string("copy ") + (peer ? "peer" : "own") + (spin ? " + spin" : "");
      row(w.rank, name.c_str(), 1000.0 * t, "us");
      if (!spin)
        row(w.rank, (name + " GB/s").c_str(), gb / (t * 1e-3), "GB/s (slowest rank)", true);
    }
  }
  if (w.nranks >= 2) {
    const bool paired = (w.rank ^ 1) < w.nranks;
    uint32_t base = 0;
    for (bool spin : {false, true}) {
      double us = 0;
      if (paired) {
        auto* partner = static_cast<uint32_t*>(words[w.rank ^ 1]);
        (void)pingPongUs(st, word, partner, (w.rank & 1) == 0, 10, &base, false, sms);  // warm
        us = pingPongUs(st, word, partner, (w.rank & 1) == 0, 1000, &base, spin, sms);
      } else {  // the odd rank out takes part in the barriers only
        check(hipDeviceSynchronize(), "sync");
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
      }
      row(w.rank, spin ? "ping-pong + spin" : "ping-pong", us, "us per round trip");
    }
  }
  mps::unmap(srcs, w.rank, w.nranks);
  mps::unmap(words, w.rank, w.nranks);
  (void)hipFree(src);
  (void)hipFree(dst);
  (void)hipFree(word);
  MPI_Finalize();
  return 0;
}
