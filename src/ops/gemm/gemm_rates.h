// SPDX-License-Identifier: MIT
// sscGemmAuto's rates (GemmRates, gemm_plan.h) for a call on a communicator, from what the
// communicator already knows: its tuner's cost model (tuner/model.h) for the collective, the
// waits and the launches, and the profile's copy rate for the GEMM's memory side. The same
// tuner on every rank (init compares the ranks' fingerprints), so every rank gets the same
// rates and the rule decides alike.
#pragma once

#include <cstdint>

#include "src/ops/gemm/gemm_plan.h"

namespace ssc {
class Tuner;
}

namespace ssc::gemm {

// The one rate the communicator does not measure: a GEMM's compute rate. It is taken as the
// memory rate times this ridge point (the flops per byte of HBM traffic at which a dense bf16
// GEMM turns compute-bound). Data-centre GPUs of the last generations sit between about 150
// (A100) and 300 (H100 SXM, B200) flop/byte; the rule's decisions only ask which side of the
// ridge a block of rows falls on, and on the measured TP8 table they come out the same anywhere
// from 150 to 300 (test_gemm_rule.cc, GemmRule.DecisionsHoldOverTheRidgeRange). A profile that
// carries a measured GEMM rate should replace it (docs/gemm.md, "The variant rule").
constexpr double kGemmRidgeFlopsPerByte = 200.0;

// The bytes of p's collective as the core counts them (the larger of a rank's input and output:
// the whole buffer, nranks blocks of rows), and the size class they fall in: a quarter octave,
// as Tuner::choose classes sizes, represented by its upper end (rateClassBytes).
uint64_t collectiveBytes(const Problem& p);
int rateClass(uint64_t bytes);
uint64_t rateClassBytes(int cls);

// The rates for problem p (its op and the size class of its collective) on a communicator with
// this tuner. A function of (op, size class, element size, ranks, barrier) only, computed at the
// class's representative size, so a cache keyed by those (gemm_api.cc) hands every rank the same
// rates whichever call filled it. Each figure:
//  - launchUs: the profile's launch cost (ProfileVariant::launchUs);
//  - copyGBps: the profile's copy rate (ProfileVariant::copyGBps; where it has none, the
//    topology's intra-GPU link, as the tuner itself resolves it); memGBps: twice that (a copy
//    reads and writes each byte); gemmTflops: memGBps x kGemmRidgeFlopsPerByte;
//  - collFixedUs and collGBps: the collective the unfused variant calls (Tuner::choose on
//    zero-copy-able buffers, as the core chooses for plain buffers), its estimate at one
//    element per rank and at the class's size (Tuner::estimate);
//  - syncUs: the estimate of the lightest zero-copy collective (one element per rank): a launch
//    and the barriers that meet every rank's flags, what each fused wait costs;
//  - barrier: as given (the context's STARSCREAM_GEMM_BARRIER decision).
// Costs a few estimates of the tuner (hundreds of microseconds at 8 ranks): cache it.
GemmRates gemmRates(const Tuner& tuner, const Problem& p, bool barrier);

}  // namespace ssc::gemm
