// SPDX-License-Identifier: MIT
// The host side of the fused decode exchange (sscKvExchangeFused) on the GPU backend: the
// cache's exchange scratch registered on the communicator (its peers map it), the call counter
// (in device memory: the kernels number the calls, so a captured decode's replays count as calls
// too; gpu::AttnEpochWord), the timeout word, and the launches of the exchange kernels
// (src/ops/attention/attention_exchange.cu) on the caller's stream. Layout and reuse rules:
// src/ops/attention/attention_exchange_layout.h. The host never knows a call's epoch or parity:
// every offset it passes is parity 0's, with the distance to parity 1's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/ops/attention/attention_exchange.h"
#include "src/ops/attention/attention_exchange_layout.h"
#include "src/ops/attention/attention_kernel.h"
#include "src/ops/attention/kv_cache.h"

namespace ssc::attn {

class FusedExchange {
 public:
  // Collective over c->comm (sscCommRegister). Leaves *enabled false, with the reason in *why,
  // where the peers' scratch cannot be mapped (every rank reaches the same verdict).
  sscResult_t setup(sscKvCache* c, bool* enabled, std::string* why);
  // Local: deregisters (when the communicator is still live) and frees.
  void destroy(sscKvCache* c);

  // Starts a call: fails (sticky) once a wait of an earlier call timed out, since the ranks'
  // epochs no longer agree. (The call's epoch is taken on the device.)
  sscResult_t begin(const char* fn) const;
  // The query slices of every rank, [rank][slice] packed, into this rank's scratch in one
  // launch; the partial kernel reads them through *gathered (parity 0's area) moved by
  // *parityBytes per parity, as p.qEpoch says.
  sscResult_t gatherQ(const void* q, size_t sliceBytes, void* stream, const void** gathered,
                      size_t* parityBytes, const gpu::AttnEpochWord** epoch);
  // This rank's partial rows ([splits] blocks of [batch][heads][headDim + 1], merged on the
  // way) into the scratch of the ranks that return them, then the merge of what arrives: one
  // launch.
  sscResult_t pushAndMerge(const sscKvCache* c, const DecodeArgs& a, const float* partials,
                           size_t splitStride, int splits, void* stream);
  // Where this call's rows go, for a kernel that pushes them itself (the decode's partial
  // kernel, kAttnFinishPush); then mergeArrived merges what arrives.
  void pushTarget(const DecodeArgs& a, gpu::AttnPushTarget* t) const;
  sscResult_t mergeArrived(const sscKvCache* c, const DecodeArgs& a, void* stream);

 private:
  gpu::AttnRecvMergeParams mergeParams(const sscKvCache* c, const DecodeArgs& a) const;

  ExchangeLayout layout_;
  int rank_ = 0;
  void* scratch_ = nullptr;  // this rank's registered scratch
  void* regHandle_ = nullptr;
  std::vector<char*> peers_;  // every rank's scratch as mapped here (peers_[rank_] = scratch_)
  uint32_t* timedOutHost_ = nullptr;  // host-mapped word the waits set
  uint32_t* timedOutDevice_ = nullptr;
  uint64_t timeoutTicks_ = 0;
  int deviceScope_ = 0;
  const uint32_t* abort_ = nullptr;      // the communicator's abort word (device view)
  gpu::AttnEpochWord* epoch_ = nullptr;  // device memory, zeroed at setup: the first call is 1
};

}  // namespace ssc::attn
