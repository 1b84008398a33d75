// SPDX-License-Identifier: MIT
// Kernels of sequence-sharded paged attention (src/ops/attention/gpu_ops.cc drives them): store
// appended K/V rows into this rank's pool pages, compute this rank's partial attention over its
// pages, merge every rank's partials. Plain declarations: g++ includes this header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "starscream/starscream.h"

namespace ssc::gpu {

// The largest group of query heads one block of the partial kernel handles; bigger GQA groups
// are split over blockIdx.z.
constexpr int kAttnMaxHeadsPerBlock = 16;
// The most ranks one exchange reaches.
constexpr int kAttnMaxPeers = 64;

// The decode kernel's copy ring (attention_decode_mma.cuh) holds a 16-token step of K or V as
// 16 rows of headDim 2-byte elements; the 16-byte piece c of row r is stored at piece
// c ^ attnDecodeSwizzle(r) of its row. Unswizzled, the fragment reads of a quarter warp (K: rows
// g and g + 1 at one column; V: 4 rows at one column) would share banks (rows are 128 or 256
// bytes); with it, every quarter warp's reads and copies hit 8 distinct 16-byte bank groups.
// Bit 1 of the swizzle is bit 1 of r, bit 2 is bit 2 of r xor bit 0: rows g and g + 1 differ in
// bit 2, and the 4 rows 2t + p (t = 0..3) take 4 distinct values of bits 1-2. Checked on the
// host for both head dims (test_attention_layout).
constexpr int attnDecodeSwizzle(int r) { return (r & 2) | ((((r >> 2) ^ r) & 1) << 2); }

struct KvAppendParams {
  void* kPool;  // [page][kv head][row][headDim], 2-byte elements
  void* vPool;
  const void* k;  // [token][kv head][headDim]
  const void* v;
  const int64_t* dstRow;  // [token]: element offset of the token's kv head 0 row, or -1
  int numTokens;
  int numKvHeads;
  int headDim;
  int pageSize;
};

// The fused exchange's call counter, in device memory (one per cache and rank), so that the
// replays of a captured decode count their calls as eager calls do. `done` is the epoch of the
// last call whose merge kernel started on this rank: a call's kernels all use done + 1 (its
// parity picks the scratch half, attention_exchange_layout.h), and its merge kernel, always the
// call's last, advances `done` once each of its blocks has read it (`readers` counts them). Kernels
// of one call follow one another in stream order, so each reads the value the last call left.
// `tickets` numbers the last kernel's blocks in the order they start (attention_exchange.cu).
struct AttnEpochWord {
  uint64_t done;
  uint32_t readers;
  uint32_t tickets;
};

// Where a finished partial row goes in the fused exchange: the rows area of every rank that
// returns its head (all ranks, or the head's owner with outSharded), then one flag per receiver
// (layout and epochs: attention_exchange_layout.h).
struct AttnPushTarget {
  int nranks;
  int rank;
  int outSharded;
  float* peerRows[kAttnMaxPeers];  // every rank's rows area of parity 0, sender 0
  size_t parityFloats;             // floats from parity 0's rows to parity 1's
  size_t senderStride;             // floats between two senders' rows
  size_t rowFloats;                // attention_exchange_layout.h rowFloats
  const AttnEpochWord* epoch;      // this rank's call counter: the call is epoch->done + 1
  int deviceScope;                 // 1: every rank on this GPU (device-scope release)
};

// Where a partial kernel block that is its row group's only split (splits == 1: many sequences,
// or long ones on a rank with few SMs) puts its final rows, so that no launch follows the
// kernel for them (a launch costs 4 us on the whole H200 and 8 us with 8 MPS clients). With more
// splits the blocks write their partials and a merge launch follows, as with kAttnFinishNone:
// merging them in the last block of the row group instead was tried in two designs and cost more
// than the launch.
enum AttnFinishMode : int {
  kAttnFinishNone = 0,    // into partials (this rank's partial, for the all-gather exchange)
  kAttnFinishOutput = 1,  // merged with the sinks into out / lse: a one-rank decode's result
  kAttnFinishPush = 2,    // into the rows of the ranks that return the head, then their flags
};

struct AttnPartialFinish {
  int mode;            // AttnFinishMode
  const float* sinks;  // kAttnFinishOutput: [numQHeads] or null
  void* out;           // kAttnFinishOutput: [batch][numQHeads][headDim] of outDtype
  int outDtype;
  float* lse;           // kAttnFinishOutput: [batch][numQHeads] or null
  AttnPushTarget push;  // kAttnFinishPush
};

struct AttnPartialParams {
  const void* kPool;  // as KvAppendParams
  const void* vPool;
  int kvDtype;    // sscFloat16 or sscBfloat16
  const void* q;  // [qRank][batch][qHeadsPerRank][headDim]; one qRank when not sharded
  // Set when q is the fused exchange's query area of parity 0: the call's parity (qEpoch->done +
  // 1) then moves it by qParityBytes per parity.
  const AttnEpochWord* qEpoch;
  size_t qParityBytes;
  int qDtype;  // sscFloat32, sscFloat16 or sscBfloat16
  int qHeadsPerRank;
  const int32_t* spanStart;  // [batch + 1]: sequence b's spans are [spanStart[b], spanStart[b+1])
  const int32_t* spans;      // [span][3]: pool page, first row, end row (this rank's tokens)
  int batch;
  int numQHeads;
  int numKvHeads;
  int headDim;  // 64 or 128
  int pageSize;
  float scale;
  // Split-K within the rank (flash-decoding): split z of `splits` takes every splits-th span of
  // each sequence, so few sequences still fill the GPU; each split writes its own partial block.
  int splits;
  size_t splitStride;  // floats between two splits' blocks
  float* partials;     // [split][batch][numQHeads][headDim + 1]: output then LSE (-inf: empty)
  AttnPartialFinish finish;
};

struct AttnMergeParams {
  const float* partials;  // nranks blocks of [batch][numQHeads][headDim + 1]
  size_t rankStride;      // floats between two ranks' blocks
  int nranks;
  int batch;
  int numQHeads;
  int headDim;
  int firstHead;  // merge heads [firstHead, firstHead + outHeads)
  int outHeads;
  const float* sinks;  // [numQHeads] or null: one extra logit per head, no value
  void* out;           // [batch][outHeads][headDim] of outDtype
  int outDtype;        // sscFloat32, sscFloat16 or sscBfloat16
  float* lse;          // [batch][outHeads] or null
  // Packed: out is fp32 in the partials' own layout, [batch][outHeads][headDim + 1] with the
  // LSE last (lse unused): how a rank's split-K partials become its one partial.
  bool packed;
};

// Each launches on `stream` and fails with sscUnhandledDeviceError (SSC_GPU_FAIL: the kernel,
// the runtime's text, the place) where the launch does.
sscResult_t launchKvAppend(const KvAppendParams& p, void* stream);
sscResult_t launchAttnPartial(const AttnPartialParams& p, void* stream);
// How many blocks of the partial kernel for p's types and head dim fit on one multiprocessor
// (at least 1): the split-K rule sizes its waves with it.
int attnPartialBlocksPerSm(const AttnPartialParams& p);
sscResult_t launchAttnMerge(const AttnMergeParams& p, void* stream);

}  // namespace ssc::gpu
