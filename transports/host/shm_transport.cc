// SPDX-License-Identifier: MIT
#include "transports/host/shm_transport.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>

#include "transports/peer_view.h"
#include "src/core/errors.h"
#include "src/core/log.h"
#include "src/core/shared_file.h"
#include "transports/net/net_comm.h"
#include "transports/net/net_proxy.h"

namespace ssc {

namespace {

// Identifies this host (and boot) so ranks can check they share /dev/shm.
struct HostId {
  char name[64];
  char boot[40];
};

HostId localHostId() {
  HostId id{};
  gethostname(id.name, sizeof(id.name) - 1);
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string boot;
  std::getline(f, boot);
  std::strncpy(id.boot, boot.c_str(), sizeof(id.boot) - 1);
  return id;
}

size_t roundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

}  // namespace

size_t ShmTransport::fifoIndex(int sender, int channel) const {
  return static_cast<size_t>(channel) * nranks_ + sender;
}

ShmFifo ShmTransport::sendFifo(int peer, int channel) const {
  if (maps_[peer] == nullptr) return outboxes_[fifoIndex(peer, channel)];
  char* base = segmentBase(peer);
  size_t i = fifoIndex(rank_, channel);
  return ShmFifo{reinterpret_cast<ShmFifoCtrl*>(base) + i,
                 base + ctrlBytes_ + i * slots_ * slotBytes_};
}

ShmFifo ShmTransport::recvFifo(int peer, int channel) const {
  char* base = segmentBase(rank_);
  size_t i = fifoIndex(peer, channel);
  return ShmFifo{reinterpret_cast<ShmFifoCtrl*>(base) + i,
                 base + ctrlBytes_ + i * slots_ * slotBytes_};
}

ShmBarrierCtrl* ShmTransport::barrier(int q) const {
  if (maps_[q] == nullptr) return nullptr;
  const size_t nfifo = static_cast<size_t>(channels_) * nranks_;
  return reinterpret_cast<ShmBarrierCtrl*>(segmentBase(q) + nfifo * sizeof(ShmFifoCtrl));
}

ShmTransport::~ShmTransport() {
  proxy_.reset();  // it reads and writes the FIFOs below
  for (void* m : maps_)
    if (m != nullptr && m != MAP_FAILED) munmap(m, segmentBytes_);
}

sscResult_t ShmTransport::create(PeerView* comm, std::unique_ptr<ShmTransport>* out) {
  std::unique_ptr<ShmTransport> t(new ShmTransport());
  t->rank_ = comm->rank;
  t->nranks_ = comm->nranks;
  t->waits_ = comm->waits;
  // A value outside what the transport can run is refused, not clamped: a mistyped setting must
  // be loud (every rank reads the same environment, so every rank fails alike).
  int64_t v[3];
  const struct {
    const char* name;
    int64_t lo, hi;
  } limits[3] = {{"STARSCREAM_HOST_CHANNELS", 1, 16},
                 {"STARSCREAM_HOST_SLOTS", 2, kShmMaxSlots},
                 {"STARSCREAM_HOST_SLOT_BYTES", 64, 64 << 20}};
  for (int i = 0; i < 3; ++i) {
    v[i] = comm->settings.getInt(limits[i].name);
    if (v[i] < limits[i].lo || v[i] > limits[i].hi)
      return fail(sscInvalidArgument, "{}={} is outside what the host transport runs ({} - {})",
                  limits[i].name, v[i], limits[i].lo, limits[i].hi);
  }
  t->channels_ = static_cast<int>(v[0]);
  t->slots_ = static_cast<int>(v[1]);
  // Slots hold whole elements of every type (8 bytes at most) and stay cache-line aligned.
  t->slotBytes_ = roundUp(static_cast<size_t>(v[2]), 64);
  const size_t nfifo = static_cast<size_t>(t->channels_) * t->nranks_;
  t->ctrlBytes_ = roundUp(nfifo * sizeof(ShmFifoCtrl) + sizeof(ShmBarrierCtrl), 4096);
  t->segmentBytes_ = t->ctrlBytes_ + nfifo * t->slots_ * t->slotBytes_;

  // Ranks of one node (per the topology) share this host's /dev/shm; the others are reached
  // over the network. An emulated topology may put "nodes" on one host: they still talk over the
  // network, as they would on the machine the file describes.
  const std::vector<int> netPeers = netPeersOf(comm);
  const auto local = [&](int r) {
    return comm->topo.ranks[r].node == comm->topo.ranks[t->rank_].node;
  };
  std::vector<HostId> hosts(t->nranks_);
  hosts[t->rank_] = localHostId();
  SSC_CHECK(comm->bootstrap->allGather(hosts.data(), sizeof(HostId)));
  for (int r = 0; r < t->nranks_; ++r)
    if (local(r) && std::memcmp(&hosts[r], &hosts[t->rank_], sizeof(HostId)) != 0)
      return fail(sscInvalidUsage,
                  "the topology puts ranks {} and {} on one node, but they run on "
                  "'{}' and '{}': the host backend shares memory within a node only",
                  r, t->rank_, hosts[r].name, hosts[t->rank_].name);

  t->maps_.assign(t->nranks_, nullptr);

  // Each rank's segment is an anonymous file (memfd) that its peers open through
  // /proc/<pid>/fd/<fd> (same user, same host): it has no name, so a rank killed at any moment
  // leaves nothing in /dev/shm (a named POSIX segment outlived a kill between shm_open and
  // shm_unlink). Create, then tell everyone whether it worked and where it is, so one failure
  // fails all ranks promptly.
  struct Where {
    int32_t ok;
    int32_t pid;
    int32_t fd;
    int32_t pad;
  };
  std::vector<Where> where(t->nranks_, Where{0, 0, -1, 0});
  int fd = -1;
  std::string why;
  createSharedFile("starscream-host-transport", t->segmentBytes_, &fd, &t->maps_[t->rank_], &why);
  where[t->rank_] = Where{why.empty() ? 1 : 0, static_cast<int32_t>(getpid()), fd, 0};
  const auto closeOwn = [&] {
    if (fd >= 0) close(fd);
    fd = -1;
  };
  if (sscResult_t r = comm->bootstrap->allGather(where.data(), sizeof(Where)); r != sscSuccess) {
    closeOwn();
    return r;
  }
  for (int r = 0; r < t->nranks_; ++r)
    if (!where[r].ok) {
      closeOwn();
      return fail(sscSystemError, "shared memory set-up failed on rank {}{}{}", r,
                  why.empty() ? "" : ": ", r == t->rank_ ? why : "see that rank's log");
    }

  for (int r = 0; r < t->nranks_ && why.empty(); ++r) {
    if (r == t->rank_ || !local(r)) continue;
    t->maps_[r] = mapPeerFile(where[r].pid, where[r].fd, t->segmentBytes_, &why);
    if (t->maps_[r] == nullptr) why = fmt::format("rank {}'s segment: {}", r, why);
  }
  std::vector<int32_t> ok(t->nranks_, 0);
  ok[t->rank_] = why.empty() ? 1 : 0;
  const sscResult_t mapped = comm->bootstrap->allGather(ok.data(), sizeof(int32_t));
  // Everyone has mapped (or failed): the mappings keep the segments alive, the fd is not needed.
  closeOwn();
  SSC_CHECK(mapped);
  for (int r = 0; r < t->nranks_; ++r)
    if (!ok[r])
      return fail(sscSystemError, "mapping peers' shared memory failed on rank {}{}{}", r,
                  why.empty() ? "" : ": ", r == t->rank_ ? why : "see that rank's log");
  if (!netPeers.empty()) SSC_CHECK(t->connectNetwork(comm, netPeers));
  SSC_LOG(kInfo,
          "host transport: {} channel(s) x {} slots x {} bytes per connection, {} MiB segment, "
          "{} peer(s) over the network",
          t->channels_, t->slots_, t->slotBytes_, t->segmentBytes_ >> 20, netPeers.size());
  *out = std::move(t);
  return sscSuccess;
}

sscResult_t ShmTransport::connectNetwork(PeerView* comm, const std::vector<int>& netPeers) {
  SSC_CHECK(NetComm::create(comm, &net_));
  const size_t nfifo = static_cast<size_t>(channels_) * nranks_;
  const size_t fifoBytes = static_cast<size_t>(slots_) * slotBytes_;
  outboxes_.assign(nfifo, ShmFifo{});
  outboxCtrl_.reset(new ShmFifoCtrl[netPeers.size() * channels_]());
  outboxData_.assign(netPeers.size() * channels_ * fifoBytes, 0);
  std::vector<NetFifo> out, in;
  for (int ch = 0; ch < channels_; ++ch) {
    for (size_t i = 0; i < netPeers.size(); ++i) {
      const int peer = netPeers[i];
      const size_t k = static_cast<size_t>(ch) * netPeers.size() + i;
      ShmFifo box{&outboxCtrl_[k], outboxData_.data() + k * fifoBytes};
      outboxes_[fifoIndex(peer, ch)] = box;
      const ShmFifo inbox = recvFifo(peer, ch);
      // One sub-FIFO per (channel, peer): the whole slot is its piece.
      const auto fifo = [&](const ShmFifo& f) {
        NetFifo n;
        n.peer = peer;
        n.tag = ch;
        n.tail = &f.ctrl->tail;
        n.head = &f.ctrl->head;
        n.slotBytes = f.ctrl->slotBytes;
        n.tailWord = &f.ctrl->tailWord;
        n.headWord = &f.ctrl->headWord;
        n.data = f.data;
        n.slotStride = slotBytes_;
        n.pieceBytes = slotBytes_;
        n.slots = slots_;
        return n;
      };
      out.push_back(fifo(box));
      in.push_back(fifo(inbox));
    }
  }
  proxy_ = std::make_unique<NetProxy>(
      *net_, std::move(out), std::move(in), [comm](const std::string& message) {
        // The communicator cannot recover from a broken network: record why, and wake every wait.
        comm->setAsyncError(sscSystemError, "net transport: " + message);
        comm->abortFlag.store(true);
      });
  return sscSuccess;
}

}  // namespace ssc
