// SPDX-License-Identifier: MIT
#include "transports/host/shm_registry.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "transports/peer_view.h"
#include "src/core/errors.h"
#include "src/core/log.h"
#include "src/core/shared_file.h"

namespace ssc {

namespace {

struct Allocation {
  int fd;
  size_t bytes;
  uint64_t id;  // never reused in this process: tells a new allocation at an old address apart
};
uint64_t g_nextId = 0;  // guarded by g_mu

std::mutex g_mu;
std::map<char*, Allocation> g_allocs;  // by base
// Peer mappings made for registrations: mapped base -> length (the peer's whole allocation).
std::map<char*, size_t> g_peerMaps;

// What one rank tells the others about a registered buffer.
struct Offer {
  int32_t ok;
  int32_t pid;
  int32_t fd;
  int32_t pad;
  uint64_t allocBytes;
  uint64_t offset;  // of the buffer in its allocation
};

bool findAllocation(const void* p, size_t bytes, char** base, Allocation* alloc) {
  std::lock_guard<std::mutex> g(g_mu);
  auto it = g_allocs.upper_bound(static_cast<char*>(const_cast<void*>(p)));
  if (it == g_allocs.begin()) return false;
  --it;
  const char* c = static_cast<const char*>(p);
  if (c + bytes > it->first + it->second.bytes) return false;
  *base = it->first;
  *alloc = it->second;
  return true;
}

}  // namespace

sscResult_t shmAlloc(size_t bytes, void** out) {
  int fd = -1;
  void* p = nullptr;
  std::string why;
  if (!createSharedFile("starscream-mem", bytes, &fd, &p, &why))
    return fail(sscSystemError, "allocating {} bytes of shareable memory failed: {}", bytes, why);
  std::lock_guard<std::mutex> g(g_mu);
  g_allocs.emplace(static_cast<char*>(p), Allocation{fd, bytes, ++g_nextId});
  *out = p;
  return sscSuccess;
}

sscResult_t shmFree(void* p) {
  Allocation a;
  {
    std::lock_guard<std::mutex> g(g_mu);
    auto it = g_allocs.find(static_cast<char*>(p));
    if (it == g_allocs.end())
      return fail(sscInvalidArgument, "sscMemFree: {} was not allocated by sscMemAlloc", p);
    a = it->second;
    g_allocs.erase(it);
  }
  munmap(p, a.bytes);
  close(a.fd);
  return sscSuccess;
}

sscResult_t shmRegister(PeerView* comm, void* buff, size_t bytes, std::vector<void*>* peerBases) {
  peerBases->clear();
  const int n = comm->nranks, me = comm->rank;
  std::vector<Offer> offers(n);
  char* base = nullptr;
  Allocation alloc{};
  Offer& mine = offers[me];
  mine = Offer{0, static_cast<int32_t>(getpid()), -1, 0, 0, 0};
  if (findAllocation(buff, bytes, &base, &alloc)) {
    mine.ok = 1;
    mine.fd = alloc.fd;
    mine.allocBytes = alloc.bytes;
    mine.offset = static_cast<uint64_t>(static_cast<char*>(buff) - base);
  }
  SSC_CHECK(comm->bootstrap->allGather(offers.data(), sizeof(Offer)));
  for (const Offer& o : offers)
    if (!o.ok) return sscSuccess;  // someone's buffer is not shareable: plain registration

  std::vector<void*> maps(n, nullptr);
  std::string why;
  for (int q = 0; q < n && why.empty(); ++q) {
    if (q == me) continue;
    void* m = mapPeerFile(offers[q].pid, offers[q].fd, offers[q].allocBytes, &why);
    if (m == nullptr) {
      why = fmt::format("rank {}'s buffer: {}", q, why);
      break;
    }
    maps[q] = m;
  }
  // Everyone must agree: one failure makes it a plain registration on every rank.
  std::vector<int32_t> ok(n, 0);
  ok[me] = why.empty() ? 1 : 0;
  sscResult_t r = comm->bootstrap->allGather(ok.data(), sizeof(int32_t));
  bool all = r == sscSuccess;
  for (int q = 0; q < n && all; ++q) all = ok[q] != 0;
  if (!all) {
    if (!why.empty()) SSC_LOG(kInfo, "registration stays local (no zero-copy): {}", why);
    for (int q = 0; q < n; ++q)
      if (maps[q] != nullptr) munmap(maps[q], offers[q].allocBytes);
    return r;
  }
  peerBases->resize(n);
  std::lock_guard<std::mutex> g(g_mu);
  for (int q = 0; q < n; ++q) {
    if (q == me) {
      (*peerBases)[q] = buff;
      continue;
    }
    g_peerMaps.emplace(static_cast<char*>(maps[q]), offers[q].allocBytes);
    (*peerBases)[q] = static_cast<char*>(maps[q]) + offers[q].offset;
  }
  return sscSuccess;
}

sscResult_t shmDeregister(PeerView* comm, void* buff, const std::vector<void*>& peerBases) {
  (void)buff;
  std::lock_guard<std::mutex> g(g_mu);
  for (int q = 0; q < static_cast<int>(peerBases.size()); ++q) {
    if (q == comm->rank) continue;
    // peerBases[q] lies in the mapping made for it: find that mapping's start.
    char* p = static_cast<char*>(peerBases[q]);
    auto it = g_peerMaps.upper_bound(p);
    if (it == g_peerMaps.begin()) continue;
    --it;
    munmap(it->first, it->second);
    g_peerMaps.erase(it);
  }
  return sscSuccess;
}

namespace {

// Plain buffers on the host backend: sscMemAlloc memory that was never registered. The export
// is the memfd as /proc/<pid>/fd/<fd> names it; peers map the whole allocation.
struct ShmHandle {
  int32_t pid;
  int32_t fd;
};

class ShmPeerMemory : public PeerMemoryRuntime {
 public:
  bool query(const void* p, size_t bytes, PeerAllocation* out, std::string* why) override {
    char* base = nullptr;
    Allocation a{};
    if (!findAllocation(p, bytes, &base, &a)) {
      *why = "not (inside) an sscMemAlloc allocation";
      return false;
    }
    *out = PeerAllocation{reinterpret_cast<uintptr_t>(base), a.bytes, a.id};
    return true;
  }
  bool exportHandle(const PeerAllocation& a, uint8_t handle[kPeerHandleBytes],
                    std::string* why) override {
    std::lock_guard<std::mutex> g(g_mu);
    auto it = g_allocs.find(reinterpret_cast<char*>(a.base));
    if (it == g_allocs.end() || it->second.id != a.id) {
      *why = "the allocation was freed";
      return false;
    }
    const ShmHandle h{static_cast<int32_t>(getpid()), it->second.fd};
    std::memset(handle, 0, kPeerHandleBytes);
    std::memcpy(handle, &h, sizeof(h));
    return true;
  }
  bool open(const uint8_t handle[kPeerHandleBytes], const PeerAllocation& a, void** mapped,
            std::string* why) override {
    ShmHandle h;
    std::memcpy(&h, handle, sizeof(h));
    *mapped = mapPeerFile(h.pid, h.fd, a.bytes, why);
    return *mapped != nullptr;
  }
  void close(void* mapped, const PeerAllocation& a) override { munmap(mapped, a.bytes); }
};

}  // namespace

PeerMemoryRuntime* shmPeerMemory() {
  static ShmPeerMemory runtime;
  return &runtime;
}

}  // namespace ssc
