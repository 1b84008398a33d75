// SPDX-License-Identifier: MIT
#include "src/device/gpu/gpu_net.h"

#include <cstring>

#include "src/device/backend.h"
#include "src/core/errors.h"
#include "src/device/gpu/gpu_connections.h"
#include "src/platform/gpu_check.h"
#include "src/platform/gpu_runtime.h"
#include "transports/net/net_comm.h"
#include "transports/net/net_proxy.h"

namespace ssc::gpu {

namespace {

uint64_t roundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t) &&
                  std::atomic<uint64_t>::is_always_lock_free,
              "the proxy reads the kernel's 64-bit counters as std::atomic");

std::atomic<uint64_t>* asAtomic(uint64_t* p) { return reinterpret_cast<std::atomic<uint64_t>*>(p); }

}  // namespace

// One (channel, peer): the inbox the proxy fills and the outbox the kernel fills, each with the
// per-block control words of plan_kernel.h.
struct GpuNetStaging::Region {
  uint64_t inData, outData, inCtrl, inHead, outCtrl, outHead, total;
  Region(uint64_t fifoBytes, int blocks) {
    inData = 0;
    outData = inData + fifoBytes;
    inCtrl = roundUp(outData + fifoBytes, 256);
    inHead = roundUp(inCtrl + blocks * sizeof(RecvCtrl), 256);
    outCtrl = roundUp(inHead + blocks * sizeof(SendCtrl), 256);
    outHead = roundUp(outCtrl + blocks * sizeof(RecvCtrl), 256);
    total = roundUp(outHead + blocks * sizeof(SendCtrl), 4096);
  }
};

GpuNetStaging::~GpuNetStaging() {
  proxy_.reset();  // it reads and writes the staging memory
  if (host_ != nullptr) SSC_GPU_RELEASE(hipHostFree(host_));
}

char* GpuNetStaging::regionHost(int channel, int peer) const {
  return host_ + (static_cast<uint64_t>(channel) * npeers_ + slotOf_[peer]) * regionBytes_;
}

sscResult_t GpuNetStaging::create(CommView* comm, const FifoShape& shape,
                                  const std::vector<int>& netPeers,
                                  std::unique_ptr<GpuNetStaging>* out) {
  std::unique_ptr<GpuNetStaging> s(new GpuNetStaging());
  SSC_CHECK(NetComm::create(comm, &s->net_));
  s->blocks_ = shape.blocksPerChannel;
  s->channels_ = shape.channels;
  s->fifoBytes_ = static_cast<uint64_t>(shape.slots) * shape.slotBytes;
  const Region R(s->fifoBytes_, s->blocks_);
  s->regionBytes_ = R.total;
  s->npeers_ = static_cast<int>(netPeers.size());
  s->slotOf_.assign(comm->nranks, -1);
  for (int i = 0; i < s->npeers_; ++i) s->slotOf_[netPeers[i]] = i;

  const uint64_t bytes = s->regionBytes_ * s->channels_ * s->npeers_;
  void* host = nullptr;
  hipError_t e = hipHostMalloc(&host, bytes, hipHostMallocMapped);
  if (e == hipSuccess) {
    s->host_ = static_cast<char*>(host);
    std::memset(host, 0, bytes);
    e = hipHostGetDevicePointer(reinterpret_cast<void**>(&s->device_), host, 0);
  }
  if (e != hipSuccess)
    return SSC_GPU_FAIL(e, "allocating {} MiB of pinned staging for {} remote peer(s)", bytes >> 20,
                        s->npeers_);

  // Every block of a channel owns one piece of each slot and has its own counters, so each
  // (channel, peer, block) is a FIFO of its own on the network too; its tag says which.
  std::vector<NetFifo> outboxes, inboxes;
  for (int ch = 0; ch < s->channels_; ++ch) {
    for (int peer : netPeers) {
      char* base = s->regionHost(ch, peer);
      for (int b = 0; b < s->blocks_; ++b) {
        NetFifo f;
        f.peer = peer;
        f.tag = ch * s->blocks_ + b;
        f.slotStride = shape.slotBytes;
        f.pieceOffset = static_cast<uint64_t>(b) * shape.pieceBytes();
        f.pieceBytes = shape.pieceBytes();
        f.slots = shape.slots;
        // The same sub-FIFO over one direction's data, control words and head.
        const auto at = [&](uint64_t data, uint64_t ctrl, uint64_t head) {
          NetFifo v = f;
          auto* c = reinterpret_cast<RecvCtrl*>(base + ctrl) + b;
          v.data = base + data;
          v.tail = asAtomic(&c->tail);
          v.slotBytes = c->slotBytes;
          v.head = asAtomic(&(reinterpret_cast<SendCtrl*>(base + head) + b)->head);
          return v;
        };
        outboxes.push_back(at(R.outData, R.outCtrl, R.outHead));
        inboxes.push_back(at(R.inData, R.inCtrl, R.inHead));
      }
    }
  }
  s->proxy_ = std::make_unique<NetProxy>(
      *s->net_, std::move(outboxes), std::move(inboxes), [comm](const std::string& message) {
        // A broken network cannot be recovered from: record why and abort, which also ends the
        // kernels waiting on the staging FIFOs.
        comm->setAsyncError(sscSystemError, "net transport: " + message);
        comm->abortFlag.store(true);
      });
  *out = std::move(s);
  return sscSuccess;
}

void GpuNetStaging::requestDump() { proxy_->requestDump(); }

void GpuNetStaging::fillConn(int channel, int peer, Conn* k) const {
  const Region R(fifoBytes_, blocks_);
  char* base = device_ + (static_cast<uint64_t>(channel) * npeers_ + slotOf_[peer]) * regionBytes_;
  k->recvData = base + R.inData;
  k->recvCtrl = reinterpret_cast<RecvCtrl*>(base + R.inCtrl);
  k->recvHeadOut = reinterpret_cast<SendCtrl*>(base + R.inHead);
  k->sendData = base + R.outData;
  k->sendCtrlOut = reinterpret_cast<RecvCtrl*>(base + R.outCtrl);
  k->sendHeadIn = reinterpret_cast<SendCtrl*>(base + R.outHead);
}

}  // namespace ssc::gpu
