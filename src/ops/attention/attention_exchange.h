// SPDX-License-Identifier: MIT
// Kernels of the fused decode exchange (sscKvExchangeFused; layout and epochs in
// attention_exchange_layout.h): the query slices pushed into every peer's scratch in one
// launch, each rank's partial rows (its split-K partials merged on the way) pushed into the
// scratch of the ranks that return them, and the merge that starts as the rows arrive. Peers'
// scratch is reached through the communicator's registration (mapped pointers). Plain
// declarations: g++ includes this header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/ops/attention/attention_kernel.h"
#include "starscream/starscream.h"

namespace ssc::gpu {

constexpr int kAttnExchangeMaxPeers = kAttnMaxPeers;

// Where waits report: a host-mapped word set to 1 by a wait that passed the timeout (the host
// turns it into sscTimeout on the next call), read by every wait so the others end early too.
struct AttnWaitCtl {
  uint32_t* timedOut;     // device view of the host-mapped word
  uint64_t timeoutTicks;  // sscGpuTimer ticks; 0: no limit
  int deviceScope;        // 1: every rank on this GPU (device-scope release/acquire)
  const uint32_t* abort;  // the communicator's abort word (non-zero: sscCommAbort ran); may be null
};

struct AttnQPushParams {
  const void* q;  // this rank's slice, `bytes` bytes
  size_t bytes;
  size_t chunkBytes;  // block i pushes [i * chunkBytes, ...): exchange.h qChunks
  int chunks;
  int nranks;
  int rank;
  char* peerBase[kAttnExchangeMaxPeers];  // every rank's exchange scratch, mapped here
  size_t qOffset;       // bytes: parity 0's query area (a slice goes at rank * bytes), and
  size_t qParityBytes;  // parity 1's this much further
  size_t qFlagOffset;   // bytes: flag (parity 0, sender 0, chunk 0); qFlagStride per sender,
  size_t qFlagStride;
  size_t qFlagParityBytes;     // parity 1's this much further
  const AttnEpochWord* epoch;  // the call is epoch->done + 1 (attention_kernel.h)
  AttnWaitCtl wait;
};

struct AttnPushParams {
  const float* partials;  // `splits` blocks of [batch][numQHeads][headDim + 1], splitStride apart
  size_t splitStride;
  int splits;
  int batch;
  int numQHeads;
  int headDim;
  AttnPushTarget target;
};

struct AttnRecvMergeParams {
  const float* rows;    // this rank's rows area of parity 0, sender 0
  size_t parityFloats;  // parity 1's rows this much further
  size_t senderStride;
  size_t rowFloats;
  int nranks;
  int batch;
  int numQHeads;
  int outHeads;
  int firstHead;  // head of slot j is firstHead + j
  int headDim;
  const float* sinks;  // [numQHeads] or null
  void* out;           // [batch][outHeads][headDim] of outDtype
  int outDtype;
  float* lse;  // [batch][outHeads] or null
  // The call is epoch->done + 1; this kernel, the call's last, advances epoch->done to it.
  AttnEpochWord* epoch;
  AttnWaitCtl wait;
};

// Each launches on `stream` and fails with sscUnhandledDeviceError (SSC_GPU_FAIL) where the
// launch does.
sscResult_t launchAttnQPush(const AttnQPushParams& p, void* stream);
// The push of p's rows and the merge on arrival of m's slots, one launch (the call's last).
sscResult_t launchAttnPushMerge(const AttnPushParams& p, const AttnRecvMergeParams& m,
                                void* stream);
sscResult_t launchAttnRecvMerge(const AttnRecvMergeParams& p, void* stream);

}  // namespace ssc::gpu
