// SPDX-License-Identifier: MIT
#include "src/device/gpu/gpu_memory_access.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "src/core/errors.h"
#include "src/device/gpu/gpu_launch_order.h"
#include "src/device/memory_access.h"
#include "src/platform/gpu_runtime.h"

namespace ssc::gpu {

namespace {

// Device memory seen by checkAccessible, by address range: legacy allocations whole, other
// device memory (VMM) as the buffers that were checked. An application's cudaFree is not seen,
// so a range stays until memory found later overlaps it (the runtime handed that address space
// out again), sscMemFree frees it or the table is full; were pageable host memory mapped at such
// an address meanwhile, it would pass (docs/reliability.md, Limits).
class DeviceRanges {
 public:
  static DeviceRanges& process() {
    static DeviceRanges r;
    return r;
  }
  bool contains(uintptr_t a, size_t bytes) const {
    std::shared_lock<std::shared_mutex> g(mu_);
    auto it = ranges_.upper_bound(a);
    if (it == ranges_.begin()) return false;
    --it;
    return a + bytes >= a && a + bytes <= it->second;
  }
  void add(uintptr_t base, size_t size) {
    std::unique_lock<std::shared_mutex> g(mu_);
    // Drop what overlaps [base, base + size): ranges of allocations since freed.
    auto it = ranges_.upper_bound(base);
    if (it != ranges_.begin() && std::prev(it)->second > base) --it;
    while (it != ranges_.end() && it->first < base + size) it = ranges_.erase(it);
    if (ranges_.size() >= kMaxRanges) ranges_.clear();  // an allocator that never reuses
    ranges_[base] = base + size;
  }
  void forget(uintptr_t base) {
    std::unique_lock<std::shared_mutex> g(mu_);
    ranges_.erase(base);
  }

 private:
  static constexpr size_t kMaxRanges = 4096;
  mutable std::shared_mutex mu_;
  std::map<uintptr_t, uintptr_t> ranges_;  // base -> end
};

// hipDeviceAttributePageableMemoryAccess of `device`, read once per device.
bool pageableAccess(int device) {
  constexpr int kMaxDevices = 64;
  static std::once_flag once[kMaxDevices];
  static bool value[kMaxDevices];
  if (device < 0 || device >= kMaxDevices) return false;
  std::call_once(once[device], [device] {
    int v = 0;
    if (hipDeviceGetAttribute(&v, hipDeviceAttributePageableMemoryAccess, device) != hipSuccess) {
      (void)hipGetLastError();  // the fallback below; a later launch's check must not report it
      v = 0;
    }
    value[device] = v == 1;
  });
  return value[device];
}

// How the runtime sees the memory at p (not a legacy device allocation: sscPointerRange said so).
MemoryKind classify(const void* p) {
  hipPointerAttribute_t a;
  std::memset(&a, 0, sizeof(a));
  if (hipPointerGetAttributes(&a, p) != hipSuccess) {
    // Memory the runtime does not know: plain host memory (ROCm 5 reports it so; CUDA and
    // ROCm >= 6 answer "unregistered"). An answer, not an error: cleared for later checks.
    (void)hipGetLastError();
    return MemoryKind::kHostPageable;
  }
#if defined(SSC_GPU_IS_HIP) && HIP_VERSION_MAJOR < 6  // ROCm 5.2: memoryType, isManaged
  if (a.isManaged) return MemoryKind::kManaged;
  switch (a.memoryType) {
    case hipMemoryTypeDevice:
    case hipMemoryTypeArray: return MemoryKind::kDevice;
    case hipMemoryTypeUnified: return MemoryKind::kManaged;
    case hipMemoryTypeHost:
      return a.devicePointer == p ? MemoryKind::kHostPinned : MemoryKind::kHostPinnedElsewhere;
    default: return MemoryKind::kHostPageable;
  }
#else
  switch (a.type) {
    case hipMemoryTypeDevice:
#if defined(SSC_GPU_IS_HIP)
    case hipMemoryTypeArray:
#endif
      return MemoryKind::kDevice;
#if defined(SSC_GPU_IS_HIP)
    case hipMemoryTypeUnified:
#endif
    case hipMemoryTypeManaged: return MemoryKind::kManaged;
    case hipMemoryTypeHost:
      return a.devicePointer == p ? MemoryKind::kHostPinned : MemoryKind::kHostPinnedElsewhere;
    default:  // unregistered
      return MemoryKind::kHostPageable;
  }
#endif
}

}  // namespace

sscResult_t checkAccessible(int device, const char* fn, const char* what, const void* p,
                            size_t bytes) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  DeviceRanges& known = DeviceRanges::process();
  if (known.contains(a, bytes)) return sscSuccess;  // the usual case: no runtime call
  // Legal while the caller captures a graph: these are queries, not stream work.
  RelaxedCapture relaxed;
  uintptr_t base = 0;
  size_t size = 0;
  uint64_t id = 0;
  if (sscPointerRange(p, &base, &size, &id)) {
    if (a + bytes < a || a + bytes > base + size)
      return fail(sscInvalidArgument,
                  "{}: {} [{}, +{}) runs past the end of its device allocation "
                  "[{:#x}, +{})",
                  fn, what, p, bytes, base, size);
    known.add(base, size);
    return sscSuccess;
  }
  const MemoryKind kind = classify(p);
  // Device memory that is no legacy allocation (VMM, as PyTorch's expandable segments): the
  // runtime gives no range, so remember the buffer itself; the next call on it costs no query.
  if (kind == MemoryKind::kDevice && a + bytes >= a) known.add(a, bytes);
  const bool pageable = pageableAccess(device);
  if (accessibleFor(kind, pageable)) return sscSuccess;
#if defined(SSC_GPU_IS_HIP)
  const char* runtime = "hip";
#else
  const char* runtime = "cuda";
#endif
  return fail(sscInvalidArgument, "{}: {} {} is {}", fn, what, p,
              whyInaccessible(kind, pageable, runtime));
}

void forgetDeviceRange(const void* base) {
  DeviceRanges::process().forget(reinterpret_cast<uintptr_t>(base));
}

}  // namespace ssc::gpu
