// SPDX-License-Identifier: MIT
#include "src/api/plain_buffers.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "src/core/log.h"
#include "transports/usr/peer_cache.h"
#include "tuner/model.h"
#include "tuner/select.h"

namespace ssc {

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

// What every rank must pass alike for one call (the buffers may differ).
uint64_t fingerprint(const PendingCall& c) {
  uint64_t h = 0x5353437a65726f31ull;  // "SSCzero1"
  h = mix(h, static_cast<uint64_t>(c.args.coll));
  h = mix(h, c.args.count);
  h = mix(h, static_cast<uint64_t>(c.reduce.dtype));
  h = mix(h, static_cast<uint64_t>(c.reduce.kind));
  h = mix(h, c.reduce.hasPreScale ? 1 : 0);
  h = mix(h, c.reduce.postDivisor);
  h = mix(h, static_cast<uint64_t>(c.args.root));
  return h;
}

size_t callBytes(const PendingCall& c) {
  return std::max(collInputElems(c.args, c.comm->nranks), collOutputElems(c.args, c.comm->nranks)) *
         c.elemBytes;
}

// Whether a call goes through the cache: a function of the call's arguments and the
// communicator only, so every rank decides alike (each must post for the same calls).
bool qualifies(const PendingCall& c) {
  sscComm* comm = c.comm;
  const CollKind k = c.args.coll;
  if (c.isP2p || c.checkOnly || comm->peerCache == nullptr || !comm->peerCache->enabled() ||
      !c.zeroCopyOk || !c.peerBuffers.empty())
    return false;
  if (k == CollKind::kSendRecv) return false;
  const size_t bytes = callBytes(c);
  if (bytes < comm->config.zeroCopyMinBytes) return false;
  if (commPacketCall(comm, c.args, c.elemBytes)) return false;
  // A forced algorithm (STARSCREAM_ALGO) other than symmetric keeps its path.
  return selectAlgo(*comm->tuner, k, bytes, true,
                    comm->config.forcedAlgos[static_cast<size_t>(k)]) == Algo::kSymmetric;
}

PeerMemoryCache::Request requestOf(const PendingCall& c) {
  PeerMemoryCache::Request r;
  r.fingerprint = fingerprint(c);
  r.inPlace = c.args.inPlace;
  r.captured = c.args.captured;
  // Only the buffers peers touch are posted (a broadcast's sendbuff off the root, a reduce's
  // recvbuff off the root may be anything). The sizes are set on every rank: they bound what
  // peers post.
  const PeerAccess touched = symmetricPeerAccess(c.args.coll, c.comm->rank == c.args.root);
  r.bytes[kBufIn] = collInputElems(c.args, c.comm->nranks) * c.elemBytes;
  r.bytes[kBufOut] = collOutputElems(c.args, c.comm->nranks) * c.elemBytes;
  if (touched.in) r.ptr[kBufIn] = c.sendbuff;
  if (touched.out) r.ptr[kBufOut] = c.recvbuff;
  return r;
}

// Whether the agreed call can run zero-copy: an all-to-all runs one of two plans (a gather out
// of place, pairwise swaps in place: symmetric.cc), so it needs every rank to have called alike;
// ranks that mixed the two forms keep the FIFOs. Whether they did is known only once every record
// is in (the same on all).
bool runsZeroCopy(const PendingCall& c, const PeerMemoryCache::Result& res) {
  return res.zeroCopy && !(c.args.coll == CollKind::kAllToAll && res.anyInPlace && !res.allInPlace);
}

void apply(PendingCall* c, const PeerMemoryCache::Request& req,
           const PeerMemoryCache::Result& res) {
  const size_t n = static_cast<size_t>(c->comm->nranks);
  c->peerBuffers.assign(kBufScratch, std::vector<void*>(n, nullptr));
  for (int b : {kBufIn, kBufOut})
    if (!res.peers[b].empty()) c->peerBuffers[b] = res.peers[b];
  c->args.symmetric = true;
  // Every rank must run the same plan: if one called in place, all take the in-place form
  // (it is right for out-of-place buffers too).
  if (c->args.coll == CollKind::kAllReduce) c->args.inPlace = res.anyInPlace;
  c->callHash = static_cast<uint32_t>(req.fingerprint ^ (req.fingerprint >> 32));
}

// A captured call's graph keeps the peers' addresses for every replay: their mappings stay open
// until the graph is destroyed (the runtime's user object calls back; peer_cache.h).
void pinForGraph(const PendingCall& c, const PeerMemoryCache::Result& res) {
  if (res.mappings.empty()) return;
  std::shared_ptr<PeerMemoryCache::Pin> pin = c.comm->peerCache->pin(res);
  if (!c.comm->backend->retainUntilGraphDestroyed(c.stream, [pin] { pin->release(); }))
    SSC_LOG(kWarn,
            "could not tie {} peer mapping(s) to the graph being captured: they stay open "
            "until the communicator is destroyed",
            res.mappings.size());
}

static_assert(sizeof(CallFingerprint) <= PeerMemoryCache::kCheckBytes,
              "a call's fingerprint must fit the check bytes of its record");

}  // namespace

sscResult_t resolvePlainBuffers(std::vector<PendingCall>& calls) {
  // Per communicator, its calls that take part in an exchange, in order: those that qualify
  // for zero-copy and, in checked mode, every collective (its fingerprint rides in the record).
  // (Each with whether it qualifies: decided once, it reads STARSCREAM_ALGO.)
  std::map<sscComm*, std::vector<std::pair<PendingCall*, bool>>> byComm;
  std::vector<sscComm*> order;
  for (PendingCall& c : calls) {
    const bool zeroCopy = qualifies(c);
    if (!c.checked && !zeroCopy) continue;
    auto& list = byComm[c.comm];
    if (list.empty()) order.push_back(c.comm);
    list.emplace_back(&c, zeroCopy);
  }
  struct Posted {
    PendingCall* call;
    PeerMemoryCache::Request req;
    uint64_t ticket;
    bool zeroCopy;  // the call qualified (its request names buffers)
    PeerMemoryCache::Result res = {};
    sscResult_t finished = sscSuccess;
  };
  // Checked mode: a communicator whose ranks' fingerprints differ stops there on every rank
  // alike (they all see the same records); the others go on, so they stay in step.
  std::set<sscComm*> refused;
  sscResult_t refusal = sscSuccess;
  std::string refusalWhy;
  for (size_t round = 0;; ++round) {
    std::vector<Posted> posted;
    for (sscComm* comm : order) {
      const auto& list = byComm[comm];
      if (round >= list.size() || refused.count(comm) != 0) continue;
      PendingCall* c = list[round].first;
      Posted p{c, {}, 0, list[round].second, {}, sscSuccess};
      if (p.zeroCopy) p.req = requestOf(*c);
      if (c->checked) p.req.check = &c->check;
      if (comm->peerCache != nullptr)
        SSC_CHECK(comm->peerCache->post(p.req, &p.ticket));
      else
        SSC_CHECK(comm->callCheck->post(c->check, &p.ticket));
      posted.push_back(p);
    }
    if (posted.empty()) break;
    // Every posted record is finished even after a failure, so no communicator is left with a
    // ticket its peers wait on; the first failure is what the caller gets.
    sscResult_t first = sscSuccess;
    std::vector<CallChecker::Collect> collects;  // checked communicators without a peer cache
    for (Posted& p : posted)
      if (p.call->comm->peerCache == nullptr) {
        collects.emplace_back();
        collects.back().checker = p.call->comm->callCheck.get();
        collects.back().ticket = p.ticket;
      }
    CallChecker::collectMany(&collects);
    // Every communicator's records first, then the confirmations some captured calls post
    // (peer_cache.h): a thread driving several communicators never waits before it posted.
    for (Posted& p : posted)
      if (p.call->comm->peerCache != nullptr)
        p.finished = p.call->comm->peerCache->finish(p.ticket, p.req, &p.res);
    for (Posted& p : posted)
      if (p.finished == sscSuccess && p.res.confirmPending)
        p.finished = p.call->comm->peerCache->confirm(p.req, &p.res);
    size_t next = 0;
    for (Posted& p : posted) {
      sscComm* comm = p.call->comm;
      std::vector<CallFingerprint> prints;
      sscResult_t r = sscSuccess;
      if (comm->peerCache != nullptr) {
        const PeerMemoryCache::Result& res = p.res;
        r = p.finished;
        if (p.call->checked && !res.checks.empty()) {
          prints.resize(static_cast<size_t>(comm->nranks));
          for (int q = 0; q < comm->nranks; ++q)
            std::memcpy(&prints[q], res.checks.data() + q * PeerMemoryCache::kCheckBytes,
                        sizeof(CallFingerprint));
        }
        if (r == sscSuccess && p.zeroCopy && runsZeroCopy(*p.call, res)) {
          apply(p.call, p.req, res);
          if (p.call->args.captured) pinForGraph(*p.call, res);
        }
      } else {
        CallChecker::Collect& got = collects[next++];
        r = got.result;
        if (r == sscSuccess)
          prints = std::move(got.all);
        else if (lastError() != got.error)
          setError(r, got.error);
      }
      if (!prints.empty()) {
        const std::string why = describeMismatch(prints.data(), comm->nranks);
        if (!why.empty()) {
          refused.insert(comm);
          if (refusal == sscSuccess) refusal = sscInvalidUsage, refusalWhy = why;
          r = sscSuccess;  // agreed by every rank: not a failure of the exchange
        }
      }
      if (r != sscSuccess && first == sscSuccess) {
        first = r;
        setError(r, commFailureText(comm, lastError()));  // names a peer that went away
      }
    }
    SSC_CHECK(first);
  }
  if (refusal == sscSuccess) return sscSuccess;
  for (PendingCall& c : calls)
    if (refused.count(c.comm) != 0) c.refused = true;
  return fail(refusal, "{}", refusalWhy);
}

}  // namespace ssc
