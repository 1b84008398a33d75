// SPDX-License-Identifier: MIT
#include "src/device/gpu/gpu_peer_memory.h"

#include <cstring>

#include "src/core/errors.h"
#include "src/device/gpu/gpu_launch_order.h"
#include "src/device/gpu/gpu_registry.h"
#include "src/platform/gpu_runtime.h"

namespace ssc::gpu {

static_assert(sizeof(hipIpcMemHandle_t) <= kPeerHandleBytes,
              "an IPC handle must fit a posted record");

// Every call below may come while the caller captures a graph (a captured call's exchange):
// relaxed capture mode lets this thread export and map memory then, as NCCL does at capture.
bool GpuPeerMemory::query(const void* p, size_t bytes, PeerAllocation* out, std::string* why) {
  DeviceGuard onDevice(device_);
  RelaxedCapture relaxed;
  uintptr_t base = 0;
  size_t size = 0;
  uint64_t id = 0;
  if (!sscPointerRange(p, &base, &size, &id)) {
    *why =
        "not a legacy device allocation (host, managed or VMM memory), or the runtime cannot tell";
    return false;
  }
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (a < base || a + bytes < a || a + bytes > base + size) {
    *why = fmt::format("[{}, +{}) runs past its allocation [{:#x}, +{})", p, bytes, base, size);
    return false;
  }
  *out = PeerAllocation{base, size, id};
  return true;
}

bool GpuPeerMemory::exportHandle(const PeerAllocation& a, uint8_t handle[kPeerHandleBytes],
                                 std::string* why) {
  DeviceGuard onDevice(device_);
  RelaxedCapture relaxed;
  hipIpcMemHandle_t h;
  const hipError_t e = hipIpcGetMemHandle(&h, reinterpret_cast<void*>(a.base));
  if (e != hipSuccess) {
    (void)hipGetLastError();  // told through *why; a later launch's check must not report it
    *why = hipGetErrorString(e);
    return false;
  }
  std::memset(handle, 0, kPeerHandleBytes);
  std::memcpy(handle, &h, sizeof(h));
  return true;
}

bool GpuPeerMemory::open(const uint8_t handle[kPeerHandleBytes], const PeerAllocation& a,
                         void** mapped, std::string* why) {
  (void)a;
  DeviceGuard onDevice(device_);
  RelaxedCapture relaxed;
  // A mapping that cannot be made is not an error of any call (the caller falls back): it must
  // not replace the thread's last error, which may say why an earlier call failed.
  return ImportCache::process().open(
      std::string(reinterpret_cast<const char*>(handle), sizeof(hipIpcMemHandle_t)), mapped, why);
}

void GpuPeerMemory::close(void* mapped, const PeerAllocation& a) {
  (void)a;
  DeviceGuard onDevice(device_);
  RelaxedCapture relaxed;
  ImportCache::process().close(mapped);
}

}  // namespace ssc::gpu
