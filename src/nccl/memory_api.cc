// SPDX-License-Identifier: MIT
// Memory, buffer registration, symmetric windows and reduction operators.
#include "src/nccl/comm.h"
#include "src/nccl/errors.h"
#include "src/nccl/fallback.h"

using namespace ssc::nccl;

#if SSC_NCCL_HAS_ncclMemAlloc
// Device memory on a GPU backend; host memory on the host backend, where "device" buffers are
// host buffers.
NCCL_SHIM_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size);
ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  return guarded("ncclMemAlloc", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclMemAlloc, ptr, size);
    sscResult_t r = sscMemAlloc(ptr, size);
    return r == sscSuccess ? ncclSuccess : fromSsc("ncclMemAlloc", r, nullptr);
  });
}

NCCL_SHIM_API(ncclResult_t, ncclMemFree, void* ptr);
ncclResult_t ncclMemFree(void* ptr) {
  return guarded("ncclMemFree", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclMemFree, ptr);
    sscResult_t r = sscMemFree(ptr);
    return r == sscSuccess ? ncclSuccess : fromSsc("ncclMemFree", r, nullptr);
  });
}
#endif

#if SSC_NCCL_HAS_ncclCommRegister
// Registration is an optimisation in Starscream as in NCCL: results never depend on it.
NCCL_SHIM_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
              void** handle);
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return guarded("ncclCommRegister", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommRegister, comm, buff, size, handle);
    std::shared_ptr<ncclComm> c;
    NCCL_SHIM_CHECK(acquire("ncclCommRegister", comm, Need::kReady, &c));
    sscResult_t r = sscCommRegister(c->ssc, buff, size, handle);
    return r == sscSuccess ? ncclSuccess : fromSsc("ncclCommRegister", r, c->ssc);
  });
}

NCCL_SHIM_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  return guarded("ncclCommDeregister", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommDeregister, comm, handle);
    std::shared_ptr<ncclComm> c;
    NCCL_SHIM_CHECK(acquire("ncclCommDeregister", comm, Need::kReadyOrRevoked, &c));
    sscResult_t r = sscCommDeregister(c->ssc, handle);
    return r == sscSuccess ? ncclSuccess : fromSsc("ncclCommDeregister", r, c->ssc);
  });
}
#endif

#if SSC_NCCL_HAS_ncclCommWindowRegister
// A window is a symmetric registration: every rank registers its buffer collectively, in the
// same order, and Starscream maps every peer's copy for its zero-copy algorithms, which is what
// NCCL uses windows for in its own collectives (NCCL_WIN_COLL_SYMMETRIC). The window handle is
// the registration's handle. NCCL's device API (load/store through a window inside the user's
// kernels) is not offered through it: its ncclDevComm calls say so on their own.
NCCL_SHIM_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
              ncclWindow_t* win, int winFlags);
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                    int winFlags) {
  return guarded("ncclCommWindowRegister", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommWindowRegister, comm, buff, size, win, winFlags);
    const char* fn = "ncclCommWindowRegister";
    std::shared_ptr<ncclComm> c;
    NCCL_SHIM_CHECK(acquire(fn, comm, Need::kReady, &c));
    if (win == nullptr) return fail(ncclInvalidArgument, "{}: win is NULL", fn);
    *win = nullptr;
    // NCCL_WIN_DEFAULT (0) and NCCL_WIN_COLL_SYMMETRIC are the flags NCCL 2.28 defines.
    if ((winFlags & ~NCCL_WIN_COLL_SYMMETRIC) != 0)
      return fail(ncclInvalidArgument,
                  "{}: unknown winFlags {:#x} (NCCL_WIN_DEFAULT or "
                  "NCCL_WIN_COLL_SYMMETRIC)",
                  fn, winFlags);
    void* handle = nullptr;
    sscResult_t r = sscCommRegister(c->ssc, buff, size, &handle);
    if (r != sscSuccess) return fromSsc(fn, r, c->ssc);
    *win = reinterpret_cast<ncclWindow_t>(handle);
    return ncclSuccess;
  });
}

NCCL_SHIM_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return guarded("ncclCommWindowDeregister", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommWindowDeregister, comm, win);
    const char* fn = "ncclCommWindowDeregister";
    std::shared_ptr<ncclComm> c;
    NCCL_SHIM_CHECK(acquire(fn, comm, Need::kReadyOrRevoked, &c));
    sscResult_t r = sscCommDeregister(c->ssc, reinterpret_cast<void*>(win));
    return r == sscSuccess ? ncclSuccess : fromSsc(fn, r, c->ssc);
  });
}
#endif

#if SSC_NCCL_HAS_ncclRedOpCreatePreMulSum
// sum over ranks of scalar * x. A host scalar is read now; a device scalar (on the host
// backend: host memory) is read when each operation runs.
NCCL_SHIM_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar,
              ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  return guarded("ncclRedOpCreatePreMulSum", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclRedOpCreatePreMulSum, op, scalar, datatype, residence, comm);
    const char* fn = "ncclRedOpCreatePreMulSum";
    std::shared_ptr<ncclComm> c;
    NCCL_SHIM_CHECK(acquire(fn, comm, Need::kReady, &c));
    size_t bytes = 0;
    NCCL_SHIM_CHECK(typeSize(fn, datatype, &bytes));
    sscResult_t r = sscRedOpCreatePreMulSum(reinterpret_cast<sscRedOp_t*>(op), scalar,
                                            static_cast<sscDataType_t>(datatype),
                                            static_cast<sscScalarResidence_t>(residence), c->ssc);
    return r == sscSuccess ? ncclSuccess : fromSsc(fn, r, c->ssc);
  });
}

NCCL_SHIM_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return guarded("ncclRedOpDestroy", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclRedOpDestroy, op, comm);
    std::shared_ptr<ncclComm> c;
    NCCL_SHIM_CHECK(acquire("ncclRedOpDestroy", comm, Need::kReadyOrRevoked, &c));
    sscResult_t r = sscRedOpDestroy(static_cast<sscRedOp_t>(op), c->ssc);
    return r == sscSuccess ? ncclSuccess : fromSsc("ncclRedOpDestroy", r, c->ssc);
  });
}
#endif
