// SPDX-License-Identifier: MIT
#include "src/ops/attention/peer_pools.h"

#include <mutex>

#include "src/api/api.h"
#include "src/comm/comm.h"
#include "src/ops/attention/kv_cache.h"

namespace ssc::attn {

namespace {
// Rank q's view of this rank's registration of buff (empty when the backend did not map it).
std::vector<const void*> peerBases(sscComm* comm, void* buff) {
  std::vector<const void*> out;
  comm->registrations.withMapped(buff, 0, true, [&](const char*, const Registration& reg) {
    out.assign(reg.peerBases.begin(), reg.peerBases.end());
  });
  return out;
}
}  // namespace

sscResult_t PeerPools::setup(sscKvCache* c, int maxRanks, std::string* why) {
  sscComm* comm = c->comm;
  if (comm->nranks < 2) {
    *why = "one rank";
    return sscSuccess;
  }
  if (comm->nranks > maxRanks) {
    *why = fmt::format("{} ranks (at most {})", comm->nranks, maxRanks);
    return sscSuccess;
  }
  if (comm->topo.nnodes != 1) {
    *why = "the communicator spans nodes (peers' pools cannot be mapped)";
    return sscSuccess;
  }
  const sscKvCacheConfig_t& cfg = c->config;
  const size_t poolBytes = static_cast<size_t>(cfg.maxPages) * cfg.numKvHeads * cfg.pageSize *
                           cfg.headDim * c->kvElemBytes;
  SSC_CHECK(sscCommRegister(comm, c->kPool, poolBytes, &kHandle_));
  SSC_CHECK(sscCommRegister(comm, c->vPool, poolBytes, &vHandle_));
  std::vector<const void*> k = peerBases(comm, c->kPool), v = peerBases(comm, c->vPool);
  if (k.empty() || v.empty()) {
    *why = "the backend could not map the peers' pools";
    return sscSuccess;
  }
  k[comm->rank] = c->kPool;
  v[comm->rank] = c->vPool;
  SSC_CHECK(c->backend->memAlloc(&word_, sizeof(int32_t)));
  own_ = c->table.get();
  mirrors_.resize(comm->nranks);
  for (int q = 0; q < comm->nranks; ++q)
    if (q != comm->rank)
      mirrors_[q] = std::make_unique<PageTable>(own_->placement(), q, cfg.maxSeqs, cfg.maxPages);
  k_ = std::move(k);
  v_ = std::move(v);
  return sscSuccess;
}

void PeerPools::destroy(sscKvCache* c) {
  for (void** h : {&kHandle_, &vHandle_}) {
    if (*h != nullptr && commIsLive(c->comm)) (void)sscCommDeregister(c->comm, *h);
    *h = nullptr;
  }
  if (word_ != nullptr) (void)c->backend->memFree(word_);
  word_ = nullptr;
  k_.clear();
  v_.clear();
  mirrors_.clear();
}

sscResult_t PeerPools::barrier(sscKvCache* c, sscStream_t stream) {
  // Max of whatever the word holds: idempotent, so the word never needs clearing.
  return sscAllReduce(word_, word_, 1, sscInt32, sscMax, c->comm, stream);
}

void PeerPools::append(const int32_t* seqIds, int n) {
  for (auto& m : mirrors_)
    if (m) (void)m->append("sscKvCacheAppend", seqIds, n, &scratch_);
}

void PeerPools::release(int seq) {
  for (auto& m : mirrors_)
    if (m) m->release(seq);
}

void PeerPools::trim(int seq, int64_t position) {
  for (auto& m : mirrors_)
    if (m) m->trim(seq, position);
}

}  // namespace ssc::attn
