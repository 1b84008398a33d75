// SPDX-License-Identifier: MIT
#include "src/device/gpu/gpu_connections.h"

#include <atomic>
#include <vector>

#include "src/device/backend.h"
#include "src/core/errors.h"
#include "src/platform/gpu_check.h"
#include "src/platform/gpu_runtime.h"
#include "transports/net/net_comm.h"

namespace ssc::gpu {

namespace {

uint64_t roundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Byte offsets of each region in a rank's segment. Every rank computes the same layout from the
// same shape and rank count, which is what lets a rank address a peer's regions.
struct Layout {
  uint64_t recvCtrl, sendCtrl, counters, barriers, error, sym, data, total;
  Layout(const FifoShape& s, int nranks) {
    const uint64_t subFifos = static_cast<uint64_t>(s.channels) * nranks * s.blocksPerChannel;
    recvCtrl = 0;
    sendCtrl = roundUp(recvCtrl + subFifos * sizeof(RecvCtrl), 256);
    counters = roundUp(sendCtrl + subFifos * sizeof(SendCtrl), 256);
    barriers = roundUp(counters + subFifos * sizeof(LocalCounters), 256);
    error = roundUp(barriers + s.channels * 128, 256);
    sym = roundUp(error + 256, 4096);
    data = roundUp(sym + SymCtrlLayout::bytes(nranks), 4096);
    total = data + static_cast<uint64_t>(s.channels) * nranks * s.slots * s.slotBytes;
  }
};

}  // namespace

GpuConnections::~GpuConnections() {
  if (conns_ != nullptr) SSC_GPU_RELEASE(hipFree(conns_));
  if (p2pScratch_ != nullptr) SSC_GPU_RELEASE(hipFree(p2pScratch_));
  if (errorHost_ != nullptr) SSC_GPU_RELEASE(hipHostFree(const_cast<uint32_t*>(errorHost_)));
}

sscResult_t GpuConnections::create(CommView* comm, const FifoShape& shape,
                                   std::unique_ptr<GpuConnections>* out) {
  if (shape.slots > kMaxSlots || shape.channels > kMaxChannels ||
      shape.slotBytes % (16 * shape.blocksPerChannel) != 0)
    return SSC_INTERNAL("bad GPU FIFO shape: {} slots, {} channels, {} bytes per slot", shape.slots,
                        shape.channels, shape.slotBytes);
  std::unique_ptr<GpuConnections> c(new GpuConnections());
  c->shape_ = shape;
  c->rank_ = comm->rank;
  c->nranks_ = comm->nranks;
  const Layout L(shape, comm->nranks);
  // Ranks of this node are mapped through IPC; the others are reached through host staging.
  const std::vector<int> netPeers = netPeersOf(comm);
  std::vector<bool> local(comm->nranks, true);
  for (int r : netPeers) local[r] = false;
  SSC_CHECK(IpcSegment::create(comm, L.total, local, &c->segment_));
  if (!netPeers.empty()) SSC_CHECK(GpuNetStaging::create(comm, shape, netPeers, &c->net_));

  const int n = comm->nranks, me = comm->rank, B = shape.blocksPerChannel;
  const uint64_t fifoBytes = static_cast<uint64_t>(shape.slots) * shape.slotBytes;
  std::vector<Conn> table(static_cast<size_t>(shape.channels) * n);
  for (int ch = 0; ch < shape.channels; ++ch) {
    for (int p = 0; p < n; ++p) {
      char* mine = c->segment_->base(me);
      char* peer = c->segment_->base(p);
      const uint64_t fromPeer = static_cast<uint64_t>(ch) * n + p;  // (ch, sender p) at me
      const uint64_t toPeer = static_cast<uint64_t>(ch) * n + me;   // (ch, sender me) at p
      Conn& k = table[fromPeer];
      k.counters = reinterpret_cast<LocalCounters*>(mine + L.counters) + fromPeer * B;
      if (!local[p]) {
        c->net_->fillConn(ch, p, &k);
        continue;
      }
      k.recvData = mine + L.data + fromPeer * fifoBytes;
      k.recvCtrl = reinterpret_cast<RecvCtrl*>(mine + L.recvCtrl) + fromPeer * B;
      k.recvHeadOut = reinterpret_cast<SendCtrl*>(peer + L.sendCtrl) + toPeer * B;
      k.sendData = peer + L.data + toPeer * fifoBytes;
      k.sendCtrlOut = reinterpret_cast<RecvCtrl*>(peer + L.recvCtrl) + toPeer * B;
      k.sendHeadIn = reinterpret_cast<SendCtrl*>(mine + L.sendCtrl) + fromPeer * B;
    }
  }
  char* mine = c->segment_->base(me);
  c->barrierCounters_ = reinterpret_cast<uint64_t*>(mine + L.barriers);
  c->errorDevice_ = reinterpret_cast<uint32_t*>(mine + L.error);

  void* host = nullptr;
  hipError_t e = hipMalloc(reinterpret_cast<void**>(&c->conns_), table.size() * sizeof(Conn));
  if (e == hipSuccess)
    e = hipMemcpy(c->conns_, table.data(), table.size() * sizeof(Conn), hipMemcpyHostToDevice);
  if (e == hipSuccess) e = hipMalloc(reinterpret_cast<void**>(&c->p2pScratch_), sizeof(P2pScratch));
  if (e == hipSuccess) e = hipMemset(c->p2pScratch_, 0, sizeof(P2pScratch));
  if (e == hipSuccess) e = hipHostMalloc(&host, 64, hipHostMallocMapped);
  if (e == hipSuccess) {
    c->errorHost_ = static_cast<volatile uint32_t*>(host);
    for (int i = 0; i < 16; ++i) c->errorHost_[i] = 0;  // no error, not aborted
    e = hipHostGetDevicePointer(reinterpret_cast<void**>(&c->errorHostDevice_), host, 0);
  }
  if (e != hipSuccess) return SSC_GPU_FAIL(e, "setting up GPU connections");
  *out = std::move(c);
  return sscSuccess;
}

void GpuConnections::fillSymArgs(SymArgs* a) const {
  const Layout L(shape_, nranks_);
  // Zero-copy plans only run within a node (algoSupports), where every rank is mapped.
  for (int r = 0; r < nranks_ && r < kMaxSymPeers; ++r)
    a->ctrl[r] = segment_->base(r) == nullptr ? nullptr : segment_->base(r) + L.sym;
  a->errorDevice = errorDevice_;
  a->errorHost = errorHostDevice_;
  a->abortHost = errorHostDevice_ + kAbortWord;
}

void GpuConnections::fillArgs(KernelArgs* a) const {
  a->conns = conns_;
  a->rank = rank_;
  a->nranks = nranks_;
  a->p2p.scratch = p2pScratch_;
  a->blocksPerChannel = shape_.blocksPerChannel;
  a->slots = shape_.slots;
  a->slotBytes = shape_.slotBytes;
  a->pieceBytes = shape_.pieceBytes();
  a->barrierCounters = barrierCounters_;
  a->errorDevice = errorDevice_;
  a->errorHost = errorHostDevice_;
  a->abortHost = errorHostDevice_ + kAbortWord;
}

uint32_t GpuConnections::kernelError(uint32_t* peer, uint32_t* channel, uint32_t* detail) const {
  const uint32_t code = errorHost_[0];
  if (code != 0) {
    // The kernel wrote these before the code (with a system fence in between).
    *peer = errorHost_[1];
    *channel = errorHost_[2];
    *detail = errorHost_[3];
  }
  return code;
}

void GpuConnections::kernelErrorCounts(uint64_t* sent, uint64_t* expected) const {
  *sent = errorHost_[4] | static_cast<uint64_t>(errorHost_[5]) << 32;
  *expected = errorHost_[6] | static_cast<uint64_t>(errorHost_[7]) << 32;
}

void GpuConnections::requestAbort() {
  errorHost_[kAbortWord] = 1;
  // Drain the store before going on: the caller's next step may be to wait for the very kernels
  // that poll it.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace ssc::gpu
