// SPDX-License-Identifier: MIT
#include "src/comm/comm.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <set>
#include <system_error>
#include <vector>

#include "src/comm/call_check.h"
#include "src/comm/online_tuning.h"
#include "src/core/env.h"
#include "src/core/errors.h"
#include "src/core/log.h"
#include "src/topology/discovery.h"
#include "transports/usr/p2p_directory.h"
#include "transports/usr/peer_cache.h"
#include "tuner/select.h"
#include "tuner/setup.h"

namespace ssc {

namespace {
std::mutex g_liveMu;
std::set<const sscComm*> g_live;

// `fromFile`: commInit read STARSCREAM_TOPO_FILE into comm->topo (else discovery, collective).
sscResult_t loadTopology(sscComm* comm, bool fromFile) {
  if (!comm->topoPreset && !fromFile) {
    // Each rank describes itself; everyone builds the graph from the same gathered vector.
    GpuRuntimeInfo gpu{};
    bool hasGpu = comm->backend->runtimeInfo(&gpu);
    std::vector<LocalRankInfo> all(comm->nranks);
    SSC_CHECK(discoverLocal(hasGpu ? &gpu : nullptr, &all[comm->rank]));
    SSC_CHECK(comm->bootstrap->allGather(all.data(), sizeof(LocalRankInfo)));
    SSC_CHECK(buildTopology(all, &comm->topo));
  }
  // Every rank must run the same plans: check they all built the same graph.
  uint64_t mine = std::hash<std::string>{}(topologyToJson(comm->topo));
  std::vector<uint64_t> all(comm->nranks);
  all[comm->rank] = mine;
  SSC_CHECK(comm->bootstrap->allGather(all.data(), sizeof(uint64_t)));
  for (int r = 0; r < comm->nranks; ++r)
    if (all[r] != mine)
      return fail(sscInvalidUsage,
                  "rank {} built a different topology than rank {} (is "
                  "STARSCREAM_TOPO_FILE the same on every rank?)",
                  r, comm->rank);
  return sscSuccess;
}

// ---- Settings every rank must share (env::wireSettings), compared once at init.
std::vector<env::WireSetting> wireSettings(const sscComm* comm) {
  env::WireContext context;
  context.backend = comm->backend->name();
  context.defaultStagingBytes = comm->backend->defaultStagingBytes();
  for (size_t k = 0; k < kNumCollKinds; ++k)  // per collective, so equivalent spellings agree
    if (static_cast<CollKind>(k) != CollKind::kSendRecv)  // point-to-point has one algorithm
      context.algos += fmt::format("{}={},", collName(static_cast<CollKind>(k)),
                                   algoName(comm->config.forcedAlgos[k]));
  context.topologyPreset = comm->topoPreset;
  context.topologyName = comm->topo.name;
  context.topologyDigest =
      fmt::format("{:016x}", std::hash<std::string>{}(topologyToJson(comm->topo)));
  return env::wireSettings(comm->settings, context);
}

// Round 2, run by every rank once round 1 found digests that differ (all ranks see the same
// table, so all come here): each rank's settings as text, for a message naming each setting that
// differs, its values and the ranks holding each.
sscResult_t reportSettingsThatDiffer(sscComm* comm, const std::vector<env::WireSetting>& mine) {
  struct Wire {
    uint64_t value;
    char shown[200];
  };
  const size_t n = mine.size();
  std::vector<Wire> all(n * static_cast<size_t>(comm->nranks));
  std::memset(all.data(), 0, all.size() * sizeof(Wire));
  for (size_t s = 0; s < n; ++s) {
    Wire& w = all[static_cast<size_t>(comm->rank) * n + s];
    w.value = std::hash<std::string>{}(mine[s].value);
    std::string shown = mine[s].shown;
    if (shown.size() >= sizeof(w.shown)) shown = shown.substr(0, sizeof(w.shown) - 4) + "...";
    std::memcpy(w.shown, shown.data(), shown.size());
  }
  SSC_CHECK(comm->bootstrap->allGather(all.data(), n * sizeof(Wire)));
  std::vector<const char*> names;
  for (const env::WireSetting& s : mine) names.push_back(s.name);
  std::vector<std::vector<std::pair<uint64_t, std::string>>> byRank(
      static_cast<size_t>(comm->nranks));
  for (size_t q = 0; q < byRank.size(); ++q)
    for (size_t s = 0; s < n; ++s) {
      const Wire& w = all[q * n + s];
      byRank[q].emplace_back(w.value, std::string(w.shown, strnlen(w.shown, sizeof(w.shown))));
    }
  const std::string text = env::describeDifferences(names, byRank);
  if (text.empty()) return sscSuccess;  // the digests differ only in what no setting shows
  // Every rank concludes this from the same table: leave instead of aborting, so that a rank
  // still receiving its part of the table is not cut off by an abort notice.
  comm->settingsDiffer = true;
  commStopWatch(comm, /*orderly=*/true);
  return fail(sscInvalidUsage,
              "the ranks' settings differ, and each must be the same on every "
              "rank: {}",
              text);
}

// Round 1, the one all-gather every init has: where each rank runs (onePerProcess) and a digest
// of its wire settings. Runs before anything that depends on the settings, so that a difference
// is named as such instead of failing later as a mismatched exchange or a hang.
sscResult_t agreeOnSettings(sscComm* comm) {
  const std::vector<env::WireSetting> settings = wireSettings(comm);
  std::string joined;
  for (const env::WireSetting& s : settings) joined += fmt::format("{}={}\n", s.name, s.value);
  struct Hello {
    char host[64];
    int64_t pid;
    uint64_t settings;
  };
  const int rank = comm->rank;
  std::vector<Hello> hello(comm->nranks);
  std::memset(hello.data(), 0, hello.size() * sizeof(Hello));
  (void)gethostname(hello[rank].host, sizeof(hello[rank].host) - 1);
  hello[rank].pid = static_cast<int64_t>(getpid());
  hello[rank].settings = std::hash<std::string>{}(joined);
  SSC_CHECK(comm->bootstrap->allGather(hello.data(), sizeof(Hello)));
  comm->onePerProcess = true;
  bool differ = false;
  for (int q = 0; q < comm->nranks; ++q) {
    differ = differ || hello[q].settings != hello[rank].settings;
    if (q != rank && hello[q].pid == hello[rank].pid &&
        std::strncmp(hello[q].host, hello[rank].host, sizeof(hello[q].host)) == 0)
      comm->onePerProcess = false;
  }
  return differ ? reportSettingsThatDiffer(comm, settings) : sscSuccess;
}

// The verdict that a peer died, aborted or was given up on, recorded on comm and on its split
// children still in their init, which it aborts (their own watch does not run yet).
// Records why on comm and aborts it, and the same on the children its split is creating. The
// abort flag is set under childrenMu, as commLinkChild reads it: a child linked at any moment
// either is in the list walked here or sees the flag there, so none escapes the verdict.
void notePeerGone(sscComm* comm, const std::string& why) {
  comm->failures.notePeerGone(why);
  std::lock_guard<std::mutex> g(comm->childrenMu);
  comm->abortFlag.store(true);
  for (sscComm* child : comm->initChildren) {
    child->failures.notePeerGone(why);
    child->abortFlag.store(true);
  }
}

// Runs on the peer watch's thread, for a peer whose heartbeat stopped (stopped, frozen, or on a
// stalled host), or for this rank itself when the others declared it so while it was stopped.
// As for an abort: every wait ends (work in flight fails naming the rank and its host), new calls
// fail, an idle communicator is not put in error. The verdict is final: a peer that resumes after
// it was given up on does not undo it. The rank given up on is in error itself (its peers failed
// whatever it was waiting for), before anything else it learns on resuming.
void commOnPeerUnresponsive(sscComm* comm, const PeerEvent& e) {
  if (e.rank == comm->rank) commSetAsyncError(comm, sscRemoteError, e.detail);
  notePeerGone(comm, e.detail);
  SSC_LOG(kWarn, "rank {}: {}", comm->rank, e.detail);
}

// Runs on the peer watch's thread. A peer that died fails the communicator (sscCommGetAsyncError
// reports it) and one that aborted ends every wait on a peer, so work that needed it fails within
// milliseconds. Both make the communicator unusable for new calls; an idle one stays out of error
// (frameworks tear down by aborting rank after rank). A peer that left (destroyed its
// communicator, or exited) fails nothing: it left after finishing its own calls, and what it sent
// may still be needed and on its way (its data sits in the receivers' FIFOs, or in a network
// proxy), so later calls that no longer need it must run, and ones that do need it still do. A
// wait that then runs out of time names the departure (commFailureText).
void commOnPeerEvent(sscComm* comm, const PeerEvent& e) {
  std::string what;
  switch (e.kind) {
    case PeerEventKind::kDied:
      what = fmt::format(
          "rank {} died: its connection closed without a goodbye (killed or "
          "crashed){}",
          e.rank, e.origin != comm->rank ? fmt::format(", as rank {} noticed", e.origin) : "");
      break;
    case PeerEventKind::kAborted:
      what = fmt::format("rank {} aborted the communicator (sscCommAbort, a failed call or init)",
                         e.rank);
      break;
    case PeerEventKind::kLeft:
      what = fmt::format("rank {} destroyed its communicator or its process exited", e.rank);
      break;
    case PeerEventKind::kUnresponsive: return commOnPeerUnresponsive(comm, e);
  }
  if (e.kind == PeerEventKind::kLeft) {
    comm->failures.notePeerLeft(what);
    // A departure is how every orderly teardown looks from the other ranks: not worth a warning.
    SSC_LOG(kInfo, "rank {}: {}", comm->rank, what);
    return;
  }
  // The error first: a wait that the abort ends reads it.
  if (e.kind == PeerEventKind::kDied) commSetAsyncError(comm, sscRemoteError, what);
  notePeerGone(comm, what);
  SSC_LOG(kWarn, "rank {}: {}", comm->rank, what);
}
}  // namespace

std::string commPeerGone(sscComm* comm) { return comm->failures.peerGone(); }

std::string commPeerLeft(sscComm* comm) { return comm->failures.peerLeft(); }

std::string commFailureText(sscComm* comm, const std::string& local) {
  return comm->failures.text(local, comm->abortFlag.load());
}

std::string commRingFailureText(sscComm* comm, sscResult_t code, const std::string& local) {
  if (code == sscRemoteError)
    for (int i = 0; i < 250 && !comm->abortFlag.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return commFailureText(comm, local);
}

void commLinkChild(sscComm* parent, sscComm* child) {
  std::lock_guard<std::mutex> g(parent->childrenMu);
  parent->initChildren.push_back(child);
  if (!parent->abortFlag.load()) return;
  // Aborted before the link (notePeerGone sets the flag under childrenMu): the child takes the
  // verdict.
  const std::string gone = parent->failures.peerGone();
  if (!gone.empty()) child->failures.notePeerGone(gone);
  child->abortFlag.store(true);
}

void commUnlinkChild(sscComm* parent, sscComm* child) {
  std::lock_guard<std::mutex> g(parent->childrenMu);
  std::erase(parent->initChildren, child);
}

void commStopWatch(sscComm* comm, bool orderly) {
  if (comm->bootstrap != nullptr)
    comm->bootstrap->stopWatch(orderly ? PeerEventKind::kLeft : PeerEventKind::kAborted);
}

bool commIsLive(const sscComm* comm) {
  std::lock_guard<std::mutex> g(g_liveMu);
  return comm != nullptr && g_live.count(comm) != 0 && comm->magic == sscComm::kMagic;
}
void commRegisterLive(sscComm* comm) {
  std::lock_guard<std::mutex> g(g_liveMu);
  g_live.insert(comm);
}
bool commUnregisterLive(sscComm* comm) {
  std::lock_guard<std::mutex> g(g_liveMu);
  return g_live.erase(comm) != 0;
}

static std::atomic<int> g_threadStartsLeft{-1};  // commFailThreadStartsAfter; negative: off
void commFailThreadStartsAfter(int starts) { g_threadStartsLeft.store(starts); }
std::thread commStartThread(std::function<void()> body) {
  if (g_threadStartsLeft.load() >= 0 && g_threadStartsLeft.fetch_sub(1) == 0)
    throw std::system_error(EAGAIN, std::generic_category(), "thread creation refused (test hook)");
  return std::thread(std::move(body));
}

sscResult_t commInit(sscComm* comm, const sscUniqueId& id, int nranks, int rank) {
  comm->rank = rank;
  comm->nranks = nranks;
  setLogRank(rank);
  // Every setting comes from comm->settings, read when the communicator was created: the waits'
  // limits first, since the bootstrap's waits are the first.
  comm->waits = WaitLimits::from(comm->settings);
  SSC_CHECK(Bootstrap::connect(id, rank, nranks, &comm->abortFlag,
                               BootstrapOptions::from(comm->settings), &comm->bootstrap));
  // From here on a peer that dies or gives up is noticed at once, during the rest of init too.
  comm->bootstrap->startWatch([comm](const PeerEvent& e) { commOnPeerEvent(comm, e); },
                              [comm] {
                                // Exiting with work in flight leaves peers waiting on it.
                                return comm->work.idle() ? PeerEventKind::kLeft
                                                         : PeerEventKind::kAborted;
                              });
  // A malformed STARSCREAM_* value refuses init rather than being ignored; misspelt names get a
  // warning on stderr. Checked once this rank is in the ring, so that when only this rank's
  // environment is wrong its peers hear of the failed init at once (the peer watch: "aborted")
  // instead of waiting for it at the bootstrap root until STARSCREAM_TIMEOUT.
  const env::Snapshot& settings = comm->settings;
  SSC_CHECK(env::validate(settings));
  // The communicator's settings, parsed once (CommConfig): no call re-reads or re-parses them.
  SSC_CHECK(parseForcedAlgos(settings.getString("STARSCREAM_ALGO"), &comm->config.forcedAlgos));
  comm->config.dumpPlans = settings.getInt("STARSCREAM_DUMP_PLAN") != 0;
  comm->config.gemmBarrier = settings.getString("STARSCREAM_GEMM_BARRIER");  // validate() checked
  comm->config.attnPrefill = settings.getString("STARSCREAM_ATTN_PREFILL");
  {
    const std::string grid = settings.getString("STARSCREAM_ZERO_COPY_GRID");  // validate() checked
    comm->config.zeroCopyGrid = grid == "bulk"   ? ZeroCopyGrid::kBulk
                                : grid == "wide" ? ZeroCopyGrid::kWide
                                                 : ZeroCopyGrid::kAuto;
  }
  // The topology file is read before the settings are compared: its topology is one of them.
  const std::string topoFile = comm->topoPreset ? "" : settings.getString("STARSCREAM_TOPO_FILE");
  if (!topoFile.empty())
    if (sscResult_t r = loadTopologyFile(topoFile, nranks, &comm->topo); r != sscSuccess)
      return setError(r, "STARSCREAM_TOPO_FILE: " + lastError());
  SSC_CHECK(agreeOnSettings(comm));
  SSC_CHECK(loadTopology(comm, !topoFile.empty()));
  SSC_CHECK(comm->backend->connect(comm, &comm->resources));
  ModelLimits limits{comm->resources->chunkBytes(), comm->resources->channels(),
                     comm->backend->packetAllReduceMaxBytes(comm), 4};
  limits.oneMemory = std::string(comm->backend->name()) == "host";
  limits.blocksPerChannel = comm->resources->blocksPerChannel();
  SSC_CHECK(createTuner(
      comm->topo, limits, rank, nranks,
      [comm](void* d, size_t n) { return comm->bootstrap->allGather(d, n); }, &comm->tuner));
  SSC_CHECK(commSetUpStaging(comm));
  SSC_CHECK(commSetUpPeerCache(comm));
  SSC_CHECK(callCheckSetUp(comm));
  SSC_CHECK(comm->bootstrap->barrier());
  SSC_LOG(kInfo, "communicator ready: rank {}/{} on the {} backend, topology '{}' ({} GPU(s))",
          rank, nranks, comm->backend->name(), comm->topo.name, comm->topo.gpus.size());
  return sscSuccess;
}

void commSetAsyncError(sscComm* comm, sscResult_t code, const std::string& message) {
  comm->failures.recordError(code, message);
}

void commWorkQueued(sscComm* comm) { comm->work.queued(); }
void commWorkDone(sscComm* comm) { comm->work.done(); }
void commWaitIdle(sscComm* comm) { comm->work.waitIdle(); }

CommUse::CommUse(sscComm* comm) : comm_(nullptr) {
  std::lock_guard<std::mutex> live(g_liveMu);
  if (comm == nullptr || g_live.count(comm) == 0) return;
  comm_ = comm;
  comm_->work.enter();
}

CommUse::~CommUse() {
  if (comm_ != nullptr) comm_->work.leave();
}

void commWaitUnused(sscComm* comm) { comm->work.waitUnused(); }

// A small all-reduce the backend sends as packets needs no registration (and no mapped peers
// beyond its connections, which exist within a node only).
bool commPacketCall(const sscComm* comm, const CollArgs& args, size_t elemBytes) {
  const uint64_t bytes = args.count * elemBytes;
  return args.coll == CollKind::kAllReduce && bytes > 0 && !args.rankScaled &&
         bytes <= comm->backend->packetAllReduceMaxBytes(comm) && comm->topo.nnodes == 1;
}

sscResult_t commSetUpStaging(sscComm* comm) {
  const std::string text = comm->settings.getString("STARSCREAM_STAGING_BYTES");
  const int64_t want = text.empty() ? static_cast<int64_t>(comm->backend->defaultStagingBytes())
                                    : comm->settings.getInt("STARSCREAM_STAGING_BYTES");
  // Zero-copy needs every peer mapped: one node, and the symmetric kernels' rank limit.
  if (want <= 0 || comm->topo.nnodes != 1 || comm->nranks > kSymmetricMaxRanks) return sscSuccess;
  const size_t bytes = (static_cast<size_t>(want) + 15) / 16 * 16;  // no overflow at INT64_MAX
  StagingBuffers& s = comm->staging;
  int32_t mine = comm->backend->memAlloc(&s.in, bytes) == sscSuccess &&
                 comm->backend->memAlloc(&s.out, bytes) == sscSuccess;
  std::vector<int32_t> ok(comm->nranks, 0);
  ok[comm->rank] = mine;
  SSC_CHECK(comm->bootstrap->allGather(ok.data(), sizeof(int32_t)));
  bool all = true;
  for (int32_t v : ok) all = all && v != 0;
  s.peers.assign(2, {});
  if (all) {
    SSC_CHECK(comm->backend->registerBuffer(comm, s.in, bytes, &s.peers[kBufIn]));
    SSC_CHECK(comm->backend->registerBuffer(comm, s.out, bytes, &s.peers[kBufOut]));
  }
  if (!all || s.peers[kBufIn].empty() || s.peers[kBufOut].empty()) {
    SSC_LOG(kInfo, "no staging buffers ({}): unregistered calls use the FIFO algorithms",
            all ? "the backend cannot share them" : "a rank could not allocate them");
    commReleaseStaging(comm);
    return sscSuccess;
  }
  s.bytes = bytes;
  SSC_LOG(kInfo, "staging: 2 x {} KiB registered for zero-copy calls on unregistered buffers",
          bytes >> 10);
  return sscSuccess;
}

void commReleaseStaging(sscComm* comm) {
  StagingBuffers& s = comm->staging;
  for (int b : {kBufIn, kBufOut}) {
    void* p = b == kBufIn ? s.in : s.out;
    if (p == nullptr) continue;
    if (s.peers.size() > static_cast<size_t>(b) && !s.peers[b].empty())
      (void)comm->backend->deregisterBuffer(comm, p, s.peers[b]);
    (void)comm->backend->memFree(p);
  }
  s.in = s.out = nullptr;
  s.bytes = 0;
  s.peers.clear();
}

void PeerCacheDeleter::operator()(PeerMemoryCache* cache) const { delete cache; }
void P2pDirectoryDeleter::operator()(P2pDirectory* directory) const { delete directory; }

sscResult_t commSetUpPeerCache(sscComm* comm) {
  PeerMemoryRuntime* runtime = comm->backend->peerMemory(comm);
  const int64_t minBytes = comm->settings.getInt("STARSCREAM_ZERO_COPY_MIN_BYTES");
  // Every condition is the same on every rank (onePerProcess comes from one gathered table).
  if (runtime == nullptr || comm->nranks < 2 || comm->topo.nnodes != 1 ||
      comm->nranks > kSymmetricMaxRanks || !comm->onePerProcess || minBytes < 0)
    return sscSuccess;
  comm->config.zeroCopyMinBytes = static_cast<uint64_t>(minBytes);
  std::unique_ptr<ShmAllGather> table;
  SSC_CHECK(ShmAllGather::createShared(comm, &table));
  if (table == nullptr) return sscSuccess;
  comm->peerCache.reset(new PeerMemoryCache(runtime, std::move(table),
                                            [comm] { return comm->backend->drain(comm); }));
  // One-copy point-to-point needs the same (peers' memory mapped here) and an executor that
  // runs the handshake; every condition is the same on every rank.
  if (comm->backend->oneCopyP2p()) {
    std::unique_ptr<P2pDirectory> directory;
    WorkClock work{[comm] { return comm->backend->workIssued(comm); },
                   [comm](uint64_t t) { return comm->backend->workFinished(comm, t); }};
    SSC_CHECK(P2pDirectory::createShared(comm, runtime, std::move(work), &directory));
    comm->p2pDirectory.reset(directory.release());
  }
  return sscSuccess;
}

void commReleasePeerCache(sscComm* comm) {
  if (comm->peerCache == nullptr && comm->p2pDirectory == nullptr) return;
  // Launched kernels may still use the mappings (an abort wakes them; they end on their own).
  (void)comm->backend->drain(comm);
  comm->peerCache.reset();
  comm->p2pDirectory.reset();
}

sscResult_t commGetPlan(sscComm* comm, const CollArgs& args, size_t elemBytes,
                        std::shared_ptr<const RankPlan>* out, std::shared_ptr<WorkTiming>* trial) {
  const uint64_t bytes =
      std::max(collInputElems(args, comm->nranks), collOutputElems(args, comm->nranks)) * elemBytes;
  const bool packets = commPacketCall(comm, args, elemBytes);
  const Algo forced = comm->config.forcedAlgos[static_cast<size_t>(args.coll)];
  Choice choice = selectCall(*comm->tuner, args.coll, bytes, args.symmetric || packets, forced,
                             comm->config.zeroCopyGrid);
  if (trial != nullptr) trial->reset();
  // Online tuning refines the tuner's own choices only: a forced algorithm or grid is the user's
  // word, and point-to-point and all-to-all have one way to run (selectCall).
  if (trial != nullptr && comm->online != nullptr && forced == Algo::kAuto &&
      comm->config.zeroCopyGrid == ZeroCopyGrid::kAuto && args.coll != CollKind::kSendRecv &&
      args.coll != CollKind::kAllToAll)
    SSC_CHECK(
        comm->online->next(comm, args.coll, bytes, args.symmetric || packets, &choice, trial));
  const Algo algo = choice.algo;
  const bool wide = algo == Algo::kSymmetric && choice.protocol == Protocol::kZeroCopyWide;
  const CollPlanKey key(static_cast<int>(args.coll), static_cast<int>(algo), args.count, args.root,
                        elemBytes, args.inPlace, packets, wide);
  // Runs under the cache's lock (PlanCache::collPlan): it takes none of the communicator's locks
  // (only the logger's, a leaf of the core, under STARSCREAM_DUMP_PLAN) and reads only what init
  // fixed.
  const auto build = [&](PlanCache::Plan* built) -> sscResult_t {
    PlanParams params;
    params.elemBytes = elemBytes;
    params.chunkElems = std::max<uint64_t>(1, comm->resources->chunkBytes() / elemBytes);
    params.maxChannels = comm->resources->channels();
    params.packetOneShot = packets;
    auto plan = std::make_shared<RankPlan>();
    CollArgs planArgs = args;
    planArgs.symmetric = algo == Algo::kSymmetric;
    SSC_CHECK(buildCollPlan(comm->topo, comm->rank, planArgs, algo, params, plan.get()));
    plan->wideGrid = wide;
    if (comm->config.dumpPlans) logWrite(kInfo, formatPlan(*plan));
    *built = std::move(plan);
    return sscSuccess;
  };
  return comm->plans.collPlan(key, build, out);
}

sscResult_t commGetP2pPlan(sscComm* comm, const std::vector<P2pOp>& ops,
                           std::shared_ptr<const RankPlan>* out) {
  P2pPlanKey key;
  for (const P2pOp& op : ops) {
    key.push_back((static_cast<uint64_t>(op.isSend) << 32) | static_cast<uint32_t>(op.peer));
    key.push_back(op.bytes);
  }
  // Runs under the cache's lock (PlanCache::p2pPlan): it takes none of the communicator's locks
  // (only the logger's, a leaf of the core, under STARSCREAM_DUMP_PLAN) and reads only what init
  // fixed.
  const auto build = [&](PlanCache::Plan* built) -> sscResult_t {
    PlanParams params;
    params.elemBytes = 1;
    params.chunkElems = comm->resources->chunkBytes();
    params.maxChannels = comm->resources->channels();
    auto plan = std::make_shared<RankPlan>();
    // With the directory every peer is on this node: every pair has the one-copy handshake.
    std::vector<uint8_t> direct;
    if (comm->p2pDirectory != nullptr) direct.assign(static_cast<size_t>(comm->nranks), 1);
    SSC_CHECK(buildP2pPlan(comm->rank, comm->nranks, ops, params, plan.get(), direct));
    if (comm->config.dumpPlans) logWrite(kInfo, formatPlan(*plan));
    *built = std::move(plan);
    return sscSuccess;
  };
  return comm->plans.p2pPlan(key, build, out);
}

sscResult_t commForceAlgo(sscComm* comm, const std::string& spec) {
  ForcedAlgos forced;
  SSC_CHECK(parseForcedAlgos(spec, &forced));
  comm->config.forcedAlgos = forced;
  return sscSuccess;
}

}  // namespace ssc

// The views' hooks: the backends and transports reach the communicator only through these.
void sscComm::setAsyncError(sscResult_t code, const std::string& message) {
  ssc::commSetAsyncError(this, code, message);
}
std::string sscComm::asyncErrorText() { return failures.message(); }
std::string sscComm::failureText(const std::string& local) {
  return ssc::commFailureText(this, local);
}
void sscComm::workQueued() { ssc::commWorkQueued(this); }
void sscComm::workDone() { ssc::commWorkDone(this); }
void sscComm::waitIdle() { ssc::commWaitIdle(this); }
