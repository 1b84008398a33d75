// SPDX-License-Identifier: MIT
// Collectives and point-to-point calls. The values of ncclDataType_t and ncclRedOp_t are
// Starscream's (abi_checks.cc), so they pass through as they are; gather, scatter and RCCL's
// all-to-all-v are grouped sends and receives, as NCCL builds them.
#include <cstdint>

#include "src/nccl/comm.h"
#include "src/nccl/errors.h"
#include "src/nccl/fallback.h"
#include "src/nccl/group_api.h"

using namespace ssc::nccl;

namespace {

// What an issued call sees: the ready communicator, the stream to use, the element size.
struct Call {
  const ncclComm& comm;
  sscStream_t stream;
  size_t elemBytes;
  sscDataType_t type;
};

ncclResult_t viaSsc(const char* fn, const Call& call, sscResult_t r) {
  return r == sscSuccess ? ncclSuccess : fromSsc(fn, r, call.comm.ssc);
}

// Validates the communicator and datatype, issues the call, then completes it as the stream
// semantics require. A failure inside a group also fails the group, as in NCCL.
template <typename Issue>
ncclResult_t runCall(const char* fn, ncclComm_t handle, ncclDataType_t type, VendorStream stream,
                     Issue&& issue) {
  std::shared_ptr<ncclComm> comm;
  size_t elemBytes = 0;
  ncclResult_t r = acquire(fn, handle, Need::kReady, &comm);
  sscStream_t sscStream = nullptr;
  if (r == ncclSuccess) r = typeSize(fn, type, &elemBytes);
  if (r == ncclSuccess) r = streamFor(fn, *comm, stream, &sscStream);
  if (r == ncclSuccess) {
    r = issue(Call{*comm, sscStream, elemBytes, static_cast<sscDataType_t>(type)});
    if (r == ncclSuccess) r = completeCall(fn, comm);
  }
  if (r != ncclSuccess) groupFail(r);
  return r;
}

ncclResult_t checkRoot(const char* fn, int root, int nranks) {
  if (root < 0 || root >= nranks)
    return fail(ncclInvalidArgument, "{}: root {} is out of range [0, {})", fn, root, nranks);
  return ncclSuccess;
}

// count elements per rank, nranks blocks: the byte size must fit.
ncclResult_t checkBlocks(const char* fn, size_t count, const Call& call) {
  const size_t limit = static_cast<size_t>(INT64_MAX) / call.elemBytes;
  if (count > limit / static_cast<size_t>(call.comm.nranks))
    return fail(ncclInvalidArgument, "{}: count {} x {} ranks overflows", fn, count,
                call.comm.nranks);
  return ncclSuccess;
}

// Sends and receives as one Starscream group (nested in the caller's, if open). `post` posts
// them through the two callbacks; the group is closed whatever happens, so the thread's group
// depth stays balanced.
template <typename Post>
sscResult_t grouped(Post&& post) {
  sscResult_t r = sscGroupStart();
  if (r != sscSuccess) return r;
  auto step = [&](sscResult_t x) {
    if (r == sscSuccess) r = x;
  };
  post(step);
  sscResult_t end = sscGroupEnd();
  return r != sscSuccess ? r : end;
}

// Gather (toRoot) and scatter, mirror images: root's buffer holds nranks blocks of count
// elements, block r being rank r's; every other rank sends (gather) or receives (scatter) one.
// Root's own block is a send to itself paired with a receive from itself (a local copy), unless
// in place (the other buffer is that block).
ncclResult_t rootBlocks(const char* fn, const Call& c, bool toRoot, const void* sendbuff,
                        void* recvbuff, size_t count, int root) {
  NCCL_SHIM_CHECK(checkRoot(fn, root, c.comm.nranks));
  NCCL_SHIM_CHECK(checkBlocks(fn, count, c));
  if (count == 0) return ncclSuccess;
  const size_t block = count * c.elemBytes;
  char* blocks = static_cast<char*>(toRoot ? recvbuff : const_cast<void*>(sendbuff));
  if (c.comm.rank == root && blocks == nullptr)
    return fail(ncclInvalidArgument, "{}: {} is NULL on the root", fn,
                toRoot ? "recvbuff" : "sendbuff");
  return viaSsc(fn, c, grouped([&](auto step) {
                  if (c.comm.rank != root) {
                    step(toRoot ? sscSend(sendbuff, count, c.type, root, c.comm.ssc, c.stream)
                                : sscRecv(recvbuff, count, c.type, root, c.comm.ssc, c.stream));
                    return;
                  }
                  for (int peer = 0; peer < c.comm.nranks; ++peer) {
                    char* slot = blocks + static_cast<size_t>(peer) * block;
                    const void* from = toRoot ? sendbuff : slot;
                    void* to = toRoot ? slot : recvbuff;
                    if (peer != root) {
                      step(toRoot ? sscRecv(slot, count, c.type, peer, c.comm.ssc, c.stream)
                                  : sscSend(slot, count, c.type, peer, c.comm.ssc, c.stream));
                    } else if (from != to) {
                      step(sscSend(from, count, c.type, root, c.comm.ssc, c.stream));
                      step(sscRecv(to, count, c.type, root, c.comm.ssc, c.stream));
                    }
                  }
                }));
}

}  // namespace

NCCL_SHIM_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, VendorStream stream);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           VendorStream stream) {
  return guarded("ncclAllReduce", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclAllReduce, sendbuff, recvbuff, count, datatype, op, comm, stream);
    return runCall("ncclAllReduce", comm, datatype, stream, [&](const Call& c) {
      return viaSsc("ncclAllReduce", c,
                    sscAllReduce(sendbuff, recvbuff, count, c.type, static_cast<sscRedOp_t>(op),
                                 c.comm.ssc, c.stream));
    });
  });
}

NCCL_SHIM_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
              VendorStream stream);
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, VendorStream stream) {
  return guarded("ncclReduce", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
    return runCall("ncclReduce", comm, datatype, stream, [&](const Call& c) {
      return viaSsc("ncclReduce", c,
                    sscReduce(sendbuff, recvbuff, count, c.type, static_cast<sscRedOp_t>(op), root,
                              c.comm.ssc, c.stream));
    });
  });
}

NCCL_SHIM_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, VendorStream stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           VendorStream stream) {
  return guarded("ncclBroadcast", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclBroadcast, sendbuff, recvbuff, count, datatype, root, comm, stream);
    return runCall("ncclBroadcast", comm, datatype, stream, [&](const Call& c) {
      return viaSsc("ncclBroadcast", c,
                    sscBroadcast(sendbuff, recvbuff, count, c.type, root, c.comm.ssc, c.stream));
    });
  });
}

// The deprecated in-place broadcast.
NCCL_SHIM_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
              ncclComm_t comm, VendorStream stream);
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       VendorStream stream) {
  return guarded("ncclBcast", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclBcast, buff, count, datatype, root, comm, stream);
    return runCall("ncclBcast", comm, datatype, stream, [&](const Call& c) {
      return viaSsc("ncclBcast", c,
                    sscBroadcast(buff, buff, count, c.type, root, c.comm.ssc, c.stream));
    });
  });
}

NCCL_SHIM_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
              ncclDataType_t datatype, ncclComm_t comm, VendorStream stream);
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, VendorStream stream) {
  return guarded("ncclAllGather", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclAllGather, sendbuff, recvbuff, sendcount, datatype, comm, stream);
    return runCall("ncclAllGather", comm, datatype, stream, [&](const Call& c) {
      return viaSsc("ncclAllGather", c,
                    sscAllGather(sendbuff, recvbuff, sendcount, c.type, c.comm.ssc, c.stream));
    });
  });
}

NCCL_SHIM_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff,
              size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
              VendorStream stream);
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               VendorStream stream) {
  return guarded("ncclReduceScatter", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
    return runCall("ncclReduceScatter", comm, datatype, stream, [&](const Call& c) {
      return viaSsc("ncclReduceScatter", c,
                    sscReduceScatter(sendbuff, recvbuff, recvcount, c.type,
                                     static_cast<sscRedOp_t>(op), c.comm.ssc, c.stream));
    });
  });
}

#if SSC_NCCL_HAS_ncclAlltoAll
NCCL_SHIM_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclComm_t comm, VendorStream stream);
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, VendorStream stream) {
  return guarded("ncclAlltoAll", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclAlltoAll, sendbuff, recvbuff, count, datatype, comm, stream);
    return runCall("ncclAlltoAll", comm, datatype, stream, [&](const Call& c) {
      return viaSsc("ncclAlltoAll", c,
                    sscAllToAll(sendbuff, recvbuff, count, c.type, c.comm.ssc, c.stream));
    });
  });
}
#endif

#if SSC_NCCL_HAS_ncclAllToAll
// RCCL's spelling of the same collective.
NCCL_SHIM_API(ncclResult_t, ncclAllToAll, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclComm_t comm, VendorStream stream);
ncclResult_t ncclAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, VendorStream stream) {
  return guarded("ncclAllToAll", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclAllToAll, sendbuff, recvbuff, count, datatype, comm, stream);
    return runCall("ncclAllToAll", comm, datatype, stream, [&](const Call& c) {
      return viaSsc("ncclAllToAll", c,
                    sscAllToAll(sendbuff, recvbuff, count, c.type, c.comm.ssc, c.stream));
    });
  });
}
#endif

#if SSC_NCCL_HAS_ncclAllToAllv
// RCCL's all-to-all with per-peer counts and displacements (in elements).
NCCL_SHIM_API(ncclResult_t, ncclAllToAllv, const void* sendbuff, const size_t sendcounts[],
              const size_t sdispls[], void* recvbuff, const size_t recvcounts[],
              const size_t rdispls[], ncclDataType_t datatype, ncclComm_t comm,
              VendorStream stream);
ncclResult_t ncclAllToAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                           void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                           ncclDataType_t datatype, ncclComm_t comm, VendorStream stream) {
  return guarded("ncclAllToAllv", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclAllToAllv, sendbuff, sendcounts, sdispls, recvbuff, recvcounts, rdispls,
                     datatype, comm, stream);
    const char* fn = "ncclAllToAllv";
    return runCall(fn, comm, datatype, stream, [&](const Call& c) -> ncclResult_t {
      if (sendcounts == nullptr || sdispls == nullptr || recvcounts == nullptr ||
          rdispls == nullptr)
        return fail(ncclInvalidArgument, "{}: the count and displacement arrays must not be NULL",
                    fn);
      const char* in = static_cast<const char*>(sendbuff);
      char* out = static_cast<char*>(recvbuff);
      return viaSsc(fn, c, grouped([&](auto step) {
                      for (int peer = 0; peer < c.comm.nranks; ++peer) {
                        if (sendcounts[peer] != 0)
                          step(sscSend(in + sdispls[peer] * c.elemBytes, sendcounts[peer], c.type,
                                       peer, c.comm.ssc, c.stream));
                        if (recvcounts[peer] != 0)
                          step(sscRecv(out + rdispls[peer] * c.elemBytes, recvcounts[peer], c.type,
                                       peer, c.comm.ssc, c.stream));
                      }
                    }));
    });
  });
}
#endif

#if SSC_NCCL_HAS_ncclGather
// Every rank sends count elements to root, which stores rank r's at recvbuff + r * count (in
// place when sendbuff == recvbuff + root * count).
NCCL_SHIM_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, VendorStream stream);
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        int root, ncclComm_t comm, VendorStream stream) {
  return guarded("ncclGather", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclGather, sendbuff, recvbuff, count, datatype, root, comm, stream);
    return runCall("ncclGather", comm, datatype, stream, [&](const Call& c) {
      return rootBlocks("ncclGather", c, /*toRoot=*/true, sendbuff, recvbuff, count, root);
    });
  });
}
#endif

#if SSC_NCCL_HAS_ncclScatter
// Root sends sendbuff + r * count to rank r (in place on root when recvbuff == sendbuff + root *
// count).
NCCL_SHIM_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, VendorStream stream);
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, VendorStream stream) {
  return guarded("ncclScatter", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclScatter, sendbuff, recvbuff, count, datatype, root, comm, stream);
    return runCall("ncclScatter", comm, datatype, stream, [&](const Call& c) {
      return rootBlocks("ncclScatter", c, /*toRoot=*/false, sendbuff, recvbuff, count, root);
    });
  });
}
#endif

NCCL_SHIM_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
              int peer, ncclComm_t comm, VendorStream stream);
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, VendorStream stream) {
  return guarded("ncclSend", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclSend, sendbuff, count, datatype, peer, comm, stream);
    return runCall("ncclSend", comm, datatype, stream, [&](const Call& c) {
      return viaSsc("ncclSend", c, sscSend(sendbuff, count, c.type, peer, c.comm.ssc, c.stream));
    });
  });
}

NCCL_SHIM_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype,
              int peer, ncclComm_t comm, VendorStream stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, VendorStream stream) {
  return guarded("ncclRecv", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclRecv, recvbuff, count, datatype, peer, comm, stream);
    return runCall("ncclRecv", comm, datatype, stream, [&](const Call& c) {
      return viaSsc("ncclRecv", c, sscRecv(recvbuff, count, c.type, peer, c.comm.ssc, c.stream));
    });
  });
}
