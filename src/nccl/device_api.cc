// SPDX-License-Identifier: MIT
// The host entry points of NCCL's device-side API (nccl_device/*.h). Frameworks import them
// with the rest of libnccl.so.2 (PyTorch 2.11 does), so they must exist here: a call that fell
// through to the real NCCL with a Starscream communicator would read our handle as NCCL's.
// Starscream has no device-side API: creating a device communicator or its resources fails with
// ncclInvalidUsage; the team queries, which cannot report errors, describe the communicator
// honestly (nothing is load/store accessible through NCCL's layout, so the LSA team is the rank
// itself); ncclLLA2ACalcSlots is arithmetic.
#include "src/nccl/shim.h"

#if SSC_NCCL_HAS_DEVICE_API
#include <nccl_device/core.h>
// NCCL builds differ in which device-API headers they ship; the probe (NcclFeatures.cmake) only
// enables the functions whose declarations it found, so absent headers are simply skipped.
#if __has_include(<nccl_device/gin_barrier.h>)
#include <nccl_device/gin_barrier.h>
#endif
#if __has_include(<nccl_device/ll_a2a.h>)
#include <nccl_device/ll_a2a.h>
#endif
#if __has_include(<nccl_device/lsa_barrier.h>)
#include <nccl_device/lsa_barrier.h>
#endif

#include "src/nccl/comm.h"
#include "src/nccl/errors.h"
#include "src/nccl/fallback.h"

using namespace ssc::nccl;

namespace {

ncclResult_t unsupported(const char* fn) {
  return fail(ncclInvalidUsage,
              "{}: NCCL's device-side API (nccl_device.h) is not supported by "
              "Starscream; its communicators serve host-side calls only",
              fn);
}

// The (world rank, world size) of a live communicator, or false with the last error set.
bool identity(const char* fn, ncclComm_t comm, int* rank, int* nranks) {
  std::shared_ptr<ncclComm> c;
  if (acquire(fn, comm, Need::kReadyOrRevoked, &c) != ncclSuccess) return false;
  *rank = c->rank;
  *nranks = c->nranks;
  return true;
}

}  // namespace

// SSC_NCCL_FORWARD for the calls that do not return ncclResult_t: in vendor mode, returns the
// vendor's answer, or `missing` (with the last error set) when the vendor lacks the call. The
// pointer type is spelled out: the team calls have C++ overloads for device code.
using TeamOfComm = ncclTeam_t (*)(ncclComm_t);
using RankInTeam = int (*)(ncclComm_t, ncclTeam_t, int);
using SlotCount = int (*)(int, int);
#define SSC_NCCL_FORWARD_PLAIN(name, type, missing, ...)                          \
  do {                                                                            \
    if (vendorMode()) {                                                           \
      static const auto vendor_fn_ = reinterpret_cast<type>(vendorSymbol(#name)); \
      if (vendor_fn_ == nullptr) {                                                \
        (void)vendorMissing(#name);                                               \
        return missing;                                                           \
      }                                                                           \
      return vendor_fn_(__VA_ARGS__);                                             \
    }                                                                             \
  } while (0)

#if SSC_NCCL_HAS_ncclDevCommCreate
NCCL_SHIM_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm,
              ncclDevCommRequirements_t const* reqs, ncclDevComm_t* outDevComm);
ncclResult_t ncclDevCommCreate(ncclComm_t comm, ncclDevCommRequirements_t const* reqs,
                               ncclDevComm_t* outDevComm) {
  return guarded("ncclDevCommCreate", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclDevCommCreate, comm, reqs, outDevComm);
    std::shared_ptr<ncclComm> c;
    NCCL_SHIM_CHECK(acquire("ncclDevCommCreate", comm, Need::kLive, &c));
    return unsupported("ncclDevCommCreate");
  });
}
#endif

#if SSC_NCCL_HAS_ncclDevCommDestroy
NCCL_SHIM_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, ncclDevComm_t const* devComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, ncclDevComm_t const* devComm) {
  return guarded("ncclDevCommDestroy", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclDevCommDestroy, comm, devComm);
    std::shared_ptr<ncclComm> c;
    NCCL_SHIM_CHECK(acquire("ncclDevCommDestroy", comm, Need::kLive, &c));
    return unsupported("ncclDevCommDestroy");
  });
}
#endif

#if SSC_NCCL_HAS_ncclTeamWorld
NCCL_SHIM_API(ncclTeam_t, ncclTeamWorld, ncclComm_t comm);
ncclTeam_t ncclTeamWorld(ncclComm_t comm) {
  try {
    SSC_NCCL_FORWARD_PLAIN(ncclTeamWorld, TeamOfComm, (ncclTeam_t{0, 0, 1}), comm);
    int rank = 0, nranks = 0;
    if (!identity("ncclTeamWorld", comm, &rank, &nranks)) return ncclTeam_t{0, 0, 1};
    return ncclTeam_t{nranks, rank, 1};
  } catch (...) {
    return ncclTeam_t{0, 0, 1};
  }
}
#endif

#if SSC_NCCL_HAS_ncclTeamLsa
NCCL_SHIM_API(ncclTeam_t, ncclTeamLsa, ncclComm_t comm);
ncclTeam_t ncclTeamLsa(ncclComm_t comm) {
  try {
    SSC_NCCL_FORWARD_PLAIN(ncclTeamLsa, TeamOfComm, (ncclTeam_t{0, 0, 1}), comm);
    int rank = 0, nranks = 0;
    if (!identity("ncclTeamLsa", comm, &rank, &nranks)) return ncclTeam_t{0, 0, 1};
    return ncclTeam_t{1, 0, 1};
  } catch (...) {
    return ncclTeam_t{0, 0, 1};
  }
}
#endif

#if SSC_NCCL_HAS_ncclTeamRail
// The world divided by the LSA team (of one): every rank, stride 1.
NCCL_SHIM_API(ncclTeam_t, ncclTeamRail, ncclComm_t comm);
ncclTeam_t ncclTeamRail(ncclComm_t comm) {
  try {
    SSC_NCCL_FORWARD_PLAIN(ncclTeamRail, TeamOfComm, (ncclTeam_t{0, 0, 1}), comm);
    int rank = 0, nranks = 0;
    if (!identity("ncclTeamRail", comm, &rank, &nranks)) return ncclTeam_t{0, 0, 1};
    return ncclTeam_t{nranks, rank, 1};
  } catch (...) {
    return ncclTeam_t{0, 0, 1};
  }
}
#endif

#if SSC_NCCL_HAS_ncclTeamRankToWorld
NCCL_SHIM_API(int, ncclTeamRankToWorld, ncclComm_t comm, ncclTeam_t team, int rank);
int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank) {
  try {
    SSC_NCCL_FORWARD_PLAIN(ncclTeamRankToWorld, RankInTeam, -1, comm, team, rank);
    int me = 0, nranks = 0;
    if (!identity("ncclTeamRankToWorld", comm, &me, &nranks)) return -1;
    return me + (rank - team.rank) * team.stride;
  } catch (...) {
    return -1;
  }
}
#endif

#if SSC_NCCL_HAS_ncclTeamRankToLsa
NCCL_SHIM_API(int, ncclTeamRankToLsa, ncclComm_t comm, ncclTeam_t team, int rank);
int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank) {
  try {
    SSC_NCCL_FORWARD_PLAIN(ncclTeamRankToLsa, RankInTeam, -1, comm, team, rank);
    int me = 0, nranks = 0;
    if (!identity("ncclTeamRankToLsa", comm, &me, &nranks)) return -1;
    return 0 + (rank - team.rank) * team.stride;  // this rank is LSA rank 0 of its team of one
  } catch (...) {
    return -1;
  }
}
#endif

#if SSC_NCCL_HAS_ncclLsaBarrierCreateRequirement
NCCL_SHIM_API(ncclResult_t, ncclLsaBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
              ncclLsaBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                             ncclLsaBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq) {
  return guarded("ncclLsaBarrierCreateRequirement", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclLsaBarrierCreateRequirement, team, nBarriers, outHandle, outReq);
    return unsupported("ncclLsaBarrierCreateRequirement");
  });
}
#endif

#if SSC_NCCL_HAS_ncclGinBarrierCreateRequirement
NCCL_SHIM_API(ncclResult_t, ncclGinBarrierCreateRequirement, ncclComm_t comm, ncclTeam_t team,
              int nBarriers, ncclGinBarrierHandle_t* outHandle,
              ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                             ncclGinBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq) {
  return guarded("ncclGinBarrierCreateRequirement", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclGinBarrierCreateRequirement, comm, team, nBarriers, outHandle, outReq);
    return unsupported("ncclGinBarrierCreateRequirement");
  });
}
#endif

#if SSC_NCCL_HAS_ncclLLA2ACalcSlots
// Slots of 8 bytes each element needs, as NCCL defines them.
NCCL_SHIM_API(int, ncclLLA2ACalcSlots, int maxElts, int maxEltSize);
int ncclLLA2ACalcSlots(int maxElts, int maxEltSize) {
  SSC_NCCL_FORWARD_PLAIN(ncclLLA2ACalcSlots, SlotCount, 0, maxElts, maxEltSize);
  return maxElts * ((maxEltSize + 7) / 8);
}
#endif

#if SSC_NCCL_HAS_ncclLLA2ACreateRequirement
NCCL_SHIM_API(ncclResult_t, ncclLLA2ACreateRequirement, int nBlocks, int nSlots,
              ncclLLA2AHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                        ncclDevResourceRequirements_t* outReq) {
  return guarded("ncclLLA2ACreateRequirement", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclLLA2ACreateRequirement, nBlocks, nSlots, outHandle, outReq);
    return unsupported("ncclLLA2ACreateRequirement");
  });
}
#endif

#endif  // SSC_NCCL_HAS_DEVICE_API
