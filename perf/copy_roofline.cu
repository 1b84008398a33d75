// SPDX-License-Identifier: MIT
// copy_roofline: the rate at which one process copies device memory to device memory on GPU 0,
// the whole GPU and no MPS: perf/bench.sh's roofline. Every collective's bound in
// docs/benchmarks.md is this rate C (bytes copied per second: C bytes read plus C written) scaled
// by the bytes the collective must read and write.
//
//   nvcc -O2 -o copy_roofline perf/copy_roofline.cu && ./copy_roofline [BYTES [SAMPLES]]
//
// Defaults: 1 GiB, 30 timed copies after 5 untimed ones. Each copy is timed alone with CUDA events
// (one cudaMemcpyAsync between two events, then a synchronize), and the median is reported, so
// one slow sample (a clock ramp, another process) does not move the figure. Prints one JSON
// object on stdout; exits 1 on a CUDA error, 2 on a bad argument.
//
// No kernel of its own: the copy is the driver's, so the program runs on any architecture
// whatever nvcc's default target is.
#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "copy_roofline: %s: %s\n", #call, cudaGetErrorString(e_)); \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

static bool parse(const char* s, unsigned long long min, unsigned long long* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < min) return false;
  *out = v;
  return true;
}

int main(int argc, char** argv) {
  unsigned long long bytes = 1ull << 30, samples = 30;
  if (argc > 3 || (argc > 1 && !parse(argv[1], 1, &bytes)) ||
      (argc > 2 && !parse(argv[2], 1, &samples))) {
    std::fprintf(stderr,
                 "usage: copy_roofline [BYTES (default 1073741824) [SAMPLES (default 30)]]\n");
    return 2;
  }
  const int warmup = 5;
  CHECK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  void *src = nullptr, *dst = nullptr;
  CHECK(cudaMalloc(&src, bytes));
  CHECK(cudaMalloc(&dst, bytes));
  // Touch both buffers first so the timed copies do not include first-use page mapping.
  CHECK(cudaMemset(src, 1, bytes));
  CHECK(cudaMemset(dst, 0, bytes));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < warmup; ++i)
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  CHECK(cudaStreamSynchronize(stream));
  std::vector<float> ms(samples);
  for (auto& t : ms) {
    CHECK(cudaEventRecord(start, stream));
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaEventElapsedTime(&t, start, stop));
  }
  std::vector<float> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median_ms = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  if (median_ms <= 0) {
    std::fprintf(stderr, "copy_roofline: the median copy took %g ms\n", median_ms);
    return 1;
  }
  std::printf(
      "{\"method\": \"cudaMemcpyAsync device to device, CUDA events\", \"device\": \"%s\", "
      "\"sms\": %d, \"bytes\": %llu, \"samples\": %llu, \"warmup\": %d, \"median_ms\": %.6f, "
      "\"min_ms\": %.6f, \"max_ms\": %.6f, \"copy_GBps\": %.2f}\n",
      prop.name, prop.multiProcessorCount, bytes, samples, warmup, median_ms, sorted.front(),
      sorted.back(), bytes / (median_ms / 1e3) / 1e9);
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(src));
  CHECK(cudaFree(dst));
  return 0;
}
