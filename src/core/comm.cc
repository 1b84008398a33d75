#include "src/core/comm.h"

#include <functional>
#include <set>

#include "src/core/env.h"
#include "src/core/errors.h"
#include "src/core/log.h"
#include "src/topology/discovery.h"
#include "tuner/select.h"

namespace ssc {

namespace {
std::mutex g_liveMu;
std::set<const sscComm*> g_live;

// Plans are small, but a sweep over many sizes would grow the cache without bound.
constexpr size_t kMaxCachedPlans = 256;

sscResult_t loadTopology(sscComm* comm) {
  std::string file = env::getString("STARSCREAM_TOPO_FILE");
  if (comm->topoPreset) {
    // Already set (a split's subset of the parent's graph).
  } else if (!file.empty()) {
    SSC_CHECK(loadTopologyFile(file, comm->nranks, &comm->topo));
  } else {
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
      return fail(sscInvalidUsage, "rank {} built a different topology than rank {} (is "
                  "STARSCREAM_TOPO_FILE the same on every rank?)", r, comm->rank);
  return sscSuccess;
}
}  // namespace

bool commIsLive(const sscComm* comm) {
  std::lock_guard<std::mutex> g(g_liveMu);
  return comm != nullptr && g_live.count(comm) != 0 && comm->magic == sscComm::kMagic;
}
void commRegisterLive(sscComm* comm) {
  std::lock_guard<std::mutex> g(g_liveMu);
  g_live.insert(comm);
}
void commUnregisterLive(sscComm* comm) {
  std::lock_guard<std::mutex> g(g_liveMu);
  g_live.erase(comm);
}

sscResult_t commInit(sscComm* comm, const sscUniqueId& id, int nranks, int rank) {
  comm->rank = rank;
  comm->nranks = nranks;
  setLogRank(rank);
  SSC_CHECK(Bootstrap::connect(id, rank, nranks, &comm->abortFlag, &comm->bootstrap));
  SSC_CHECK(loadTopology(comm));
  SSC_CHECK(comm->backend->connect(comm, &comm->resources));
  SSC_CHECK(comm->bootstrap->barrier());
  SSC_LOG(kInfo, "communicator ready: rank {}/{} on the {} backend, topology '{}' ({} GPU(s))",
          rank, nranks, comm->backend->name(), comm->topo.name, comm->topo.gpus.size());
  return sscSuccess;
}

void commSetAsyncError(sscComm* comm, sscResult_t code, const std::string& message) {
  std::lock_guard<std::mutex> g(comm->mu);
  int expected = sscSuccess;
  if (comm->asyncError.compare_exchange_strong(expected, code) ||
      expected == sscInProgress) {
    comm->asyncError.store(code);
    comm->asyncMessage = message;
  }
}

void commWorkQueued(sscComm* comm) {
  std::lock_guard<std::mutex> g(comm->mu);
  ++comm->pending;
}

void commWorkDone(sscComm* comm) {
  std::lock_guard<std::mutex> g(comm->mu);
  if (--comm->pending == 0) comm->idle.notify_all();
}

void commWaitIdle(sscComm* comm) {
  std::unique_lock<std::mutex> lk(comm->mu);
  comm->idle.wait(lk, [&] { return comm->pending == 0; });
}

CommUse::CommUse(sscComm* comm) : comm_(nullptr) {
  std::lock_guard<std::mutex> live(g_liveMu);
  if (comm == nullptr || g_live.count(comm) == 0) return;
  comm_ = comm;
  std::lock_guard<std::mutex> g(comm_->mu);
  ++comm_->users;
}

CommUse::~CommUse() {
  if (comm_ == nullptr) return;
  std::lock_guard<std::mutex> g(comm_->mu);
  if (--comm_->users == 0) comm_->idle.notify_all();
}

void commWaitUnused(sscComm* comm) {
  std::unique_lock<std::mutex> lk(comm->mu);
  comm->idle.wait(lk, [&] { return comm->users == 0; });
}

sscResult_t commGetPlan(sscComm* comm, const CollArgs& args, size_t elemBytes,
                        std::shared_ptr<const RankPlan>* out) {
  const uint64_t n = static_cast<uint64_t>(comm->nranks);
  uint64_t bytes = args.count * elemBytes;
  if (args.coll == CollKind::kReduceScatter || args.coll == CollKind::kAllGather ||
      args.coll == CollKind::kAllToAll)
    bytes *= n;
  // A small all-reduce the backend sends as packets needs no registration (and no mapped
  // peers beyond its connections, which exist within a node only).
  const bool packets = args.coll == CollKind::kAllReduce && bytes > 0 &&
                       bytes <= comm->backend->packetAllReduceMaxBytes() && comm->topo.nnodes == 1;
  Algo algo = selectAlgo(comm->topo, args.coll, bytes, args.symmetric || packets);
  auto key = std::make_tuple(static_cast<int>(args.coll), static_cast<int>(algo), args.count,
                             args.root, elemBytes, args.inPlace, packets);
  std::lock_guard<std::mutex> g(comm->mu);
  auto it = comm->plans.find(key);
  if (it != comm->plans.end()) {
    *out = it->second;
    return sscSuccess;
  }
  PlanParams params;
  params.elemBytes = elemBytes;
  params.chunkElems = std::max<uint64_t>(1, comm->resources->chunkBytes() / elemBytes);
  params.maxChannels = comm->resources->channels();
  params.packetOneShot = packets;
  auto plan = std::make_shared<RankPlan>();
  CollArgs planArgs = args;
  planArgs.symmetric = algo == Algo::kSymmetric;
  SSC_CHECK(buildCollPlan(comm->topo, comm->rank, planArgs, algo, params, plan.get()));
  if (env::getInt("STARSCREAM_DUMP_PLAN") != 0) logWrite(kInfo, formatPlan(*plan));
  if (comm->plans.size() >= kMaxCachedPlans) comm->plans.clear();
  comm->plans.emplace(key, plan);
  *out = plan;
  return sscSuccess;
}

}  // namespace ssc
