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
// Symmetric windows promise every rank a load/store view of every peer's buffer at the same
// offset, in NCCL's own layout, for its symmetric kernels and the device API. Starscream maps
// peers' buffers only inside its own plans, so it cannot give that promise: refuse.
NCCL_SHIM_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
              ncclWindow_t* win, int winFlags);
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                    int winFlags) {
  return guarded("ncclCommWindowRegister", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommWindowRegister, comm, buff, size, win, winFlags);
    std::shared_ptr<ncclComm> c;
    NCCL_SHIM_CHECK(acquire("ncclCommWindowRegister", comm, Need::kReady, &c));
    if (win != nullptr) *win = nullptr;
    return fail(ncclInvalidUsage, "ncclCommWindowRegister: symmetric memory windows are not "
                "supported by Starscream (use ncclCommRegister, or plain buffers)");
  });
}

NCCL_SHIM_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return guarded("ncclCommWindowDeregister", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommWindowDeregister, comm, win);
    std::shared_ptr<ncclComm> c;
    NCCL_SHIM_CHECK(acquire("ncclCommWindowDeregister", comm, Need::kLive, &c));
    return fail(ncclInvalidUsage, "ncclCommWindowDeregister: window {} was not registered: "
                "symmetric memory windows are not supported by Starscream",
                static_cast<void*>(win));
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
