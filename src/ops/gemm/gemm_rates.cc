// SPDX-License-Identifier: MIT
#include "src/ops/gemm/gemm_rates.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "tuner/model.h"

namespace ssc::gemm {

namespace {

// The estimate of `algo` for `coll` at `bytes` with the protocol the tuner chose, else its own.
double estimateUs(const Tuner& tuner, CollKind coll, uint64_t bytes, const Choice& choice) {
  Estimate e = tuner.estimate(coll, bytes, choice.algo, true, &choice.protocol);
  if (!e.valid) e = tuner.estimate(coll, bytes, choice.algo, true);
  return e.valid ? e.timeUs : 0.0;
}

}  // namespace

uint64_t collectiveBytes(const Problem& p) {
  return static_cast<uint64_t>(std::max(p.nranks, 1)) *
         static_cast<uint64_t>(blockRows(p.m, p.nranks)) *
         static_cast<uint64_t>(std::max<int64_t>(p.width(), 0)) *
         static_cast<uint64_t>(p.collBytes());
}

int rateClass(uint64_t bytes) {
  return bytes == 0 ? -1 : static_cast<int>(std::ceil(4 * std::log2(static_cast<double>(bytes))));
}

uint64_t rateClassBytes(int cls) {
  return cls < 0 ? 0 : static_cast<uint64_t>(std::llround(std::exp2(cls / 4.0)));
}

GemmRates gemmRates(const Tuner& tuner, const Problem& p, bool barrier) {
  GemmRates r;
  r.barrier = barrier;
  const ProfileVariant& v = tuner.variant();
  r.launchUs = v.launchUs;
  r.copyGBps = v.copyGBps > 0 ? v.copyGBps : tuner.topology().intraGpu.bandwidthGBps;
  r.memGBps = 2.0 * r.copyGBps;
  r.gemmTflops = r.memGBps * kGemmRidgeFlopsPerByte * 1e-3;
  if (p.nranks <= 1) return r;
  const uint64_t elem = std::max<uint64_t>(p.collBytes(), 1);
  const uint64_t least = static_cast<uint64_t>(p.nranks) * elem;
  const uint64_t total = std::max(rateClassBytes(rateClass(collectiveBytes(p))), least);
  const CollKind coll =
      p.op == Op::kReduceScatter ? CollKind::kReduceScatter : CollKind::kAllGather;
  const Choice choice = tuner.choose(coll, total, true);
  r.collFixedUs = estimateUs(tuner, coll, least, choice);
  // The rate at the class's size; a call too small for its bytes to show takes the rate of a
  // larger one (its time is then the fixed cost either way).
  for (uint64_t bytes : {total, std::max<uint64_t>(total, uint64_t{64} << 20)}) {
    const double whole =
        estimateUs(tuner, coll, bytes, bytes == total ? choice : tuner.choose(coll, bytes, true));
    if (whole > r.collFixedUs) {
      r.collGBps = static_cast<double>(bytes) / (whole - r.collFixedUs) * 1e-3;
      break;
    }
  }
  const Estimate sync = tuner.estimate(CollKind::kAllGather, least, Algo::kSymmetric, true);
  r.syncUs = sync.valid ? sync.timeUs : r.collFixedUs;
  return r;
}

}  // namespace ssc::gemm
