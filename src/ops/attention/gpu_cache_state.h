// SPDX-License-Identifier: MIT
// The GPU backend's per-cache state (gpu_ops.cc creates it; gpu_prefill.cc uses it too): the
// upload areas of page lists, the split-K scratch, the pool tables of the prefill kernel, the
// fused exchange and the order of calls. Internal to src/ops/attention.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "src/api/api.h"
#include "src/device/services.h"
#include "src/ops/attention/gpu_exchange.h"
#include "src/ops/attention/kv_cache.h"

namespace ssc::attn {

// A host-to-device upload area of fixed size: pinned staging plus a device buffer, and the
// event of the last copy out of the staging (the next upload waits for it before refilling).
// Sizes are fixed at create: growing would mean a device free, which waits for the whole device,
// where another communicator's kernel may be waiting for a peer.
struct Upload {
  DeviceServices* dev = nullptr;  // the backend's, set by create
  void* host = nullptr;
  void* device = nullptr;
  size_t bytes = 0;
  DeviceEvent done = nullptr;

  sscResult_t create(DeviceServices* services, size_t n) {
    dev = services;
    bytes = n;
    SSC_CHECK(dev->hostAlloc(&host, n, false,
                             SSC_DOING("KV cache: allocating {} bytes of pinned staging", n)));
    SSC_CHECK(dev->alloc(&device, n, SSC_DOING("KV cache: allocating a {}-byte upload area", n)));
    SSC_CHECK(dev->eventCreate(&done, "KV cache: creating an upload area's event"));
    return sscSuccess;
  }
  // Teardown returns nothing: a destroy or free that fails leaves nothing for the owner to do.
  void destroy() {
    if (dev == nullptr) return;  // never created
    if (done != nullptr) (void)dev->eventDestroy(done, Doing::quiet());
    if (device != nullptr) (void)dev->free(device, Doing::quiet());
    if (host != nullptr) (void)dev->hostFree(host, Doing::quiet());
  }
  // Copies n <= bytes bytes from src to `device`, in stream order.
  sscResult_t put(const void* src, size_t n, sscStream_t stream) {
    SSC_CHECK(dev->eventSynchronize(done, "KV cache: waiting for the last upload's copy"));
    std::memcpy(host, src, n);
    SSC_CHECK(
        dev->memcpyAsync(device, host, n, CopyKind::kHostToDevice, stream,
                         SSC_DOING("KV cache: uploading {} bytes through pinned staging", n)));
    SSC_CHECK(dev->eventRecord(done, stream, "KV cache: recording an upload's end"));
    return sscSuccess;
  }
};

// The page lists of a decode captured into a CUDA/HIP graph: a buffer of its own that the graph's
// kernels read when they run, refreshed in stream order after every change of the page table
// (refreshGraphLists), so each replay sees its sequences as they are then. Bound to the
// captured call's sequences and window; kept until the cache is destroyed.
struct GraphList {
  std::vector<int32_t> seqs;
  int window = 0;
  Upload spans;
  uint64_t version = 0;  // the page table's version at the last upload
  std::vector<int64_t> starts;
  int32_t longest = 0;  // spans of the longest sequence at the capture (the split-K choice)

  GraphList() = default;
  GraphList(const GraphList&) = delete;
  GraphList& operator=(const GraphList&) = delete;
  ~GraphList() { spans.destroy(); }
};
// Distinct captured decodes one cache keeps lists for (each costs its buffers and a refresh
// per append).
constexpr size_t kMaxGraphLists = 64;

class GpuCacheState {
 public:
  Upload slots;    // int64 [kAppendChunk]: each token's destination row, or -1
  Upload spans;    // int32 [maxBatch + 1] span starts, then [spans][3]
  Upload prefill;  // int32: one prefill round's lists (prefill_plan.h), at most prefillInts
  size_t prefillInts = 0;
  // The prefill kernel's pool tables (AttnPrefillParams::pools), one allocation: this rank's
  // K and V pools (partials), then every rank's K pools and V pools as mapped here (KV side,
  // when the peers' pools are mapped).
  void** poolTable = nullptr;
  size_t maxSpanInts = 0;
  int multiprocessors = 1;
  int fewestMultiprocessors = 1;   // over the communicator's ranks
  float* splitPartials = nullptr;  // [split][batch][heads][headDim + 1]
  size_t splitFloats = 0;
  // The page lists of the last decode, still in spans.device: reused while the page table's
  // version, the sequences and their window starts are unchanged (repeated decodes over the
  // same cache, e.g. one per layer sharing it, skip the host walk and the upload).
  bool listValid = false;
  uint64_t listVersion = 0;
  std::vector<int32_t> listSeqs;
  std::vector<int64_t> listStarts;
  int32_t listLongest = 0;
  // Captured decodes' lists, and the stream of the last append: the refresh after a release or a
  // trim (calls without a stream) goes there, where the replays run (starscream_ops.h).
  std::vector<std::unique_ptr<GraphList>> graphLists;
  sscStream_t appendStream = nullptr;
  bool haveAppendStream = false;
  sscStream_t sideStream = nullptr;  // the first upload of a list, during a capture
  // The fused exchange (sscKvExchangeFused, or AUTO where the peers' scratch maps).
  bool fused = false;
  FusedExchange exchange;
  // The end of the last decode, and its stream: the cache's buffers (partials, the exchange
  // scratch's parities, the query gather) are reused call after call, so a decode on another
  // stream first waits for the last one, as calls on one stream do by stream order.
  DeviceEvent lastDone = nullptr;
  sscStream_t lastStream = nullptr;
  bool haveLast = false;
};

// Re-uploads every captured decode's page lists the page table changed since their last upload,
// on `stream` (in order with the replays that follow).
sscResult_t refreshGraphLists(sscKvCache* c, sscStream_t stream);

// A prefill's rounds on the caller's stream (gpu_prefill.cc), ordered after the cache's last
// call by gpuPrefill.
sscResult_t gpuPrefillRounds(sscKvCache* c, const PrefillArgs& a, sscStream_t stream);

}  // namespace ssc::attn
