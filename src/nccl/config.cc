// SPDX-License-Identifier: MIT
#include "src/nccl/config.h"

#include <cstddef>
#include <cstring>

#include "src/nccl/errors.h"

namespace ssc::nccl {
namespace {

constexpr int kUndef = SSC_CONFIG_UNDEF_INT;  // == NCCL_CONFIG_UNDEF_INT (abi_checks.cc)

// Reads the field at `offset` if the caller's struct is long enough to hold it. memcpy, not a
// member access: the caller's struct may be shorter than ours and the bytes past its end are not
// ours to read.
template <typename T>
bool readField(const ncclConfig_t* config, size_t offset, T* out) {
  if (offset + sizeof(T) > config->size) return false;
  std::memcpy(out, reinterpret_cast<const char*>(config) + offset, sizeof(T));
  return true;
}
#define SSC_NCCL_READ(field, out) readField(config, offsetof(ncclConfig_t, field), out)

// Fields that are 0/1 switches.
ncclResult_t checkFlag(const char* fn, const char* name, int value) {
  if (value != kUndef && value != 0 && value != 1)
    return fail(ncclInvalidArgument, "{}: config.{} must be 0 or 1 (got {})", fn, name, value);
  return ncclSuccess;
}

// Fields that count something and must be positive when set.
ncclResult_t checkPositive(const char* fn, const char* name, int value) {
  if (value != kUndef && value < 1)
    return fail(ncclInvalidArgument, "{}: config.{} must be at least 1 (got {})", fn, name, value);
  return ncclSuccess;
}

ncclResult_t checkNonNegative(const char* fn, const char* name, int value) {
  if (value != kUndef && value < 0)
    return fail(ncclInvalidArgument, "{}: config.{} must not be negative (got {})", fn, name,
                value);
  return ncclSuccess;
}

}  // namespace

ncclResult_t parseConfig(const char* fn, const ncclConfig_t* config, const ShimConfig* inherit,
                         ShimConfig* out) {
  *out = ShimConfig{};
  if (config == nullptr) {
    if (inherit != nullptr) *out = *inherit;
    return ncclSuccess;
  }
  if (config->magic != kConfigMagic)
    return fail(ncclInvalidArgument,
                "{}: config was not initialised with NCCL_CONFIG_INITIALIZER "
                "(magic 0x{:x}, expected 0x{:x})",
                fn, config->magic, kConfigMagic);
  if (config->size < offsetof(ncclConfig_t, blocking) + sizeof(int))
    return fail(ncclInvalidArgument, "{}: config.size {} is too small to be an ncclConfig_t", fn,
                config->size);

  int blocking = kUndef;
  SSC_NCCL_READ(blocking, &blocking);
  NCCL_SHIM_CHECK(checkFlag(fn, "blocking", blocking));
  out->blocking = blocking != 0;  // NCCL's default is blocking

  // Performance hints: validated as NCCL does, then ignored (see ShimConfig).
  std::string hints;
  auto hint = [&](const char* name, int value) {
    if (value != kUndef) hints += fmt::format(" {}={}", name, value);
  };
#if SSC_NCCL_CONFIG_HAS_cgaClusterSize
  int cga = kUndef;
  SSC_NCCL_READ(cgaClusterSize, &cga);
  NCCL_SHIM_CHECK(checkNonNegative(fn, "cgaClusterSize", cga));
  hint("cgaClusterSize", cga);
#endif
  int minCTAs = kUndef, maxCTAs = kUndef;
#if SSC_NCCL_CONFIG_HAS_minCTAs
  SSC_NCCL_READ(minCTAs, &minCTAs);
  NCCL_SHIM_CHECK(checkPositive(fn, "minCTAs", minCTAs));
  hint("minCTAs", minCTAs);
#endif
#if SSC_NCCL_CONFIG_HAS_maxCTAs
  SSC_NCCL_READ(maxCTAs, &maxCTAs);
  NCCL_SHIM_CHECK(checkPositive(fn, "maxCTAs", maxCTAs));
  hint("maxCTAs", maxCTAs);
#endif
  if (minCTAs != kUndef && maxCTAs != kUndef && minCTAs > maxCTAs)
    return fail(ncclInvalidArgument, "{}: config.minCTAs {} is larger than config.maxCTAs {}", fn,
                minCTAs, maxCTAs);
#if SSC_NCCL_CONFIG_HAS_netName
  const char* netName = nullptr;
  if (SSC_NCCL_READ(netName, &netName) && netName != nullptr) hints += " netName=set";
#endif
#if SSC_NCCL_CONFIG_HAS_splitShare
  int splitShare = kUndef;
  SSC_NCCL_READ(splitShare, &splitShare);
  NCCL_SHIM_CHECK(checkFlag(fn, "splitShare", splitShare));
  out->splitShare = splitShare == 1;
#endif
#if SSC_NCCL_CONFIG_HAS_trafficClass
  int trafficClass = kUndef;
  SSC_NCCL_READ(trafficClass, &trafficClass);
  NCCL_SHIM_CHECK(checkNonNegative(fn, "trafficClass", trafficClass));
  hint("trafficClass", trafficClass);
#endif
#if SSC_NCCL_CONFIG_HAS_commName
  const char* commName = nullptr;
  if (SSC_NCCL_READ(commName, &commName) && commName != nullptr)
    out->commName.assign(commName, strnlen(commName, 256));
#endif
#if SSC_NCCL_CONFIG_HAS_collnetEnable
  int collnet = kUndef;
  SSC_NCCL_READ(collnetEnable, &collnet);
  NCCL_SHIM_CHECK(checkFlag(fn, "collnetEnable", collnet));
  hint("collnetEnable", collnet);
#endif
#if SSC_NCCL_CONFIG_HAS_CTAPolicy
  int policy = kUndef;
  SSC_NCCL_READ(CTAPolicy, &policy);
  // NCCL_CTA_POLICY_DEFAULT (0), _EFFICIENCY (1), _ZERO (2).
  if (policy != kUndef && (policy < 0 || policy > 2))
    return fail(ncclInvalidArgument, "{}: config.CTAPolicy {} is not an NCCL_CTA_POLICY_* value",
                fn, policy);
  hint("CTAPolicy", policy);
#endif
#if SSC_NCCL_CONFIG_HAS_shrinkShare
  int shrinkShare = kUndef;
  SSC_NCCL_READ(shrinkShare, &shrinkShare);
  NCCL_SHIM_CHECK(checkFlag(fn, "shrinkShare", shrinkShare));
  out->shrinkShare = shrinkShare == 1;
#endif
#if SSC_NCCL_CONFIG_HAS_nvlsCTAs
  int nvlsCTAs = kUndef;
  SSC_NCCL_READ(nvlsCTAs, &nvlsCTAs);
  NCCL_SHIM_CHECK(checkPositive(fn, "nvlsCTAs", nvlsCTAs));
  hint("nvlsCTAs", nvlsCTAs);
#endif
#if SSC_NCCL_CONFIG_HAS_nChannelsPerNetPeer
  int perPeer = kUndef;
  SSC_NCCL_READ(nChannelsPerNetPeer, &perPeer);
  NCCL_SHIM_CHECK(checkPositive(fn, "nChannelsPerNetPeer", perPeer));
  hint("nChannelsPerNetPeer", perPeer);
#endif
#if SSC_NCCL_CONFIG_HAS_nvlinkCentricSched
  int nvlinkSched = kUndef;
  SSC_NCCL_READ(nvlinkCentricSched, &nvlinkSched);
  NCCL_SHIM_CHECK(checkFlag(fn, "nvlinkCentricSched", nvlinkSched));
  hint("nvlinkCentricSched", nvlinkSched);
#endif
  if (!hints.empty())
    NCCL_SHIM_LOG(kInfo, "NCCL shim: {}: ignoring performance hints Starscream decides itself:{}",
                  fn, hints);
  return ncclSuccess;
}

#undef SSC_NCCL_READ

}  // namespace ssc::nccl
