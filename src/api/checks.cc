// SPDX-License-Identifier: MIT
#include <limits>
#include <thread>

#include "src/api/api.h"

namespace ssc {

sscResult_t checkComm(const char* fn, sscComm* comm, bool allowFailed) {
  if (comm == nullptr) return fail(sscInvalidArgument, "{}: comm is NULL", fn);
  if (!commIsLive(comm))
    return fail(sscInvalidUsage,
                "{}: comm {} is not a live communicator (destroyed, aborted or "
                "never created)",
                fn, static_cast<void*>(comm));
  int state = comm->asyncError.load();
  // The init thread timing the tuner's calibration runs calls before init reports success.
  if (state == sscInProgress && comm->calibrationThread.load() == std::this_thread::get_id())
    state = sscSuccess;
  if (state == sscInProgress)
    return fail(sscInvalidUsage,
                "{}: communicator initialisation is still in progress; poll "
                "sscCommGetAsyncError until it returns sscSuccess",
                fn);
  if (state != sscSuccess && !allowFailed)
    return fail(static_cast<sscResult_t>(state), "{}: communicator has failed earlier: {}", fn,
                comm->failures.message());
  if (!allowFailed && comm->finalized.load())
    return fail(sscInvalidUsage,
                "{}: communicator was finalized (sscCommFinalize): only queries, "
                "deregistration and sscCommDestroy may follow",
                fn);
  if (!allowFailed) {
    if (std::string gone = commPeerGone(comm); !gone.empty())
      return fail(sscRemoteError, "{}: {}; the communicator cannot run calls with it any more", fn,
                  gone);
  }
  return sscSuccess;
}

sscResult_t checkDtype(const char* fn, sscDataType_t type) {
  if (!dtypeValid(type))
    return fail(sscInvalidArgument, "{}: unknown datatype {}", fn, static_cast<int>(type));
  return sscSuccess;
}

sscResult_t resolveOp(const char* fn, sscComm* comm, sscRedOp_t op, sscDataType_t type,
                      ReduceSpec* out) {
  *out = ReduceSpec{};
  out->dtype = type;
  switch (op) {
    case sscSum: out->kind = ReduceKind::kSum; return sscSuccess;
    case sscProd: out->kind = ReduceKind::kProd; return sscSuccess;
    case sscMax: out->kind = ReduceKind::kMax; return sscSuccess;
    case sscMin: out->kind = ReduceKind::kMin; return sscSuccess;
    case sscAvg:
      // As NCCL: floats pre-multiply each input by 1/n (no overflow of the sum), integers divide
      // the exact sum once at the end.
      out->kind = ReduceKind::kSum;
      if (dtypeIsFloat(type)) {
        out->hasPreScale = true;
        out->preScale.f = 1.0 / comm->nranks;
      } else {
        out->postDivisor = static_cast<uint64_t>(comm->nranks);
      }
      return sscSuccess;
    default: break;
  }
  PreMulSumOp made{};
  if (!comm->redOps.find(static_cast<int>(op), &made))
    return fail(sscInvalidArgument,
                "{}: unknown reduction op {} (not a built-in op nor one made "
                "by sscRedOpCreatePreMulSum on this communicator)",
                fn, static_cast<int>(op));
  if (made.dtype != type)
    return fail(sscInvalidArgument, "{}: op {} was created for datatype {} but the call uses {}",
                fn, static_cast<int>(op), dtypeName(made.dtype), dtypeName(type));
  out->kind = ReduceKind::kSum;
  out->hasPreScale = true;
  if (made.onDevice)
    out->preScaleDevice = made.devicePtr;
  else
    out->preScale = made.hostValue;
  return sscSuccess;
}

sscResult_t checkCount(const char* fn, size_t count, size_t elemSize, size_t factor) {
  const size_t limit = static_cast<size_t>(std::numeric_limits<int64_t>::max());
  if (count > limit / elemSize / factor)
    return fail(sscInvalidArgument, "{}: count {} x {} byte(s) x {} overflows", fn, count, elemSize,
                factor);
  return sscSuccess;
}

sscResult_t checkRank(const char* fn, const char* what, int rank, int nranks) {
  if (rank < 0 || rank >= nranks)
    return fail(sscInvalidArgument, "{}: {} {} is out of range [0, {})", fn, what, rank, nranks);
  return sscSuccess;
}

sscResult_t checkPtr(const char* fn, const char* what, const void* p, size_t count) {
  if (p == nullptr && count > 0) return fail(sscInvalidArgument, "{}: {} is NULL", fn, what);
  return sscSuccess;
}

sscResult_t checkAccessible(const char* fn, sscComm* comm, const char* what, const void* p,
                            size_t bytes) {
  if (p == nullptr || bytes == 0) return sscSuccess;
  return comm->backend->checkAccessible(comm, fn, what, p, bytes);
}

}  // namespace ssc
