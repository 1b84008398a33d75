// SPDX-License-Identifier: MIT
#include "transports/usr/ipc_segment.h"

#include <unistd.h>

#include <cstring>
#include <string>

#include "transports/peer_view.h"
#include "src/core/errors.h"
#include "src/platform/gpu_check.h"
#include "transports/xgmi/peer_link.h"

namespace ssc::gpu {

namespace {

// What each rank publishes: its host (IPC needs one host), its GPU, and its segment's handle.
struct PeerInfo {
  char host[64];
  char busId[32];
  hipIpcMemHandle_t handle;
  int32_t ok;
};

// Every rank learns whether every rank succeeded so far; one failure fails all.
sscResult_t agreeAll(PeerView* comm, bool mineOk, const char* what) {
  std::vector<int32_t> ok(comm->nranks, 0);
  ok[comm->rank] = mineOk ? 1 : 0;
  SSC_CHECK(comm->bootstrap->allGather(ok.data(), sizeof(int32_t)));
  for (int r = 0; r < comm->nranks; ++r)
    if (!ok[r])
      return mineOk ? fail(sscRemoteError, "{} failed on rank {} (see that rank's log)", what, r)
                    : sscUnhandledDeviceError;
  return sscSuccess;
}

}  // namespace

IpcSegment::~IpcSegment() {
  for (size_t r = 0; r < maps_.size(); ++r) {
    if (maps_[r] == nullptr) continue;
    if (static_cast<int>(r) == rank_)
      SSC_GPU_RELEASE(hipFree(maps_[r]));
    else
      SSC_GPU_RELEASE(hipIpcCloseMemHandle(maps_[r]));
  }
}

sscResult_t IpcSegment::create(PeerView* comm, size_t bytes, const std::vector<bool>& mapPeer,
                               std::unique_ptr<IpcSegment>* out) {
  std::unique_ptr<IpcSegment> seg(new IpcSegment());
  seg->rank_ = comm->rank;
  seg->bytes_ = bytes;
  seg->maps_.assign(comm->nranks, nullptr);
  int device = 0;
  std::vector<PeerInfo> info(comm->nranks);
  PeerInfo& mine = info[comm->rank];
  std::memset(&mine, 0, sizeof(mine));
  gethostname(mine.host, sizeof(mine.host) - 1);

  hipError_t e = hipGetDevice(&device);
  if (e == hipSuccess) e = hipDeviceGetPCIBusId(mine.busId, sizeof(mine.busId), device);
  void* local = nullptr;
  if (e == hipSuccess) e = hipMalloc(&local, bytes);
  if (e == hipSuccess) seg->maps_[comm->rank] = local;
  if (e == hipSuccess) e = hipMemset(local, 0, bytes);
  if (e == hipSuccess) e = hipDeviceSynchronize();
  if (e == hipSuccess) e = hipIpcGetMemHandle(&mine.handle, local);
  if (e != hipSuccess)
    setError(sscUnhandledDeviceError, fmt::format("allocating/exporting a {} MiB IPC segment "
                                                  "failed: {}",
                                                  bytes >> 20, hipGetErrorString(e)));
  SSC_CHECK(agreeAll(comm, e == hipSuccess, "allocating the GPU connection segment"));
  SSC_CHECK(comm->bootstrap->allGather(info.data(), sizeof(PeerInfo)));

  std::string why;
  for (int r = 0; r < comm->nranks && why.empty(); ++r) {
    if (r == comm->rank || !mapPeer[r]) continue;
    if (std::strncmp(info[r].host, mine.host, sizeof(mine.host)) != 0) {
      why = fmt::format(
          "the topology puts ranks {} and {} on one node, but they run on hosts "
          "'{}' and '{}': IPC maps memory within a host only",
          r, comm->rank, info[r].host, mine.host);
      break;
    }
    if (std::strncmp(info[r].busId, mine.busId, sizeof(mine.busId)) != 0 &&
        checkPeerLink(device, info[r].busId, r) != sscSuccess) {
      why = lastError();
      break;
    }
    void* peer = nullptr;
    e = hipIpcOpenMemHandle(&peer, info[r].handle, hipIpcMemLazyEnablePeerAccess);
    if (e != hipSuccess) {
      why = fmt::format(
          "opening rank {}'s IPC handle failed: {} (on one GPU, ranks must run "
          "under MPS)",
          r, hipGetErrorString(e));
      break;
    }
    seg->maps_[r] = peer;
  }
  if (!why.empty()) setError(sscUnhandledDeviceError, why);
  SSC_CHECK(agreeAll(comm, why.empty(), "mapping peers' GPU memory"));
  *out = std::move(seg);
  return sscSuccess;
}

}  // namespace ssc::gpu
