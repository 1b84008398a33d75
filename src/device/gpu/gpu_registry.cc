// SPDX-License-Identifier: MIT
#include "src/device/gpu/gpu_registry.h"

#include <cstring>

#include "src/device/backend.h"
#include "src/core/errors.h"
#include "src/core/log.h"
#include "src/platform/gpu_check.h"

namespace ssc::gpu {

AllocationTable& AllocationTable::process() {
  static AllocationTable t;
  return t;
}

void AllocationTable::add(void* base, size_t bytes) {
  std::lock_guard<std::mutex> g(mu_);
  allocs_[reinterpret_cast<uintptr_t>(base)] = bytes;
}

void AllocationTable::remove(void* base) {
  std::lock_guard<std::mutex> g(mu_);
  allocs_.erase(reinterpret_cast<uintptr_t>(base));
}

bool AllocationTable::find(const void* p, size_t bytes, void** base, size_t* size) const {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> g(mu_);
  auto it = allocs_.upper_bound(a);
  if (it == allocs_.begin()) return false;
  --it;
  if (a + bytes < a || a + bytes > it->first + it->second) return false;
  *base = reinterpret_cast<void*>(it->first);
  *size = it->second;
  return true;
}

ImportCache& ImportCache::process() {
  static ImportCache c;
  return c;
}

bool ImportCache::open(const std::string& handle, void** mapped, std::string* why) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = byHandle_.find(handle);
  if (it != byHandle_.end()) {
    ++it->second.refs;
    *mapped = it->second.mapped;
    return true;
  }
  hipIpcMemHandle_t h;
  static_assert(sizeof(h) <= 256, "IPC handle size");
  if (handle.size() != sizeof(h)) {
    if (why != nullptr)
      *why = "IPC handle of the wrong size";
    else
      setError(sscInternalError, "IPC handle of the wrong size");
    return false;
  }
  std::memcpy(&h, handle.data(), sizeof(h));
  void* p = nullptr;
  const hipError_t e = hipIpcOpenMemHandle(&p, h, hipIpcMemLazyEnablePeerAccess);
  if (e != hipSuccess) {
    (void)hipGetLastError();  // reported below, once; a later launch's check must not see it
    const std::string text =
        fmt::format("opening a peer's registered allocation failed: {}", hipGetErrorString(e));
    if (why != nullptr)
      *why = text;
    else
      setError(sscUnhandledDeviceError, text);
    return false;
  }
  byHandle_[handle] = Import{p, 1};
  byMapped_[p] = handle;
  *mapped = p;
  return true;
}

void ImportCache::close(void* mapped) {
  std::lock_guard<std::mutex> g(mu_);
  auto m = byMapped_.find(mapped);
  if (m == byMapped_.end()) return;
  auto it = byHandle_.find(m->second);
  if (--it->second.refs > 0) return;
  SSC_GPU_RELEASE(hipIpcCloseMemHandle(mapped));
  byHandle_.erase(it);
  byMapped_.erase(m);
}

namespace {

// What each rank contributes to a registration.
struct Offer {
  hipIpcMemHandle_t handle;
  uint64_t offset;  // of buff in its allocation
  uint64_t bytes;
  int32_t ok;
  int32_t pad;
};

}  // namespace

Registrations::~Registrations() {
  std::lock_guard<std::mutex> g(mu_);
  for (auto& [buff, maps] : opened_)
    for (void* m : maps) ImportCache::process().close(m);
  opened_.clear();
}

sscResult_t Registrations::add(CommView* comm, void* buff, size_t bytes,
                               std::vector<void*>* peerBases) {
  peerBases->clear();
  const int n = comm->nranks, me = comm->rank;
  std::vector<Offer> offers(n);
  Offer& mine = offers[me];
  std::memset(&mine, 0, sizeof(mine));
  void* base = nullptr;
  size_t size = 0;
  std::string why;
  if (!AllocationTable::process().find(buff, bytes, &base, &size)) {
    why = "the buffer is not (inside) an sscMemAlloc allocation";
  } else {
    const hipError_t e = hipIpcGetMemHandle(&mine.handle, base);
    if (e != hipSuccess) {
      (void)hipGetLastError();  // in `why` below; a later launch's check must not report it
      why = fmt::format("exporting its allocation failed: {}", hipGetErrorString(e));
    } else {
      mine.offset = static_cast<uint64_t>(static_cast<char*>(buff) - static_cast<char*>(base));
      mine.bytes = bytes;
      mine.ok = 1;
    }
  }
  SSC_CHECK(comm->bootstrap->allGather(offers.data(), sizeof(Offer)));
  for (int q = 0; q < n; ++q) {
    if (offers[q].ok) continue;
    // Not an error: the buffer stays registered (recorded) and calls on it use the FIFO path.
    SSC_LOG(kInfo,
            "sscCommRegister: rank {} cannot share {} bytes at {}: {}; no zero-copy for this "
            "registration",
            q, bytes, buff, q == me ? why : std::string("see that rank's log"));
    return sscSuccess;
  }

  std::vector<void*> maps;
  std::vector<void*> bases(n, nullptr);
  bool ok = true;
  for (int q = 0; q < n && ok; ++q) {
    if (q == me) {
      bases[q] = buff;
      continue;
    }
    void* m = nullptr;
    ok = ImportCache::process().open(
        std::string(reinterpret_cast<const char*>(&offers[q].handle), sizeof(offers[q].handle)),
        &m);
    if (!ok) {
      why = lastError();
      break;
    }
    maps.push_back(m);
    bases[q] = static_cast<char*>(m) + offers[q].offset;
  }
  // Every rank must reach the same outcome: one failed open makes the registration local-only
  // everywhere (plans then never name peers' buffers that some rank could not map).
  std::vector<int32_t> all(n, 0);
  all[me] = ok ? 1 : 0;
  SSC_CHECK(comm->bootstrap->allGather(all.data(), sizeof(int32_t)));
  for (int q = 0; q < n; ++q) {
    if (all[q]) continue;
    SSC_LOG(kWarn,
            "sscCommRegister: rank {} could not map its peers' buffers ({}); no zero-copy "
            "for this registration",
            q, q == me ? why : std::string("see that rank's log"));
    for (void* m : maps) ImportCache::process().close(m);
    return sscSuccess;
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    auto& slot = opened_[buff];
    for (void* m : slot) ImportCache::process().close(m);  // re-registration replaces
    slot = std::move(maps);
  }
  *peerBases = std::move(bases);
  return sscSuccess;
}

void Registrations::remove(void* buff) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = opened_.find(buff);
  if (it == opened_.end()) return;
  for (void* m : it->second) ImportCache::process().close(m);
  opened_.erase(it);
}

}  // namespace ssc::gpu
