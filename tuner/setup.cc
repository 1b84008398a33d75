// SPDX-License-Identifier: MIT
#include "tuner/setup.h"

#include <vector>

#include "src/core/env.h"
#include "src/core/errors.h"
#include "src/core/log.h"

namespace ssc {

sscResult_t createTuner(const Topology& topo, const ModelLimits& limits, int rank, int nranks,
                        const std::function<sscResult_t(void*, size_t)>& allGather,
                        std::shared_ptr<const Tuner>* out) {
  TunerProfile profile;
  // The host backend runs on no GPU: a GPU's profile would describe a machine that is not there.
  if (limits.oneMemory && env::getString("STARSCREAM_TUNER_PROFILE").empty()) {
    profile = hostProfile();
  } else {
    const sscResult_t r = resolveProfile(topo, &profile);
    if (r != sscSuccess) return fail(r, "STARSCREAM_TUNER_PROFILE: {}", lastError());
  }
  auto tuner = std::make_shared<const Tuner>(topo, std::move(profile), limits);
  std::vector<uint64_t> prints(static_cast<size_t>(nranks), 0);
  prints[static_cast<size_t>(rank)] = tuner->fingerprint();
  if (allGather) SSC_CHECK(allGather(prints.data(), sizeof(uint64_t)));
  for (int q = 0; q < nranks; ++q)
    if (prints[static_cast<size_t>(q)] != prints[static_cast<size_t>(rank)])
      return fail(sscInvalidUsage,
                  "tuner profile differs between rank {} and rank {} (set "
                  "STARSCREAM_TUNER_PROFILE alike on every rank): they would choose different "
                  "algorithms",
                  rank, q);
  SSC_LOG(kInfo, "tuner: profile '{}' ({}), {} partitions per GPU", tuner->profile().name,
          tuner->profile().origin, topo.maxPartitions());
  *out = std::move(tuner);
  return sscSuccess;
}

}  // namespace ssc
