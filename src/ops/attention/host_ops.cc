// SPDX-License-Identifier: MIT
// The host backend's half of the KV cache: pools in host memory, partial attention in fp32 on
// the calling thread, the exchanges through the core's sscAllGather on the same communicator.
//
// The host backend runs a collective on the stream's progress thread; the CPU work here needs
// its inputs ready, so each step waits for the stream first. The calls are therefore
// synchronous on this backend (the header says so); the GPU backend queues everything.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "src/api/api.h"
#include "src/ops/attention/kv_cache.h"
#include "src/ops/attention/merge.h"
#include "src/ops/attention/peer_pools.h"
#include "src/ops/attention/prefill_plan.h"

namespace ssc::attn {

namespace {

float loadElem(const void* base, size_t i, sscDataType_t type) {
  switch (type) {
    case sscFloat32: return static_cast<const float*>(base)[i];
    case sscFloat16: return halfToFloat(static_cast<const uint16_t*>(base)[i]);
    default: return bf16ToFloat(static_cast<const uint16_t*>(base)[i]);
  }
}

void storeElem(void* base, size_t i, sscDataType_t type, float x) {
  switch (type) {
    case sscFloat32: static_cast<float*>(base)[i] = x; break;
    case sscFloat16: static_cast<uint16_t*>(base)[i] = floatToHalf(x); break;
    default: static_cast<uint16_t*>(base)[i] = floatToBf16(x); break;
  }
}

// Element offset of row `row` of KV head `head` in pool page `page`.
size_t poolOffset(const sscKvCacheConfig_t& cfg, int32_t page, int head, int32_t row) {
  return ((static_cast<size_t>(page) * cfg.numKvHeads + head) * cfg.pageSize + row) * cfg.headDim;
}

// Every rank's partials (in place in c->partials, count floats a rank) to every rank, then the
// merge of rows [0, rows) of heads [firstHead, firstHead + outHeads): output row r * outHeads + j
// of out and lse, from first row outRow0. The sink is folded in once, here.
sscResult_t exchangeAndMerge(sscKvCache* c, int64_t rows, int H, bool outSharded,
                             const float* sinks, void* out, float* lse, sscDataType_t ioType,
                             int64_t outRow0, sscStream_t stream) {
  sscComm* comm = c->comm;
  const int nranks = comm->nranks, rank = comm->rank, D = c->config.headDim;
  const size_t count = static_cast<size_t>(rows) * H * (D + 1);
  if (nranks > 1) {
    SSC_CHECK(
        sscAllGather(c->partials + rank * count, c->partials, count, sscFloat32, comm, stream));
    SSC_CHECK(c->backend->streamSynchronize(stream));
  }
  const int outHeads = outSharded ? H / nranks : H;
  const int firstHead = outSharded ? rank * outHeads : 0;
  std::vector<float> lses(nranks), merged(D);
  for (int64_t b = 0; b < rows; ++b)
    for (int j = 0; j < outHeads; ++j) {
      const int h = firstHead + j;
      const float* first = c->partials + (static_cast<size_t>(b) * H + h) * (D + 1);
      for (int r = 0; r < nranks; ++r) lses[r] = first[r * count + D];
      const float* sink = sinks != nullptr ? &sinks[h] : nullptr;
      const float l = mergePartials(first, static_cast<int64_t>(count), lses.data(), nranks, D,
                                    sink, merged.data());
      const size_t row = static_cast<size_t>(outRow0 + b) * outHeads + j;
      for (int i = 0; i < D; ++i) storeElem(out, row * D + i, ioType, merged[i]);
      if (lse != nullptr) lse[row] = l;
    }
  return sscSuccess;
}

}  // namespace

sscResult_t hostAppend(sscKvCache* c, int numTokens, const void* k, const void* v,
                       sscStream_t stream) {
  SSC_CHECK(c->backend->streamSynchronize(stream));  // k and v may come from queued work
  const sscKvCacheConfig_t& cfg = c->config;
  const size_t rowBytes = static_cast<size_t>(cfg.headDim) * c->kvElemBytes;
  for (int i = 0; i < numTokens; ++i) {
    const TokenSlot s = c->slots[i];
    if (s.page < 0) continue;  // another rank's token
    for (int h = 0; h < cfg.numKvHeads; ++h) {
      const size_t src = (static_cast<size_t>(i) * cfg.numKvHeads + h) * rowBytes;
      const size_t dst = poolOffset(cfg, s.page, h, s.row) * c->kvElemBytes;
      std::memcpy(static_cast<char*>(c->kPool) + dst, static_cast<const char*>(k) + src, rowBytes);
      std::memcpy(static_cast<char*>(c->vPool) + dst, static_cast<const char*>(v) + src, rowBytes);
    }
  }
  return sscSuccess;
}

sscResult_t hostDecode(sscKvCache* c, const DecodeArgs& a, sscStream_t stream) {
  const sscKvCacheConfig_t& cfg = c->config;
  sscComm* comm = c->comm;
  const int nranks = comm->nranks, rank = comm->rank, D = cfg.headDim, H = a.numQHeads;
  const int group = H / cfg.numKvHeads;
  const int qHeads = a.qSharded ? H / nranks : H;  // heads per rank in q
  SSC_CHECK(c->backend->streamSynchronize(stream));

  // 1. The full query in fp32, [batch][H][D]; sharded slices are all-gathered first, landing
  //    as [rank][batch][qHeads][D].
  const void* qAll = a.q;
  if (a.qSharded) {
    const size_t count = static_cast<size_t>(a.batch) * qHeads * D;
    SSC_CHECK(sscAllGather(a.q, c->qGather, count, a.ioType, comm, stream));
    SSC_CHECK(c->backend->streamSynchronize(stream));
    qAll = c->qGather;
  }
  std::vector<float> q(static_cast<size_t>(a.batch) * H * D);
  for (int b = 0; b < a.batch; ++b)
    for (int h = 0; h < H; ++h) {
      const size_t src =
          ((static_cast<size_t>(h / qHeads) * a.batch + b) * qHeads + h % qHeads) * D;
      for (int i = 0; i < D; ++i)
        q[(static_cast<size_t>(b) * H + h) * D + i] = loadElem(qAll, src + i, a.ioType);
    }

  // 2. This rank's partials over its tokens: [batch][H][D + 1] (output, then LSE), written in
  //    place in its block of the gather buffer.
  const size_t count = partialCount(c, a.batch, H);
  float* mine = c->partials + rank * count;
  std::vector<PageSpan> spans;
  std::vector<float> kRow(D), vRow(D);
  std::vector<PartialAccumulator> acc;
  for (int b = 0; b < a.batch; ++b) {
    const int seq = a.seqIds[b];
    spans.clear();
    c->table->spans(seq, windowStart(c, seq, a.window), &spans);
    for (int kvh = 0; kvh < cfg.numKvHeads; ++kvh) {
      acc.assign(group, PartialAccumulator(D));
      for (const PageSpan& s : spans)
        for (int32_t row = s.rowBegin; row < s.rowEnd; ++row) {
          const size_t off = poolOffset(cfg, s.page, kvh, row);
          for (int i = 0; i < D; ++i) {
            kRow[i] = loadElem(c->kPool, off + i, cfg.dtype);
            vRow[i] = loadElem(c->vPool, off + i, cfg.dtype);
          }
          for (int g = 0; g < group; ++g) {
            const float* qh = &q[(static_cast<size_t>(b) * H + kvh * group + g) * D];
            float dot = 0.0f;
            for (int i = 0; i < D; ++i) dot += qh[i] * kRow[i];
            acc[g].add(a.scale * dot, vRow.data());
          }
        }
      for (int g = 0; g < group; ++g) {
        float* p = mine + (static_cast<size_t>(b) * H + kvh * group + g) * (D + 1);
        p[D] = acc[g].finish(p);
      }
    }
  }

  // 3. Every rank's partials everywhere (in place), then the merge of the heads this rank
  //    returns, the sink folded in once.
  return exchangeAndMerge(c, a.batch, H, a.outSharded, a.sinks, a.out, a.lse, a.ioType, 0, stream);
}

sscResult_t hostPrefill(sscKvCache* c, const PrefillArgs& a, sscStream_t stream) {
  const sscKvCacheConfig_t& cfg = c->config;
  const int nranks = c->comm->nranks, rank = c->comm->rank, D = cfg.headDim, H = a.numQHeads;
  const int group = H / cfg.numKvHeads;
  SSC_CHECK(c->backend->streamSynchronize(stream));
  std::vector<PrefillChunk> chunks;
  planPrefillChunks(a.cuSeqlens, a.lengths.data(), a.batch, a.chunkTokens, &chunks);
  struct OwnedSpan {
    PageSpan s;
    const void *k, *v;
  };
  std::vector<PageSpan> spans;
  std::vector<OwnedSpan> owned;
  std::vector<float> q(static_cast<size_t>(group) * D), kRow(D), vRow(D);
  std::vector<PartialAccumulator> acc;
  bool synced = false;
  for (const PrefillChunk& ch : chunks) {
    // The GPU's split (no SM count bounds it here): partials, or this rank's heads over every
    // rank's pages read through the mapped pools; then the rows of the other heads are empty
    // (LSE -inf) and the same merge as for partials gives each head its one full row.
    const PrefillSplit split =
        choosePrefillSplit(static_cast<PrefillMode>(c->prefillMode), c->peers != nullptr, nranks,
                           rank, H, cfg.numKvHeads, ch.tokens, 0);
    // This rank's partials of the chunk's rows, [token][H][D + 1], causal by position.
    const size_t count = static_cast<size_t>(ch.tokens) * H * (D + 1);
    float* mine = c->partials + rank * count;
    if (split.kvSide && !synced) {  // the peers' appends first (the merge below ends the reads)
      SSC_CHECK(c->peers->barrier(c, stream));
      SSC_CHECK(c->backend->streamSynchronize(stream));
      synced = true;
    }
    if (split.kvSide)
      for (size_t row = 0; row < count; row += D + 1) {
        std::fill(mine + row, mine + row + D, 0.0f);
        mine[row + D] = -INFINITY;
      }
    for (const PrefillPiece& p : ch.pieces) {
      owned.clear();
      for (int o = 0; o < (split.kvSide ? nranks : 1); ++o) {
        const PageTable& t = split.kvSide ? c->peers->table(o) : *c->table;
        spans.clear();
        t.spans(a.seqIds[p.b], prefillWindowStart(p.firstPos, a.window), &spans);
        for (const PageSpan& s : spans)
          owned.push_back({s, split.kvSide ? c->peers->k(o) : c->kPool,
                           split.kvSide ? c->peers->v(o) : c->vPool});
      }
      for (int64_t t = 0; t < p.tokens; ++t) {
        const int64_t token = p.firstToken + t, pos = p.firstPos + t;
        const int64_t start = prefillWindowStart(pos, a.window);
        for (int kvh = split.kvFirst; kvh < split.kvFirst + split.kvHeads; ++kvh) {
          for (int g = 0; g < split.width; ++g)
            for (int i = 0; i < D; ++i)
              q[static_cast<size_t>(g) * D + i] = loadElem(
                  a.q,
                  ((static_cast<size_t>(ch.firstToken + token) * H) + kvh * group + split.offset +
                   g) * D +
                      i,
                  a.ioType);
          acc.assign(split.width, PartialAccumulator(D));
          for (const OwnedSpan& o : owned)
            for (int32_t row = o.s.rowBegin; row < o.s.rowEnd; ++row) {
              const int64_t kvPos = o.s.firstPosition + (row - o.s.rowBegin);
              if (kvPos < start || kvPos > pos) continue;
              const size_t off = poolOffset(cfg, o.s.page, kvh, row);
              for (int i = 0; i < D; ++i) {
                kRow[i] = loadElem(o.k, off + i, cfg.dtype);
                vRow[i] = loadElem(o.v, off + i, cfg.dtype);
              }
              for (int g = 0; g < split.width; ++g) {
                float dot = 0.0f;
                for (int i = 0; i < D; ++i) dot += q[static_cast<size_t>(g) * D + i] * kRow[i];
                acc[g].add(a.scale * dot, vRow.data());
              }
            }
          for (int g = 0; g < split.width; ++g) {
            float* out =
                mine + (static_cast<size_t>(token) * H + kvh * group + split.offset + g) * (D + 1);
            out[D] = acc[g].finish(out);
          }
        }
      }
    }
    // Tokens of the chunk in no piece cannot exist (pieces cover the chunk), so every row is set.
    SSC_CHECK(exchangeAndMerge(c, ch.tokens, H, a.outSharded, a.sinks, a.out, a.lse, a.ioType,
                               ch.firstToken, stream));
  }
  return sscSuccess;
}

}  // namespace ssc::attn
