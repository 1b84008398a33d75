// SPDX-License-Identifier: MIT
// Collective and point-to-point entry points: validate everything, then submit (launch now, or
// record in the open group).
#include <cstdint>
#include <functional>
#include <string>

#include "src/api/group.h"
#include "src/api/trace_hooks.h"

using namespace ssc;

namespace {

bool overlaps(const void* a, size_t aBytes, const void* b, size_t bBytes) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return aBytes > 0 && bBytes > 0 && x < y + bBytes && y < x + aBytes;
}

// When the buffers that peers touch (symmetricPeerAccess) lie in symmetric registrations, fills
// the peers' views of them so the zero-copy algorithm can run (reduce-scatter and all-gather
// touch one buffer only, so their in-place forms, whose other buffer sits at a rank-dependent
// offset, qualify too). Offsets are assumed equal on every rank; the call hash lets the first
// barrier catch ranks that disagree. Broadcast, reduce and all-to-all agree on their buffers
// through the peer cache instead (plain_buffers.h): a non-root's buffer may be anything there.
void findSymmetric(sscComm* comm, PendingCall* call, size_t inBytes, size_t outBytes) {
  const CollKind kind = call->args.coll;
  if (kind != CollKind::kAllReduce && kind != CollKind::kReduceScatter &&
      kind != CollKind::kAllGather)
    return;
  const PeerAccess touched = symmetricPeerAccess(kind, comm->rank == call->args.root);
  const bool peersReadIn = touched.in, peersWriteOut = touched.out;
  // The peers' views of [p, p + bytes) from the registration holding it, with the
  // registration's index and p's offset in it; false when none holds it. Nothing is allocated
  // for a call on unregistered buffers, most calls.
  std::vector<std::vector<void*>> views;
  int index[kBufScratch] = {};
  size_t offset[kBufScratch] = {};
  const auto map = [&](const void* p, size_t bytes, BufId buf) {
    return comm->registrations.withMapped(
        p, bytes, false, [&](const char* base, const Registration& reg) {
          const size_t off = static_cast<const char*>(p) - base;
          if (views.empty()) views.assign(kBufScratch, std::vector<void*>(comm->nranks, nullptr));
          for (int q = 0; q < comm->nranks; ++q)
            views[buf][q] = static_cast<char*>(reg.peerBases[q]) + off;
          index[buf] = reg.index;
          offset[buf] = off;
        });
  };
  if (peersReadIn && !map(call->sendbuff, inBytes, kBufIn)) return;
  if (peersWriteOut && !map(call->recvbuff, outBytes, kBufOut)) return;
  call->peerBuffers = std::move(views);
  std::string key = fmt::format("{}:{}:{}:{}:{}:{}", static_cast<int>(kind), call->args.count,
                                static_cast<int>(call->reduce.dtype), call->args.root,
                                static_cast<int>(call->reduce.kind), call->reduce.hasPreScale);
  if (peersReadIn) key += fmt::format(":{}@{}", index[kBufIn], offset[kBufIn]);
  if (peersWriteOut) key += fmt::format(":{}@{}", index[kBufOut], offset[kBufOut]);
  uint64_t h = std::hash<std::string>{}(key);
  call->callHash = static_cast<uint32_t>(h ^ (h >> 32));
  call->args.symmetric = true;
}

// Shared tail of every collective: validate the common arguments, fill in the call, submit.
sscResult_t collective(const char* fn, CollKind kind, const void* sendbuff, void* recvbuff,
                       size_t count, sscDataType_t type, sscRedOp_t op, bool reduces, int root,
                       sscComm_t comm, sscStream_t stream) {
  // Checked mode (STARSCREAM_CHECK=1): the call's fingerprint, taken before any argument check
  // so that a rank refusing its own arguments still meets its peers at this call.
  CallFingerprint print;
  bool checked = false, submitted = false;
  sscResult_t r = [&]() -> sscResult_t {
    CommUse use(comm);  // an abort or destroy from another thread waits until this call is out
    SSC_CHECK(checkComm(fn, comm));
    TraceScope trace(comm);
    if (comm->callCheck != nullptr && comm->nranks > 1) {
      checked = true;
      const int opCode = !reduces                           ? -1
                         : static_cast<int>(op) < sscNumOps ? static_cast<int>(op)
                                                            : sscNumOps;
      const bool rooted = kind == CollKind::kBroadcast || kind == CollKind::kReduce;
      print = comm->callCheck->next(kind, count, type, opCode, rooted ? root : -1);
    }
    SSC_CHECK(checkDtype(fn, type));
    const size_t esize = dtypeSize(type);
    const size_t n = static_cast<size_t>(comm->nranks);
    const bool perRankBlocks = kind == CollKind::kReduceScatter || kind == CollKind::kAllGather ||
                               kind == CollKind::kAllToAll;
    SSC_CHECK(checkCount(fn, count, esize, perRankBlocks ? n : 1));
    PendingCall call;
    call.comm = comm;
    call.stream = stream;
    call.args = CollArgs{kind, count, root};
    call.elemBytes = esize;
    call.sendbuff = sendbuff;
    call.recvbuff = recvbuff;
    if (reduces)
      SSC_CHECK(resolveOp(fn, comm, op, type, &call.reduce));
    else
      call.reduce.dtype = type;
    if (kind == CollKind::kBroadcast || kind == CollKind::kReduce)
      SSC_CHECK(checkRank(fn, "root", root, comm->nranks));
    const bool isRoot = comm->rank == root;
    const size_t inBytes = collInputElems(call.args, comm->nranks) * esize;
    const size_t outBytes = collOutputElems(call.args, comm->nranks) * esize;
    // Broadcast reads sendbuff only on the root; reduce writes recvbuff only there.
    if (kind != CollKind::kBroadcast || isRoot)
      SSC_CHECK(checkPtr(fn, "sendbuff", sendbuff, count));
    if (kind != CollKind::kReduce || isRoot) SSC_CHECK(checkPtr(fn, "recvbuff", recvbuff, count));
    const char* in = static_cast<const char*>(sendbuff);
    const char* out = static_cast<const char*>(recvbuff);
    const size_t block = count * esize;
    switch (kind) {
      case CollKind::kReduceScatter:
        if (in != nullptr && out != in + comm->rank * block && overlaps(in, inBytes, out, outBytes))
          return fail(sscInvalidArgument,
                      "{}: recvbuff overlaps sendbuff but is not the in-place "
                      "position sendbuff + rank * recvcount",
                      fn);
        break;
      case CollKind::kAllGather:
        if (in != nullptr && in != out + comm->rank * block && overlaps(in, inBytes, out, outBytes))
          return fail(sscInvalidArgument,
                      "{}: sendbuff overlaps recvbuff but is not the in-place "
                      "position recvbuff + rank * sendcount",
                      fn);
        break;
      case CollKind::kAllToAll:
        // In place means the very same buffer (as in NCCL): the direct plan then sends each
        // chunk before receiving over it. Any other overlap would shift blocks under the plan.
        if (in != out && overlaps(in, inBytes, out, outBytes))
          return fail(sscInvalidArgument,
                      "{}: sendbuff and recvbuff partially overlap (all-to-all "
                      "supports only sendbuff == recvbuff, in place)",
                      fn);
        break;
      default:
        if (in != nullptr && out != nullptr && in != out && overlaps(in, inBytes, out, outBytes))
          return fail(sscInvalidArgument, "{}: sendbuff and recvbuff partially overlap", fn);
        break;
    }
    // Before anything is queued: a GPU kernel on memory it cannot reach (a std::vector's) would
    // fault and leave the device unusable. Only the buffers this rank's call touches.
    if (count > 0) {
      const bool readsIn = kind != CollKind::kBroadcast || isRoot;
      const bool writesOut = kind != CollKind::kReduce || isRoot;
      if (readsIn) SSC_CHECK(checkAccessible(fn, comm, "sendbuff", sendbuff, inBytes));
      if (writesOut && !(readsIn && out == in && outBytes <= inBytes))
        SSC_CHECK(checkAccessible(fn, comm, "recvbuff", recvbuff, outBytes));
    }
    call.checked = checked;
    call.check = print;
    if (count == 0) {
      // Nothing to move, nothing to order on the stream; checked mode still compares the call.
      if (!checked) return sscSuccess;
      call.checkOnly = true;
      submitted = true;
      return submitCall(call);
    }
    call.args.inPlace =
        in != nullptr && out != nullptr &&
        (in == out || (kind == CollKind::kReduceScatter && out == in + comm->rank * block) ||
         (kind == CollKind::kAllGather && in == out + comm->rank * block));
    // A pre-multiplied sum scales each rank's input by that rank's own scalar; zero-copy steps
    // read peers' raw inputs and could only apply the local one, so such calls use the FIFOs.
    call.args.rankScaled = reduces && static_cast<int>(op) >= sscNumOps;
    // Captured calls run zero-copy too: the symmetric kernels count their barriers and LL rounds
    // on the device (sym_kernel.h), and plain buffers' mappings are pinned to the graph
    // (plain_buffers.cc); `captured` still tells the peer cache not to wait for the device.
    call.args.captured = comm->backend->streamCapturing(stream);
    call.zeroCopyOk = !call.args.rankScaled;
    if (call.zeroCopyOk) findSymmetric(comm, &call, inBytes, outBytes);
    submitted = true;
    return submitCall(call);
  }();
  if (r != sscSuccess && checked && !submitted) {
    // This rank refused the call: post it as refused so every peer fails it too (now, or at the
    // group's end) instead of waiting for this rank's data; the error here stays this rank's own.
    const std::string why = lastError();
    PendingCall refused;
    refused.comm = comm;
    refused.stream = stream;
    refused.checked = refused.checkOnly = true;
    refused.check = print;
    refused.check.status = r;
    (void)submitCall(refused);
    if (lastError() != why) setError(r, why);
  }
  if (r != sscSuccess) groupRecordError(r);
  return r;
}

sscResult_t pointToPoint(const char* fn, bool isSend, void* buff, size_t count, sscDataType_t type,
                         int peer, sscComm_t comm, sscStream_t stream) {
  sscResult_t r = [&]() -> sscResult_t {
    CommUse use(comm);
    SSC_CHECK(checkComm(fn, comm));
    TraceScope trace(comm);
    SSC_CHECK(checkDtype(fn, type));
    SSC_CHECK(checkCount(fn, count, dtypeSize(type), 1));
    SSC_CHECK(checkRank(fn, "peer", peer, comm->nranks));
    SSC_CHECK(checkPtr(fn, isSend ? "sendbuff" : "recvbuff", buff, count));
    if (count == 0) return sscSuccess;
    SSC_CHECK(
        checkAccessible(fn, comm, isSend ? "sendbuff" : "recvbuff", buff, count * dtypeSize(type)));
    PendingCall call;
    call.comm = comm;
    call.stream = stream;
    call.isP2p = true;
    call.p2p = P2pOp{isSend, peer, count * dtypeSize(type)};
    call.p2pBuff = buff;
    return submitCall(call);
  }();
  if (r != sscSuccess) groupRecordError(r);
  return r;
}

}  // namespace

SSC_API sscResult_t sscAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                 sscDataType_t datatype, sscRedOp_t op, sscComm_t comm,
                                 sscStream_t stream) {
  return guarded("sscAllReduce", [&] {
    return collective("sscAllReduce", CollKind::kAllReduce, sendbuff, recvbuff, count, datatype, op,
                      true, 0, comm, stream);
  });
}

SSC_API sscResult_t sscReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                     sscDataType_t datatype, sscRedOp_t op, sscComm_t comm,
                                     sscStream_t stream) {
  return guarded("sscReduceScatter", [&] {
    return collective("sscReduceScatter", CollKind::kReduceScatter, sendbuff, recvbuff, recvcount,
                      datatype, op, true, 0, comm, stream);
  });
}

SSC_API sscResult_t sscAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                 sscDataType_t datatype, sscComm_t comm, sscStream_t stream) {
  return guarded("sscAllGather", [&] {
    return collective("sscAllGather", CollKind::kAllGather, sendbuff, recvbuff, sendcount, datatype,
                      sscSum, false, 0, comm, stream);
  });
}

SSC_API sscResult_t sscBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                 sscDataType_t datatype, int root, sscComm_t comm,
                                 sscStream_t stream) {
  return guarded("sscBroadcast", [&] {
    return collective("sscBroadcast", CollKind::kBroadcast, sendbuff, recvbuff, count, datatype,
                      sscSum, false, root, comm, stream);
  });
}

SSC_API sscResult_t sscReduce(const void* sendbuff, void* recvbuff, size_t count,
                              sscDataType_t datatype, sscRedOp_t op, int root, sscComm_t comm,
                              sscStream_t stream) {
  return guarded("sscReduce", [&] {
    return collective("sscReduce", CollKind::kReduce, sendbuff, recvbuff, count, datatype, op, true,
                      root, comm, stream);
  });
}

SSC_API sscResult_t sscAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                                sscDataType_t datatype, sscComm_t comm, sscStream_t stream) {
  return guarded("sscAllToAll", [&] {
    return collective("sscAllToAll", CollKind::kAllToAll, sendbuff, recvbuff, count, datatype,
                      sscSum, false, 0, comm, stream);
  });
}

SSC_API sscResult_t sscSend(const void* sendbuff, size_t count, sscDataType_t datatype, int peer,
                            sscComm_t comm, sscStream_t stream) {
  return guarded("sscSend", [&] {
    return pointToPoint("sscSend", true, const_cast<void*>(sendbuff), count, datatype, peer, comm,
                        stream);
  });
}

SSC_API sscResult_t sscRecv(void* recvbuff, size_t count, sscDataType_t datatype, int peer,
                            sscComm_t comm, sscStream_t stream) {
  return guarded("sscRecv", [&] {
    return pointToPoint("sscRecv", false, recvbuff, count, datatype, peer, comm, stream);
  });
}
