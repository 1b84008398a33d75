// SPDX-License-Identifier: MIT
#include "transports/net/net_comm.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <string>

#include "transports/peer_view.h"
#include "src/core/errors.h"
#include "src/core/log.h"

namespace ssc {

namespace {

struct Loaded {
  const sscNetV1* ops = nullptr;
  std::string error;
};

// The directory this library (or the executable it is linked into) was loaded from.
std::string ownDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ownDirectory), &info) == 0 || info.dli_fname == nullptr)
    return "";
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// Tries the name as given (a path, or the loader's search: RPATH, LD_LIBRARY_PATH), then next to
// libstarscream.so, then ../lib from it (static builds link the core into programs in bin/).
Loaded loadPlugin(const std::string& name) {
  Loaded out;
  std::vector<std::string> candidates = {name};
  if (name.find('/') == std::string::npos) {
    const std::string dir = ownDirectory();
    if (!dir.empty()) {
      candidates.push_back(dir + name);
      candidates.push_back(dir + "../lib/" + name);
    }
  }
  std::string errors;
  for (const std::string& path : candidates) {
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      errors += fmt::format("\n  {}: {}", path, dlerror());
      continue;
    }
    auto entry = reinterpret_cast<sscNetPluginV1Fn>(dlsym(lib, "sscNetPluginV1"));
    if (entry == nullptr || entry() == nullptr) {
      errors += fmt::format("\n  {}: no sscNetPluginV1 entry point", path);
      dlclose(lib);
      continue;
    }
    out.ops = entry();  // never unloaded: MPI may not be re-initialised in one process
    SSC_LOG(kInfo, "net transport: plugin '{}' from {}", out.ops->name, path);
    return out;
  }
  out.error =
      fmt::format("loading the network plugin {} failed (STARSCREAM_NET_PLUGIN):{}", name, errors);
  return out;
}

// Loaded once per process (it is never unloaded), under the STARSCREAM_NET_PLUGIN of the first
// communicator that needs it.
const Loaded& plugin(const std::string& name) {
  static const Loaded loaded = loadPlugin(name);
  return loaded;
}

// Every rank learns whether every rank succeeded; one failure fails all (no rank waits for a
// peer that gave up).
sscResult_t agreeAll(PeerView* comm, sscResult_t mine, const char* what) {
  std::vector<int32_t> codes(comm->nranks, 0);
  codes[comm->rank] = static_cast<int32_t>(mine);
  SSC_CHECK(comm->bootstrap->allGather(codes.data(), sizeof(int32_t)));
  if (mine != sscSuccess) return mine;
  for (int r = 0; r < comm->nranks; ++r)
    if (codes[r] != sscSuccess)
      return fail(sscRemoteError, "{} failed on rank {} (see that rank's log)", what, r);
  return sscSuccess;
}

}  // namespace

std::vector<int> netPeersOf(const PeerView* comm) {
  std::vector<int> peers;
  for (int r = 0; r < comm->nranks; ++r)
    if (comm->topo.ranks[r].node != comm->topo.ranks[comm->rank].node) peers.push_back(r);
  return peers;
}

std::unique_ptr<NetComm> NetComm::wrap(const sscNetV1* ops, void* handle) {
  std::unique_ptr<NetComm> c(new NetComm());
  c->ops_ = ops;
  c->handle_ = handle;
  c->owned_ = false;
  return c;
}

NetComm::~NetComm() {
  if (handle_ == nullptr || !owned_) return;
  sscNetError_t err{};
  if (ops_->commDestroy(handle_, &err) != 0) SSC_LOG(kWarn, "net transport: {}", err.text);
}

sscResult_t NetComm::create(PeerView* comm, std::unique_ptr<NetComm>* out) {
  std::unique_ptr<NetComm> c(new NetComm());
  // 1. The plugin, and this process's identity in the job.
  struct Identity {
    int64_t jobRank;
    int64_t jobSize;
  };
  std::vector<Identity> ids(comm->nranks, Identity{-1, 0});
  sscResult_t mine = sscSuccess;
  const Loaded& p = plugin(comm->settings.getString("STARSCREAM_NET_PLUGIN"));
  if (p.ops == nullptr) {
    mine = fail(sscSystemError, "ranks of this communicator run on {} nodes: {}", comm->topo.nnodes,
                p.error);
  } else {
    sscNetError_t err{};
    if (p.ops->init(&ids[comm->rank].jobRank, &ids[comm->rank].jobSize, &err) != 0)
      mine = fail(sscSystemError, "net transport ({}): {}", p.ops->name, err.text);
  }
  SSC_CHECK(agreeAll(comm, mine, "loading the network plugin"));
  c->ops_ = p.ops;

  // 2. All ranks must be distinct processes of one job, or the plugin cannot address them.
  SSC_CHECK(comm->bootstrap->allGather(ids.data(), sizeof(Identity)));
  std::vector<int64_t> jobRanks(comm->nranks);
  for (int r = 0; r < comm->nranks; ++r) {
    jobRanks[r] = ids[r].jobRank;
    if (ids[r].jobSize != ids[comm->rank].jobSize || ids[r].jobRank < 0 ||
        ids[r].jobRank >= ids[r].jobSize)
      return fail(sscInvalidUsage,
                  "ranks {} and {} are not processes of one {} job (job sizes {} "
                  "and {}): launch every rank with one mpirun to span nodes",
                  r, comm->rank, p.ops->name, ids[r].jobSize, ids[comm->rank].jobSize);
    for (int q = 0; q < r; ++q)
      if (ids[q].jobRank == ids[r].jobRank)
        return fail(sscInvalidUsage,
                    "ranks {} and {} are both process {} of their {} job: were they "
                    "started as separate jobs? Launch every rank with one mpirun to span nodes",
                    q, r, ids[r].jobRank, p.ops->name);
  }

  // 3. The plugin's communicator. The tag separates communicators created at the same time.
  const int tag = static_cast<int>(comm->bootstrap->cookie() & 0x7fff);
  sscNetError_t err{};
  mine = sscSuccess;
  if (c->ops_->commCreate(jobRanks.data(), comm->nranks, tag, &c->handle_, &err) != 0)
    mine = fail(sscSystemError, "net transport ({}): {}", c->ops_->name, err.text);
  SSC_CHECK(agreeAll(comm, mine, "creating the network communicator"));
  *out = std::move(c);
  return sscSuccess;
}

}  // namespace ssc
