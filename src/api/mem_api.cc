// SPDX-License-Identifier: MIT
// Memory, registration, stream and reduction-op entry points.
#include <cstdint>
#include <iterator>
#include <vector>

#include "src/api/api.h"
#include "transports/usr/peer_cache.h"

using namespace ssc;

namespace {

// Before a registration maps the peers' buffers: every rank's allocation behind its buffer, and
// each rank's peer cache drops what it still maps of an earlier allocation of that owner in the
// same range. An application that frees a buffer used in plain-buffer calls and allocates the
// one it registers at the same address (the attention benchmark's caches, one after the other)
// otherwise leaves a stale mapping that makes the runtime refuse the new one ("resource already
// mapped", H200, CUDA 13). One more exchange of a few bytes per registration.
sscResult_t dropStalePeerMappings(sscComm* comm, void* buff, size_t size) {
  PeerMemoryRuntime* runtime = comm->backend->peerMemory(comm);
  if (comm->peerCache == nullptr || runtime == nullptr) return sscSuccess;
  struct Range {
    uint64_t base, bytes, id, known;
  };
  std::vector<Range> all(static_cast<size_t>(comm->nranks));
  PeerAllocation mine{};
  std::string why;
  if (runtime->query(buff, size, &mine, &why))
    all[static_cast<size_t>(comm->rank)] = Range{mine.base, mine.bytes, mine.id, 1};
  SSC_CHECK(comm->bootstrap->allGather(all.data(), sizeof(Range)));
  for (int q = 0; q < comm->nranks; ++q) {
    const Range& r = all[static_cast<size_t>(q)];
    if (r.known != 0)
      SSC_CHECK(comm->peerCache->dropOverlapping(q, PeerAllocation{r.base, r.bytes, r.id}));
  }
  return sscSuccess;
}

}  // namespace

SSC_API sscResult_t sscMemAlloc(void** ptr, size_t size) {
  return guarded("sscMemAlloc", [&]() -> sscResult_t {
    if (ptr == nullptr) return fail(sscInvalidArgument, "sscMemAlloc: ptr is NULL");
    *ptr = nullptr;
    if (size == 0) return sscSuccess;
    return processBackend()->memAlloc(ptr, size);
  });
}

SSC_API sscResult_t sscMemFree(void* ptr) {
  return guarded("sscMemFree", [&]() -> sscResult_t {
    if (ptr == nullptr) return sscSuccess;
    return processBackend()->memFree(ptr);
  });
}

SSC_API sscResult_t sscCommRegister(sscComm_t comm, void* buff, size_t size, void** handle) {
  return guarded("sscCommRegister", [&]() -> sscResult_t {
    CommUse use(comm);  // collective and blocking: an abort from another thread waits for it
    SSC_CHECK(checkComm("sscCommRegister", comm));
    if (handle == nullptr) return fail(sscInvalidArgument, "sscCommRegister: handle is NULL");
    if (buff == nullptr || size == 0)
      return fail(sscInvalidArgument, "sscCommRegister: buffer {} of {} bytes is empty", buff,
                  size);
    // No buffer is larger than half the address space, nor wraps around its end; the range
    // arithmetic below (overlaps, covering registrations) relies on it.
    if (size > static_cast<size_t>(PTRDIFF_MAX) ||
        reinterpret_cast<uintptr_t>(buff) > UINTPTR_MAX - size)
      return fail(sscInvalidArgument,
                  "sscCommRegister: [{}, +{}) is not a buffer: the range {} "
                  "the address space",
                  buff, size,
                  size > static_cast<size_t>(PTRDIFF_MAX) ? "is larger than half of"
                                                          : "wraps around the end of");
    if (comm->registrations.overlaps(buff, size))
      return fail(sscInvalidUsage,
                  "sscCommRegister: [{}, +{}) overlaps a buffer already "
                  "registered on this communicator",
                  buff, size);
    // Collective: every rank maps every other rank's buffer (when the backend can share it).
    // Memory on other nodes cannot be mapped, so a communicator that spans nodes only records
    // the buffer (the topology is the same on every rank, so all take this branch or none).
    std::vector<void*> peerBases;
    if (comm->topo.nnodes == 1) {
      if (sscResult_t r = dropStalePeerMappings(comm, buff, size); r != sscSuccess)
        return setError(r, commRingFailureText(comm, r, lastError()));
      if (sscResult_t r = comm->backend->registerBuffer(comm, buff, size, &peerBases);
          r != sscSuccess)
        return setError(r, commRingFailureText(comm, r, lastError()));
    }
    comm->registrations.add(buff, size, std::move(peerBases));
    *handle = buff;
    return sscSuccess;
  });
}

SSC_API sscResult_t sscCommDeregister(sscComm_t comm, void* handle) {
  return guarded("sscCommDeregister", [&]() -> sscResult_t {
    CommUse use(comm);
    SSC_CHECK(checkComm("sscCommDeregister", comm, true));
    Registration reg;
    if (!comm->registrations.take(handle, &reg))
      return fail(sscInvalidArgument,
                  "sscCommDeregister: {} is not a registration of this communicator", handle);
    // Work already queued may still use the mappings.
    commWaitIdle(comm);
    return comm->backend->deregisterBuffer(comm, handle, reg.peerBases);
  });
}

SSC_API sscResult_t sscStreamCreate(sscStream_t* stream) {
  return guarded("sscStreamCreate", [&]() -> sscResult_t {
    if (stream == nullptr) return fail(sscInvalidArgument, "sscStreamCreate: stream is NULL");
    return processBackend()->streamCreate(stream);
  });
}

SSC_API sscResult_t sscStreamSynchronize(sscStream_t stream) {
  return guarded("sscStreamSynchronize",
                 [&] { return processBackend()->streamSynchronize(stream); });
}

SSC_API sscResult_t sscStreamDestroy(sscStream_t stream) {
  return guarded("sscStreamDestroy", [&]() -> sscResult_t {
    if (stream == nullptr) return fail(sscInvalidArgument, "sscStreamDestroy: stream is NULL");
    return processBackend()->streamDestroy(stream);
  });
}

SSC_API sscResult_t sscRedOpCreatePreMulSum(sscRedOp_t* op, void* scalar, sscDataType_t datatype,
                                            sscScalarResidence_t residence, sscComm_t comm) {
  return guarded("sscRedOpCreatePreMulSum", [&]() -> sscResult_t {
    const char* fn = "sscRedOpCreatePreMulSum";
    CommUse use(comm);
    SSC_CHECK(checkComm(fn, comm));
    SSC_CHECK(checkDtype(fn, datatype));
    if (op == nullptr) return fail(sscInvalidArgument, "{}: op is NULL", fn);
    if (scalar == nullptr) return fail(sscInvalidArgument, "{}: scalar is NULL", fn);
    if (residence != sscScalarDevice && residence != sscScalarHostImmediate)
      return fail(sscInvalidArgument, "{}: unknown scalar residence {}", fn,
                  static_cast<int>(residence));
    PreMulSumOp entry{datatype, residence == sscScalarDevice, {}, scalar};
    if (!entry.onDevice) entry.hostValue = scalarFromElement(datatype, scalar);
    int id = 0;
    if (!comm->redOps.create(entry, &id))
      return fail(sscInvalidUsage, "{}: too many reduction ops alive on this communicator", fn);
    *op = static_cast<sscRedOp_t>(id);
    return sscSuccess;
  });
}

SSC_API sscResult_t sscRedOpDestroy(sscRedOp_t op, sscComm_t comm) {
  return guarded("sscRedOpDestroy", [&]() -> sscResult_t {
    CommUse use(comm);
    SSC_CHECK(checkComm("sscRedOpDestroy", comm, true));
    if (static_cast<int>(op) < sscNumOps)
      return fail(sscInvalidArgument, "sscRedOpDestroy: op {} is a built-in op",
                  static_cast<int>(op));
    if (!comm->redOps.destroy(static_cast<int>(op)))
      return fail(sscInvalidArgument, "sscRedOpDestroy: op {} was not created on this communicator",
                  static_cast<int>(op));
    return sscSuccess;
  });
}
