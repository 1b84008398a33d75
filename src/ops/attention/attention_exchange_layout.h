// SPDX-License-Identifier: MIT
// The fused exchange of a decode (sscKvExchangeFused): where each rank's partial rows and
// query slices land in its peers' exchange scratch, and which call epoch a flag carries. Pure
// arithmetic, written once: the host sizes the scratch and computes offsets with it
// (src/ops/attention/gpu_exchange.cc), the GPU kernels (attention_exchange.cu,
// attention_finish.cuh) take parities, receivers, slots and flag places from the same
// functions, and CI walks them without a GPU (tests/ops/attention/test_exchange.cc).
//
// One rank's scratch, registered on the communicator so that every peer maps it:
//   rows  [parity][sender][slot][rowFloats]   floats: a partial row is headDim outputs, the
//         LSE, a pad float, then a 64-bit flag (the call's epoch, stored last with release)
//   q     [parity][sender slice]              the query slices, densely packed for the call
//   qflag [parity][sender][chunk]             uint64 epochs, one per query chunk a sender pushed
// Call number e (epochs start at 1, counted on the device: gpu::AttnEpochWord) uses parity e & 1. A
// sender overwrites parity p only at call e + 2, after its own merge of call e + 1 saw every peer's
// rows of e + 1, which each peer sent after it had finished reading call e (stream order): two
// buffers and no barrier suffice.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define SSC_EXCHANGE_HD \
  __host__ __device__ inline  // not __forceinline__: HIP defines it in gpu_runtime.h
#else
#define SSC_EXCHANGE_HD inline
#endif

namespace ssc::attn {

constexpr int kExchangeMaxQChunks = 16;  // blocks (and flags per sender) of the query push

// Floats per row: outputs, LSE, pad, flag (8 bytes): a multiple of 4, so rows stay 16-byte
// aligned and the flag 8-byte aligned.
SSC_EXCHANGE_HD size_t rowFloatsOf(int headDim) { return static_cast<size_t>(headDim) + 4; }
// The flag's place in a row, in floats from the row's start: after the outputs, LSE and pad.
SSC_EXCHANGE_HD size_t flagFloatOf(int headDim) { return static_cast<size_t>(headDim) + 2; }

struct ExchangeLayout {
  int nranks = 1;
  int maxBatch = 1;
  int maxQHeads = 1;
  int headDim = 64;

  size_t rowFloats() const { return rowFloatsOf(headDim); }
  size_t flagFloat() const { return flagFloatOf(headDim); }
  size_t rowsPerSender() const { return static_cast<size_t>(maxBatch) * maxQHeads; }
  size_t rowsFloats() const {
    return 2 * static_cast<size_t>(nranks) * rowsPerSender() * rowFloats();
  }
  // Float offset of row `slot` from `sender` in `parity`.
  size_t rowOffset(int parity, int sender, size_t slot) const {
    return ((static_cast<size_t>(parity) * nranks + sender) * rowsPerSender() + slot) * rowFloats();
  }
  // Query area of one parity: every sender's slice at its most (4-byte elements, the heads
  // rounded up to a whole share).
  size_t qParityBytes() const {
    const size_t share = (static_cast<size_t>(maxQHeads) + nranks - 1) / nranks;
    return static_cast<size_t>(nranks) * maxBatch * share * headDim * 4;
  }
  size_t qOffsetBytes(int parity) const { return rowsFloats() * 4 + parity * qParityBytes(); }
  size_t qFlagOffsetBytes(int parity, int sender, int chunk) const {
    const size_t base = (rowsFloats() * 4 + 2 * qParityBytes() + 127) / 128 * 128;
    return base +
           ((static_cast<size_t>(parity) * nranks + sender) * kExchangeMaxQChunks + chunk) * 8;
  }
  size_t totalBytes() const { return qFlagOffsetBytes(1, nranks - 1, kExchangeMaxQChunks - 1) + 8; }
};

SSC_EXCHANGE_HD int parityOf(uint64_t epoch) { return static_cast<int>(epoch & 1); }

// Row (b, head) of a sender's partial goes to these receivers, at slot b * outHeads + j there:
// every rank with j = head when each returns all heads; with sharded output only the head's
// owner (head / outHeads) with j = head % outHeads.
struct RowTarget {
  int firstRank, lastRank;  // receivers [firstRank, lastRank]
  int j;
};
SSC_EXCHANGE_HD RowTarget rowTarget(int head, int numQHeads, int nranks, bool outSharded) {
  if (!outSharded) return {0, nranks - 1, head};
  const int outHeads = numQHeads / nranks;
  return {head / outHeads, head / outHeads, head % outHeads};
}
// The heads a receiver's rows area holds per sequence: all of them, or its share.
SSC_EXCHANGE_HD int outHeadsOf(int numQHeads, int nranks, bool outSharded) {
  return outSharded ? numQHeads / nranks : numQHeads;
}
// Slot (b, j) of a sender's rows in one parity: sequence b's j-th returned head.
SSC_EXCHANGE_HD size_t rowSlot(int b, int outHeads, int j) {
  return static_cast<size_t>(b) * outHeads + j;
}

// The query push of one call: a sender's slice of `bytes` in `chunks` pieces of `chunkBytes`
// (16-byte multiples but the last), one block and one flag each.
struct QChunks {
  int chunks;
  size_t chunkBytes;
};
SSC_EXCHANGE_HD QChunks qChunks(size_t bytes) {
  constexpr size_t kTarget = 8192;  // bytes per block: a few loads per thread
  size_t n = (bytes + kTarget - 1) / kTarget;
  if (n < 1) n = 1;
  if (n > kExchangeMaxQChunks) n = kExchangeMaxQChunks;
  size_t chunk = (bytes + n - 1) / n;
  chunk = (chunk + 15) / 16 * 16;
  const size_t used = chunk == 0 ? 1 : (bytes + chunk - 1) / chunk;
  return {static_cast<int>(used < 1 ? 1 : used), chunk};
}

}  // namespace ssc::attn
