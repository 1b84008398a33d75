// SPDX-License-Identifier: MIT
// What the GPU runtime says about this process's device, for topology discovery: the UUID (the
// same for every MPS client of one NVIDIA GPU), the PCI bus id (AMD CPX/DPX partitions differ in
// the function number), and the compute units this process may use.
#include "src/device/gpu/gpu_runtime_info.h"

#include <cstdio>
#include <cstring>

#include "src/platform/gpu_runtime.h"

namespace ssc {

bool queryGpuRuntimeInfo(GpuRuntimeInfo* out) {
  int device = 0;
  if (hipGetDevice(&device) != hipSuccess) return false;
  hipDeviceProp_t prop;
  if (hipGetDeviceProperties(&prop, device) != hipSuccess) return false;
  std::memset(out, 0, sizeof(*out));
  // 16 UUID bytes as the usual 8-4-4-4-12 hex text.
  unsigned char u[16] = {};
  (void)sscDeviceUuid(device, u);  // portable: ROCm 5.2's hipDeviceProp_t has no uuid
  std::snprintf(out->uuid, sizeof(out->uuid),
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
                u[15]);
  if (hipDeviceGetPCIBusId(out->pciBusId, sizeof(out->pciBusId), device) != hipSuccess)
    out->pciBusId[0] = '\0';
  // Under MPS the attribute reports the SMs this client may use, not the whole GPU's.
  int units = 0;
  if (hipDeviceGetAttribute(&units, hipDeviceAttributeMultiprocessorCount, device) == hipSuccess)
    out->computeUnits = units;
  // The runtime's name field is longer than ours; a long name is cut, which is all we want.
  const size_t n = strnlen(prop.name, sizeof(prop.name));
  const size_t keep = n < sizeof(out->name) - 1 ? n : sizeof(out->name) - 1;
  std::memcpy(out->name, prop.name, keep);
  out->name[keep] = '\0';
  return true;
}

}  // namespace ssc
