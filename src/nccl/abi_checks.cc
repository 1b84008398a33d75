// SPDX-License-Identifier: MIT
// Compile-time proof that the platform's nccl.h / rccl.h and starscream.h agree on every value
// the shim passes through unconverted: data types, reduction ops (including where created ops
// start), scalar residences, result codes, the unique id and the split/config sentinels. The
// shim casts ncclDataType_t to sscDataType_t (and so on) relying on these; if a vendor header
// ever renumbers one, the build stops here instead of reducing the wrong type.
#include <type_traits>

#include "src/nccl/shim.h"

namespace {

template <typename A, typename B>
constexpr bool same(A a, B b) {
  return static_cast<long long>(a) == static_cast<long long>(b);
}

static_assert(sizeof(ncclUniqueId) == sizeof(sscUniqueId), "unique id sizes differ");
static_assert(NCCL_UNIQUE_ID_BYTES == SSC_UNIQUE_ID_BYTES, "unique id sizes differ");
static_assert(std::is_trivially_copyable_v<ncclUniqueId>);

static_assert(same(ncclInt8, sscInt8) && same(ncclUint8, sscUint8) && same(ncclInt32, sscInt32) &&
                  same(ncclUint32, sscUint32) && same(ncclInt64, sscInt64) &&
                  same(ncclUint64, sscUint64) && same(ncclFloat16, sscFloat16) &&
                  same(ncclFloat32, sscFloat32) && same(ncclFloat64, sscFloat64),
              "ncclDataType_t values differ from sscDataType_t");
#if SSC_NCCL_HAS_ncclBfloat16
static_assert(same(ncclBfloat16, sscBfloat16), "ncclBfloat16 differs from sscBfloat16");
#endif
#if SSC_NCCL_HAS_ncclFloat8e4m3 && SSC_NCCL_HAS_ncclFloat8e5m2
static_assert(same(ncclFloat8e4m3, sscFloat8e4m3) && same(ncclFloat8e5m2, sscFloat8e5m2),
              "fp8 datatype values differ");
#endif
static_assert(sizeof(ncclDataType_t) == sizeof(sscDataType_t));

static_assert(same(ncclSum, sscSum) && same(ncclProd, sscProd) && same(ncclMax, sscMax) &&
                  same(ncclMin, sscMin),
              "ncclRedOp_t values differ from sscRedOp_t");
#if SSC_NCCL_HAS_ncclAvg
// Ops created by ncclRedOpCreatePreMulSum are numbered from ncclNumOps in NCCL and from sscNumOps
// in Starscream; the shim hands Starscream's numbers back unchanged.
static_assert(same(ncclAvg, sscAvg) && same(ncclNumOps, sscNumOps) &&
                  same(ncclMaxRedOp, sscMaxRedOp),
              "ncclRedOp_t values differ from sscRedOp_t");
#endif
static_assert(sizeof(ncclRedOp_t) == sizeof(sscRedOp_t));

#if SSC_NCCL_HAS_ncclScalarResidence_t
static_assert(same(ncclScalarDevice, sscScalarDevice) &&
              same(ncclScalarHostImmediate, sscScalarHostImmediate));
#endif

static_assert(same(ncclSuccess, sscSuccess) &&
                  same(ncclUnhandledCudaError, sscUnhandledDeviceError) &&
                  same(ncclSystemError, sscSystemError) &&
                  same(ncclInternalError, sscInternalError) &&
                  same(ncclInvalidArgument, sscInvalidArgument) &&
                  same(ncclInvalidUsage, sscInvalidUsage),
              "ncclResult_t values differ");
#if SSC_NCCL_HAS_ncclRemoteError
static_assert(same(ncclRemoteError, sscRemoteError));
#endif
#if SSC_NCCL_HAS_ncclInProgress
static_assert(same(ncclInProgress, sscInProgress));
#endif

#if SSC_NCCL_HAS_NCCL_SPLIT_NOCOLOR
static_assert(NCCL_SPLIT_NOCOLOR == SSC_SPLIT_NOCOLOR);
#endif
#if SSC_NCCL_HAS_NCCL_CONFIG_UNDEF_INT
static_assert(NCCL_CONFIG_UNDEF_INT == SSC_CONFIG_UNDEF_INT);
#endif

}  // namespace
