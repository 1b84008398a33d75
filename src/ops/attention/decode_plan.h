// SPDX-License-Identifier: MIT
// How a decode's partial attention is cut into kernel blocks (pure host logic, unit-tested in
// CI; the GPU backend's gpu_ops.cc applies it).
#pragma once

#include <cstdint>

namespace ssc::attn {

// The most split-K blocks one (sequence, KV head, head chunk) row group is split over.
constexpr int64_t kDecodeMaxSplits = 256;
// The fewest spans (pages) one split takes.
constexpr int64_t kDecodeMinSpansPerSplit = 16;
// How full the last wave of blocks must be.
constexpr double kDecodeWaveEfficiency = 0.9;

// Split-K (flash-decoding): a rank's spans of each row group are split over several blocks whose
// partials are merged like ranks' partials. `blocks` row groups, the longest holding `longest`
// spans; `residentBlocks` blocks of the kernel fit on the rank's SMs at once (the occupancy API
// times the SM count); at most `cap` splits fit the scratch. Blocks of one call are about
// equal, so what matters is the last wave: `blocks x splits / residentBlocks` waves run in
// ceil(that) wave times. Takes the fewest splits (the biggest blocks: each pays a prologue, an
// epilogue and a partial to merge) whose waves are at least kDecodeWaveEfficiency full, never
// under kDecodeMinSpansPerSplit spans a split, else the fullest. Always >= 1.
// Nothing here names a machine: the SM count and the occupancy are the rank's own, as the
// runtime reports them (under MPS, the SMs its cap leaves it). The invariant, for any of them:
// no smaller split count within the caps fills its last wave to kDecodeWaveEfficiency, and when
// the result does not either, no count within the caps fills it better. Why both ends matter:
// a grid of 1.1 waves takes two wave times for 1.1 waves of work, and many small blocks pay
// their fixed costs over and over. test_decode_plan.cc checks the invariant over a grid of
// shapes, SM counts and caps; attention_perf's decode sweep (docs/attention.md) times it on a
// GPU.
int64_t decodeSplits(int64_t blocks, int64_t longest, int64_t residentBlocks, int64_t cap);

}  // namespace ssc::attn
