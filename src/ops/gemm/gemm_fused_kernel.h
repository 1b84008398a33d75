// SPDX-License-Identifier: MIT
// Device pieces of the fused GEMM-collectives (src/ops/gemm, docs/gemm.md): per-chunk flags in the
// partitions' registered workspaces; for GEMM + reduce-scatter the owner's sum of its rows out of
// every partition's slot, read in place through the peer mappings; for all-gather + GEMM the push
// of a rank's rows of X into the peers' slots. No collective kernel, no staging copy. Plain
// declarations: g++ includes it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "starscream/starscream.h"

namespace ssc::gpu {

constexpr int kFusedMaxRanks = 16;

// Every launch* below queues its kernel on `stream` and fails with sscUnhandledDeviceError
// (SSC_GPU_FAIL: which kernel, the runtime's text, the place) where the launch does.

// Where a fused wait reports a timeout: pinned, host-mapped words {code, lane, value seen,
// target, site} (code 1 = timeout), so the host can say which flag stopped moving and how far
// behind it was. Every wait polls `word` and gives up at once when another wait already failed.
struct FusedErrorSink {
  uint32_t* word;         // device address of the host-mapped words
  uint64_t timeoutTicks;  // sscGpuTimer ticks; 0: wait forever
  const uint32_t* abort;  // the communicator's abort word (non-zero: sscCommAbort ran); may be null
  uint32_t site = 0;      // which wait of the op this launch is (the host's names: gpu_gemm.cc)
};

constexpr int kFusedMaxWaits = 32;  // flags one wait kernel polls (a lane each)

// Device pointers a wait launch also stores, lanes in parallel, before it waits: the per-rank
// all-gather's pointer-array table for the vendor BLAS (gpu_gemm_fused.cc). Stored by a kernel
// from its arguments, not copied from the host: no host buffer has to outlive the call.
constexpr int kFusedMaxStores = 48;
struct PointerStore {
  void** dst = nullptr;  // device memory; null: nothing to store
  int count = 0;         // <= kFusedMaxStores
  const void* v[kFusedMaxStores] = {};
};

// One warp waits until every flags[i] (i < count <= kFusedMaxWaits) has reached targets[i]
// (wrap-aware: the difference read as int32 is >= 0). flags may live in peers' memory. With
// `signal` non-null, lane 0 first stores signalValue there (after a fence that orders the
// stream's earlier writes before it): publish and wait in one launch.
sscResult_t launchFusedWait(const uint32_t* const* flags, const uint32_t* targets, int count,
                            uint32_t* signal, uint32_t signalValue, FusedErrorSink sink,
                            void* stream, const PointerStore* store = nullptr);

// launchFusedWait with a list: lane 0 first stores signalValue into every signals[j]
// (j < nsig <= kFusedMaxRanks), then the warp waits (publish to every peer and wait in one launch).
sscResult_t launchFusedSignalWait(uint32_t* const* signals, int nsig, uint32_t signalValue,
                                  const uint32_t* const* flags, const uint32_t* targets, int count,
                                  FusedErrorSink sink, void* stream,
                                  const PointerStore* store = nullptr);

// The fused all-gather's push (or publish): the grid copies `bytes` (even) from src into each of
// dsts[0 .. ndst) (peers' mapped slots), each element loaded once. No wait of its own: a gate
// in every block would hold the SMs while it waits, which where ranks share SMs starves the
// peer being waited for (the caller gates with one warp of launchFusedWait first).
sscResult_t launchFusedPush(const void* src, void* const* dsts, int ndst, size_t bytes,
                            int maxBlocks, void* stream);

// One thread stores `value` into every flags[i] (i < count), after a fence that orders the
// stream's earlier writes (the GEMM's tile, the reduction's reads) before it.
sscResult_t launchFusedSignal(uint32_t* const* flags, int count, uint32_t value, void* stream);

// dst[i] = round_to_outType(sum over s < count of srcs[s][i]) for i < elems, fp32 accumulation
// in source order. elemBytes: 2 (bf16 when bf16 is true, else fp16) or 4 (fp32).
sscResult_t launchFusedReduce(void* dst, const void* const* srcs, int count, size_t elems,
                              int elemBytes, bool bf16, int maxBlocks, void* stream);

// y[r][j] = round_to_type(y[r][j] + bias[j]) for r < rows, j < n (y row-major, ld n), fp32
// arithmetic; elemBytes and bf16 as for launchFusedReduce. The GEMM ops' bias (sscGemmArgs_t):
// one pass over y on `stream`, no wait, so any grid is safe.
sscResult_t launchAddBias(void* y, const void* bias, int64_t rows, int64_t n, int elemBytes,
                          bool bf16, void* stream);

// *count += the bytes that are not zero in `entries` runs of entryBytes bytes, run e starting at
// base + e * strideBytes (the rows a strided-batch GEMM writes). The GEMM ops' probe of a vendor
// algorithm (gpu_gemm_probe.h): *count must be device memory the caller zeroed.
sscResult_t launchCountNonZero(const void* base, size_t entryBytes, size_t strideBytes, int entries,
                               unsigned long long* count, int maxBlocks, void* stream);

}  // namespace ssc::gpu
