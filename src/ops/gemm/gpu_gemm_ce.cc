// SPDX-License-Identifier: MIT
// SSC_GEMM_COPY_ENGINE: the fused forms with no kernel that waits on a peer (docs/gemm.md).
//
// Why: under an SM cap (an MPS partition, a CPX XCD) every waiting or copying kernel of the
// fused forms takes SMs and a kernel boundary from the partition's GEMM, and a vendor GEMM
// beside a waiting kernel of the same process hung (gemm_plan.h). What makes the form possible,
// and perf/sm_free.cu shows on a machine (`tools/emulate/partition-run.sh 8 build/bin/sm_free
// 64`): a device-to-device copy runs on a copy engine beside a kernel holding every SM of the
// partition (it ends long before the kernel does), and stream memory operations pass a flag
// between MPS clients (about 11 us each way at 8 partitions of an H200) with or without such a
// kernel. So here the ranks order themselves
// with sscStreamWriteValue32 / sscStreamWaitValueGeq32 (every wait on a word of this rank's own
// flags: peers write into it), the all-gather's rows move by copy engine on the context's copy
// stream, and the only kernels are the GEMMs and the reduce-scatter's sum.
//
// A stream wait has no timeout. The watchdog thread (one per context, started with the first
// such call) gives each call STARSCREAM_TIMEOUT from the moment its stream reaches it; past that,
// or once the communicator is aborted, it writes this rank's flag words so every wait passes,
// records what was missing, and the context's next call fails with sscTimeout saying so.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/api/api.h"
#include "src/comm/comm.h"
#include "src/core/futex_wait.h"
#include "src/core/log.h"
#include "src/ops/gemm/gemm_fused_kernel.h"
#include "src/ops/gemm/gpu_gemm_internal.h"
#include "src/platform/gpu_check.h"

namespace ssc::gemm {

namespace {

// The words of this rank's flag tail that a copy-engine call's waits read, as 32-bit offsets:
// done[2][kFusedMaxRanks], from[2][kFusedMaxRanks], readyFrom[2][kFusedMaxRanks].
constexpr size_t kWordsPerArray = 2 * kFusedMaxRanks;

}  // namespace

class CopyEngine {
 public:
  enum class Kind { kReduceScatter, kAllGather };

  explicit CopyEngine(sscGemmContext* g) : g_(g), me_(g->comm->rank) {}

  sscResult_t init() {
    SSC_GPU_CHECK(hipStreamCreateWithFlags(&copies, hipStreamNonBlocking),
                  "gemm: creating the copy-engine form's copy stream");
    SSC_GPU_CHECK(hipStreamCreateWithFlags(&release_, hipStreamNonBlocking),
                  "gemm: creating the copy-engine watchdog's stream");
    void* h = nullptr;
    SSC_GPU_CHECK(hipHostMalloc(&h, kFusedFlagBytes, hipHostMallocMapped),
                  "gemm: allocating the copy-engine watchdog's pinned flag words");
    host_ = static_cast<uint32_t*>(h);
    timeoutSeconds_ = g_->waits.timeoutSeconds;
    watcher_ = std::thread([this] { watch(); });
    return sscSuccess;
  }

  ~CopyEngine() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (watcher_.joinable()) watcher_.join();
    for (auto& p : pending_) free_.insert(free_.end(), {p.begin, p.copied, p.end});
    // A destructor has no caller to report to: a destroy or free that fails leaves nothing to do.
    for (hipEvent_t e : free_) (void)hipEventDestroy(e);
    if (copies != nullptr) (void)hipStreamDestroy(copies);
    if (release_ != nullptr) (void)hipStreamDestroy(release_);
    if (host_ != nullptr) (void)hipHostFree(host_);
  }

  // Three events for a call: begin (the caller's stream reached it), copied (the copy stream's
  // part done), end (the call done on the caller's stream).
  sscResult_t events(hipEvent_t* out) {
    std::lock_guard<std::mutex> lk(mu_);
    while (free_.size() < 3) {
      hipEvent_t e = nullptr;
      SSC_GPU_CHECK(hipEventCreateWithFlags(&e, hipEventDisableTiming),
                    "gemm: creating a copy-engine call's event");
      free_.push_back(e);
    }
    for (int i = 0; i < 3; ++i) {
      out[i] = free_.back();
      free_.pop_back();
    }
    return sscSuccess;
  }

  // The call of `use` is queued: begin and end recorded (or abandoned: track with ok false
  // returns the events).
  void track(const hipEvent_t* ev, uint32_t use, Kind kind, bool ok) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (!ok) {
        free_.insert(free_.end(), ev, ev + 3);
        return;
      }
      pending_.push_back(Pending{ev[0], ev[1], ev[2], use, kind});
    }
    cv_.notify_all();
  }

  sscResult_t earlier() const {
    if (!failed_.load(std::memory_order_acquire)) return sscSuccess;
    std::lock_guard<std::mutex> lk(mu_);
    return fail(sscTimeout, "gemm: {}; the context's results since then are not valid (destroy it)",
                failure_);
  }

  hipStream_t copies = nullptr;

 private:
  struct Pending {
    hipEvent_t begin, copied, end;
    uint32_t use;
    Kind kind;
    bool begun = false;
    std::chrono::steady_clock::time_point since{};
  };

  void watch() {
    // The runtime's current device is per thread: this one's must be the context's. No caller to
    // report a failure to here: the queries below would then fail, read as calls not yet done.
    (void)hipSetDevice(g_->device);
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      // Idle: sleep until a call is queued. Else poll every 2 ms.
      const bool idle = pending_.empty();
      cv_.wait_for(lk, std::chrono::milliseconds(idle ? 200 : 2),
                   [&] { return stop_ || (idle && !pending_.empty()); });
      if (stop_) return;
      while (!pending_.empty()) {
        Pending& f = pending_.front();
        if (hipEventQuery(f.end) == hipSuccess) {
          free_.insert(free_.end(), {f.begin, f.copied, f.end});
          pending_.pop_front();
          continue;
        }
        (void)hipGetLastError();  // not ready is not an error; this thread's record only
        const auto now = std::chrono::steady_clock::now();
        if (!f.begun && hipEventQuery(f.begin) == hipSuccess) {
          f.begun = true;
          f.since = now;
        }
        (void)hipGetLastError();  // as above: a begin not reached yet is no error
        bool aborted = true;      // a communicator already freed counts as aborted
        {
          CommUse use(g_->comm);  // abort frees comm only once no thread uses it
          if (use.live()) aborted = use.comm()->abortFlag.load();
        }
        const bool late = f.begun && timeoutSeconds_ > 0 &&
                          std::chrono::duration<double>(now - f.since).count() > timeoutSeconds_;
        if ((aborted || late) && !failed_.load()) releaseWaits(f, aborted);
        break;
      }
    }
  }

  // Every wait of the pending calls passes once this rank's words hold the newest pending use.
  // First reads them, to say which peer's word was behind.
  void releaseWaits(const Pending& f, bool aborted) {
    const uint32_t use = pending_.back().use;
    const int K = static_cast<int>(g_->fusedPeers.size());
    uint32_t* tail =
        reinterpret_cast<uint32_t*>(static_cast<char*>(g_->workspace) + g_->workspaceBytes);
    std::string missing;
    if (hipMemcpyAsync(host_, tail, kFusedFlagBytes, hipMemcpyDeviceToHost, release_) ==
            hipSuccess &&
        settled()) {
      const size_t arrived = (f.kind == Kind::kAllGather ? kFusedFromOff : kFusedReadyFromOff) / 4 +
                             (f.use % 2) * kFusedMaxRanks;
      // Its own word: no wait reads it (the per-rank all-gather never writes it).
      for (int q = 0; q < K; ++q)
        if (q != me_ && static_cast<int32_t>(host_[arrived + q] - f.use) < 0)
          missing += fmt::format(
              "{}rank {} ({} of use {})", missing.empty() ? "" : ", ", q,
              f.kind == Kind::kAllGather ? "its rows of X" : "its partial product", f.use);
      for (uint32_t back = 1; back <= 2 && back < f.use; ++back)
        for (int q = 0; q < K; ++q)
          if (static_cast<int32_t>(
                  host_[kFusedDoneOff / 4 + ((f.use - back) % 2) * kFusedMaxRanks + q] -
                  (f.use - back)) < 0)
            missing += fmt::format("{}rank {} (had not finished reading use {})",
                                   missing.empty() ? "" : ", ", q, f.use - back);
    }
    for (size_t off : {kFusedDoneOff, kFusedFromOff, kFusedReadyFromOff})
      for (size_t i = 0; i < kWordsPerArray; ++i) host_[off / 4 + i] = use;
    // This thread has no caller: a copy that fails is told in the failure the next call reports.
    hipError_t released = hipSuccess;
    for (size_t off : {kFusedDoneOff, kFusedFromOff, kFusedReadyFromOff}) {
      const hipError_t e = hipMemcpyAsync(byte(tail, off), host_ + off / 4, kWordsPerArray * 4,
                                          hipMemcpyHostToDevice, release_);
      if (released == hipSuccess) released = e;
    }
    failure_ =
        fmt::format("{} call's stream wait (SSC_GEMM_COPY_ENGINE) was released {}; waiting on: {}",
                    f.kind == Kind::kAllGather ? "an all-gather + GEMM" : "a GEMM + reduce-scatter",
                    aborted ? "because the communicator was aborted" : "after STARSCREAM_TIMEOUT",
                    missing.empty() ? "unknown" : missing);
    if (released != hipSuccess)
      failure_ += fmt::format(" (writing the words that release the waits failed: {})",
                              hipGetErrorString(released));
    failed_.store(true, std::memory_order_release);
    SSC_LOG(kWarn, "{}", failure_);
  }

  // The release stream's copy done within a second (a device that no longer answers: give up).
  bool settled() {
    for (int i = 0; i < 1000; ++i) {
      if (hipStreamQuery(release_) == hipSuccess) return true;
      (void)hipGetLastError();  // not ready is not an error; this thread's record only
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }

  sscGemmContext* g_;
  int me_;  // this rank (the watchdog must not touch a communicator an abort may free)
  hipStream_t release_ = nullptr;  // the watchdog's own copies
  uint32_t* host_ = nullptr;       // pinned: the flags read back, the values written
  double timeoutSeconds_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> pending_;
  std::vector<hipEvent_t> free_;
  bool stop_ = false;
  std::atomic<bool> failed_{false};
  std::string failure_;
  std::thread watcher_;
};

#if defined(STARSCREAM_HAVE_BLASLT)
namespace {

// The context's copy-engine state, created on first use; refuses a stream under capture (the
// watchdog's events cannot be queried there).
sscResult_t prepareCall(sscGemmContext* g, hipStream_t s, CopyEngine** out) {
  hipStreamCaptureStatus capture = hipStreamCaptureStatusNone;
  SSC_GPU_CHECK(hipStreamIsCapturing(s, &capture),
                "gemm: asking whether the call's stream is being captured");
  if (capture != hipStreamCaptureStatusNone)
    return fail(
        sscInvalidUsage,
        "gemm: SSC_GEMM_COPY_ENGINE cannot run on a stream being captured "
        "into a graph (its watchdog follows each call by events): leave the flag off there");
  CopyEngine*& ce = *gpuCopyEngine(g);
  if (ce == nullptr) {
    auto* fresh = new CopyEngine(g);
    const sscResult_t r = fresh->init();
    if (r != sscSuccess) {
      delete fresh;
      return r;
    }
    ce = fresh;
  }
  *out = ce;  // gpuRun has checked ceEarlierTimeout
  return sscSuccess;
}

// One submission of stream memory operations (sscStreamBatchValue32): under MPS each submission
// costs the stream several microseconds whatever it holds (5-9 us at 8 partitions of an H200),
// so the flags of one step go in one submission.
class Ops {
 public:
  // A wait for a target at or before use 0 (the flags' initial value, or use - 1 wrapped on a
  // context's first call) is met already: left out, since HIP's wait compares unsigned.
  void wait(uint32_t* word, uint32_t value) {
    if (static_cast<int32_t>(value) > 0) ops_.push_back({word, value, false});
  }
  void write(uint32_t* word, uint32_t value) { ops_.push_back({word, value, true}); }
  sscResult_t submit(hipStream_t s) {
    const int n = static_cast<int>(ops_.size());
    const hipError_t e = sscStreamBatchValue32(s, ops_.data(), n);
    ops_.clear();
    // A driver without stream memory operations: the caller's choice of flag, not a device error.
    if (e == hipErrorNotSupported)
      return fail(sscInvalidUsage,
                  "gemm: SSC_GEMM_COPY_ENGINE needs stream memory operations, which "
                  "this driver does not offer (sscStreamBatchValue32)");
    if (e != hipSuccess)
      return SSC_GPU_FAIL(e, "gemm: queueing {} stream memory operations (SSC_GEMM_COPY_ENGINE)",
                          n);
    return sscSuccess;
  }

 private:
  std::vector<SscStreamValueOp> ops_;
};

// The gate before a rank writes what its peers read (its slot: a chunk's partials, its rows of
// X): every peer has finished reading the previous use. A reader writes its done flags in stream
// order, so its done of use - 1 means it is done with every earlier use too, and one word per
// peer suffices (the word the previous use's form wrote: g->lastDoneIndex). This rank's own
// reads are earlier work on the caller's stream.
void gate(sscGemmContext* g, int me, int K, uint32_t use, Ops* ops) {
  for (int q = 0; q < K; ++q)
    if (q != me) ops->wait(fusedDone(g, me, g->lastDoneIndex, q), use - 1);
}

// The reduce-scatter, chunk by chunk on the caller's stream: [gate] -> the chunk's GEMM pieces
// into the local slot -> [readyFrom[me] in every peer (the write's barrier orders the GEMM's
// tile before it), then every peer's readyFrom here] -> the sum of this rank's rows out of the K
// slots in place -> [done[me] in every rank, this one included (destroy reads its own)].
sscResult_t rsChunks(sscGemmContext* g, const Call& c, hipStream_t s, CopyEngine* ce) {
  const Problem& p = c.p;
  const Plan& pl = c.plan;
  const size_t ob = typeBytes(c.outType);
  const int me = c.rank, K = p.nranks;
  Ops ops;
  for (int j = 0; j < pl.chunks; ++j) {
    const uint32_t use = ++g->fusedUses;
    const int slot = static_cast<int>(use % pl.slots), fi = static_cast<int>(use % 2);
    const ChunkRows cr = chunkRows(pl, j);
    void* mySlot = byte(g->workspace, slot * pl.slotBytes);
    hipEvent_t ev[3] = {};
    SSC_CHECK(ce->events(ev));
    auto body = [&]() -> sscResult_t {
      SSC_GPU_CHECK(hipEventRecord(ev[0], s), "gemm: recording the start of chunk {}", j);
      gate(g, me, K, use, &ops);
      SSC_CHECK(ops.submit(s));
      for (const GemmPiece& piece : chunkPieces(p, pl, j))
        SSC_CHECK(gpuPiece(g, c, c.x, mySlot, piece, true, s));
      for (int q = 0; q < K; ++q)
        if (q != me) ops.write(fusedReadyFrom(g, q, fi, me), use);
      for (int q = 0; q < K; ++q)
        if (q != me) ops.wait(fusedReadyFrom(g, me, fi, q), use);
      SSC_CHECK(ops.submit(s));
      const int64_t mine = ownChunkRows(p, pl, j, me);
      if (mine > 0) {
        const void* srcs[kFusedMaxRanks];
        for (int q = 0; q < K; ++q)
          srcs[q] = cbyte(g->fusedPeers[q], slot * pl.slotBytes + me * cr.rows * p.n * ob);
        SSC_CHECK(gpu::launchFusedReduce(byte(c.y, cr.begin * p.n * ob), srcs, K,
                                         static_cast<size_t>(mine * p.n), static_cast<int>(ob),
                                         c.outType == sscBfloat16, 4 * gpuSms(g), s));
      }
      for (int q = 0; q < K; ++q) ops.write(fusedDone(g, q, slot, me), use);
      SSC_CHECK(ops.submit(s));
      g->lastDoneIndex = slot;
      // ev[1] (the copy stream's part) on the caller's stream too: this op copies nothing.
      SSC_GPU_CHECK(hipEventRecord(ev[1], s), "gemm: recording chunk {}'s copy-part event", j);
      SSC_GPU_CHECK(hipEventRecord(ev[2], s), "gemm: recording the end of chunk {}", j);
      return sscSuccess;
    };
    const sscResult_t r = body();
    ce->track(ev, use, CopyEngine::Kind::kReduceScatter, r == sscSuccess);
    SSC_CHECK(r);
  }
  return sscSuccess;
}

}  // namespace

sscResult_t ceRunFusedReduceScatter(sscGemmContext* g, const Call& c, hipStream_t s) {
  CopyEngine* ce = nullptr;
  SSC_CHECK(prepareCall(g, s, &ce));
  return rsChunks(g, c, s, ce);
}

// The all-gather. Copy stream (after the caller's earlier work, so x is ready): [gate] -> this
// rank's rows of X by copy engine (push: into every rank's slot; per rank: into its own) ->
// [from[me] in every peer]. Caller's stream: per rank: the GEMM of my rows straight from x; then
// [every peer's from here] -> push: the copy stream's end, ONE GEMM over the local slot; per
// rank: one GEMM per peer reading its rows in place from its slot. Then the copy stream's end
// and [done[me] in every rank].
sscResult_t ceRunFusedAllGather(sscGemmContext* g, const Call& c, hipStream_t s) {
  CopyEngine* ce = nullptr;
  SSC_CHECK(prepareCall(g, s, &ce));
  const Problem& p = c.p;
  const Plan& pl = c.plan;
  const size_t ib = typeBytes(c.inType);
  const int me = c.rank, K = p.nranks;
  const uint32_t use = ++g->fusedUses;
  const int fi = static_cast<int>(use % 2);
  const size_t slotOff = (use % pl.slots) * pl.slotBytes;
  const RowRange own = rowShard(p.m, K, me);
  hipStream_t cs = ce->copies;
  hipEvent_t ev[3] = {};
  SSC_CHECK(ce->events(ev));
  Ops ops;
  auto body = [&]() -> sscResult_t {
    SSC_GPU_CHECK(hipEventRecord(ev[0], s), "gemm: recording the start of an all-gather + GEMM");
    SSC_GPU_CHECK(hipStreamWaitEvent(cs, ev[0], 0),
                  "gemm: ordering the copy stream after the caller's stream");
    gate(g, me, K, use, &ops);
    SSC_CHECK(ops.submit(cs));
    for (int i = 0; i < K; ++i) {  // rotated, so the ranks do not all write into one peer at once
      const int q = (me + i) % K;
      if ((!pl.agPerRank || q == me) && own.count > 0)
        SSC_GPU_CHECK(hipMemcpyAsync(byte(g->fusedPeers[q], slotOff + me * pl.block * p.k * ib),
                                     c.x, own.count * p.k * ib, hipMemcpyDeviceToDevice, cs),
                      "gemm: copying this rank's {} rows of x into rank {}'s slot", own.count, q);
    }
    for (int q = 0; q < K; ++q)
      if (q != me) ops.write(fusedFrom(g, q, fi, me), use);
    SSC_CHECK(ops.submit(cs));
    SSC_GPU_CHECK(hipEventRecord(ev[1], cs), "gemm: recording the end of the copy stream's part");
    if (pl.agPerRank) SSC_CHECK(gemmOwnRows(g, c, s));  // my rows first, straight from x: no wait
    for (int q = 0; q < K; ++q)
      if (q != me) ops.wait(fusedFrom(g, me, fi, q), use);
    SSC_CHECK(ops.submit(s));
    if (!pl.agPerRank) {
      SSC_GPU_CHECK(hipStreamWaitEvent(s, ev[1], 0),  // my own rows too
                    "gemm: ordering the GEMM after the copy stream's part");
      SSC_CHECK(gemmGatheredSlot(g, c, slotOff, s));
    } else {
      PeerBatch batch;
      SSC_CHECK(gemmPeersPrepare(g, c, slotOff, use, s, &batch));
      if (batch.ready) SSC_CHECK(gpuStorePeerTable(g, batch, s));
      SSC_CHECK(gemmPeersInPlace(g, c, batch, slotOff, s));
      // x must stay readable until the call ends on the caller's stream.
      SSC_GPU_CHECK(hipStreamWaitEvent(s, ev[1], 0),
                    "gemm: ordering the call's end after the copy stream's part");
    }
    for (int q = 0; q < K; ++q) ops.write(fusedDone(g, q, fi, me), use);
    SSC_CHECK(ops.submit(s));
    g->lastDoneIndex = fi;
    SSC_GPU_CHECK(hipEventRecord(ev[2], s), "gemm: recording the end of an all-gather + GEMM");
    return sscSuccess;
  };
  const sscResult_t r = body();
  ce->track(ev, use, CopyEngine::Kind::kAllGather, r == sscSuccess);
  return r;
}

#endif

sscResult_t ceEarlierTimeout(const CopyEngine* ce) {
  return ce == nullptr ? sscSuccess : ce->earlier();
}

void ceDestroy(CopyEngine* ce) { delete ce; }

}  // namespace ssc::gemm
