/* SPDX-License-Identifier: MIT */
/*
 * Starscream operators over a communicator: sequence-sharded paged attention (docs/attention.md)
 * and GEMMs fused with collectives, with the 2D-sharding helper (docs/gemm.md; second half of the
 * file).
 *
 * A KV cache whose pages are spread by sequence position over the ranks of a communicator (the
 * paper's "sequence-length sharding", section IV-C: each KV entry is read once, by the partition
 * that owns it), and attention entry points that run on the same communicator. Pass the
 * communicator of the partitions of one GPU (sscCommSplit with color = the GPU index from
 * sscCommGetRankTopology) to shard each GPU's cache across its partitions, as the paper does;
 * any communicator works: the cache is sharded over all of its ranks.
 *
 * Decode, per call: the query heads are all-gathered when each rank holds a slice of them; each
 * rank computes, in fp32, the attention of every query head over the KV tokens it owns (a
 * partial output and its log-sum-exp, LSE = -inf for a rank that owns none); the ranks
 * exchange the partials (stored straight into the peers that return them, or sscAllGather on
 * the communicator and stream; sscKvExchange_t) and merge them in fp32.
 * The merge is exact (the softmax over all tokens), so the result does not depend on the
 * placement, up to fp32 rounding.
 *
 * Result codes, streams and error messages are the core's (starscream.h): every call returns an
 * sscResult_t, sscGetLastError says why one failed. Memory: "device memory" below is GPU memory
 * on the GPU backends and ordinary host memory on the host backend; "host memory" is always host
 * memory, read before the call returns.
 *
 * Every call on a cache is collective over its communicator: every rank makes the same calls in
 * the same order with the same host arguments (sequence ids, counts, flags); each rank passes
 * its own device buffers. The bookkeeping (sequence lengths, which rank owns which page) is
 * replicated on every rank and needs no communication.
 *
 * Tensor layouts are row-major with the dimensions listed outermost first, e.g.
 * [batch][heads][headDim] means element (b, h, i) at ((b * heads) + h) * headDim + i.
 *
 * Streams: calls on one cache must be issued on one stream (or synchronized in between): the
 * cache keeps small per-call scratch buffers (page lists) that the next call reuses. On the host
 * backend sscKvCacheAppend, sscAttentionDecode and sscAttentionPrefill finish their work before
 * they return (they first wait for the work already queued on `stream`). sscKvCacheAppend and
 * sscAttentionPrefill are refused (sscInvalidUsage, nothing changed) on a stream being captured
 * into a CUDA/HIP graph: each builds its page lists on the host from the cache as it is then, so
 * a replay would reuse stale ones; call them outside the graph. sscAttentionDecode can be
 * captured (GPU backends; see its comment).
 */
#ifndef STARSCREAM_STARSCREAM_OPS_H_
#define STARSCREAM_STARSCREAM_OPS_H_

#include "starscream/starscream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- the KV cache */

/**
 * How the pages of a sequence are placed on the ranks. Page p of a sequence holds its tokens
 * [p * pageSize, (p + 1) * pageSize); the rank that owns page p stores those tokens' K and V.
 */
typedef enum {
  /* Page p goes to rank p % nranks: a sequence's pages are dealt out one at a time, so every
     rank holds an equal share (within one page) whatever the length. */
  sscKvPageRoundRobin = 0,
  /* Runs of blockPages consecutive pages go to one rank, the runs dealt out round-robin:
     page p goes to rank (p / blockPages) % nranks. Fewer, longer runs per rank; the shares
     differ by up to blockPages pages. */
  sscKvContiguous = 1,
  /* Not sharded: all pages of sequence s live on rank s % nranks. For sliding-window layers,
     whose window fits one partition: the decode then computes each sequence on one rank, the
     other ranks contribute empty partials, and the merge returns that rank's result unchanged
     (sequences of a batch still spread over the ranks by id). The window fits one partition
     because sscKvCacheTrimSequence frees the pages that fell out of it. */
  sscKvSequenceOwner = 2
} sscKvInterleave_t;

/**
 * How the ranks of a decode exchange queries and partial results.
 */
typedef enum {
  /* sscKvExchangeFused where the peers' exchange scratch maps (every rank decides alike), else
     sscKvExchangeAllGather. */
  sscKvExchangeAuto = 0,
  /* Through the communicator's sscAllGather: one for the query slices (sharded heads only),
     one for the partials, then a merge kernel. */
  sscKvExchangeAllGather = 1,
  /* No collective call: each rank stores its partial rows straight into the exchange scratch
     of the ranks that return those heads (every rank, or the head's owner with
     SSC_ATTN_OUT_SHARDED_HEADS), each row with a per-call flag, and the merge starts on
     arrival; query slices travel the same way in one launch. The cache registers its scratch
     on the communicator (sscCommRegister) at create. Refused by sscKvCacheCreate with
     sscInvalidUsage where peers' memory cannot be mapped (host backend, several nodes). */
  sscKvExchangeFused = 2
} sscKvExchange_t;

/**
 * KV cache configuration. Initialise with SSC_KV_CACHE_CONFIG_INITIALIZER, then set every field
 * marked "required" (sscKvCacheCreate names the first one left unset or invalid).
 */
typedef struct sscKvCacheConfig_v1 {
  size_t size;                  /* sizeof(sscKvCacheConfig_t), set by the initializer */
  unsigned int magic;           /* SSC_KV_CACHE_CONFIG_MAGIC, set by the initializer */
  unsigned int version;         /* SSC_VERSION_CODE, set by the initializer */
  int numKvHeads;               /* required: KV heads stored per token, >= 1 */
  int headDim;                  /* required: 64 or 128 */
  int pageSize;                 /* required: tokens per page, >= 1 */
  int maxPages;                 /* required: pages each rank can hold (its pool), >= 1 */
  int maxSeqs;                  /* required: sequence ids are 0 .. maxSeqs - 1 */
  int maxBatch;                 /* required: most sequences in one decode call */
  int maxQHeads;                /* required: most query heads in one decode call */
  sscDataType_t dtype;          /* K/V storage: sscBfloat16 (default) or sscFloat16 */
  sscKvInterleave_t interleave; /* page placement (default sscKvPageRoundRobin) */
  int blockPages;               /* sscKvContiguous only: pages per run, >= 1 (default 16) */
  sscKvExchange_t exchange;     /* how a decode's ranks exchange (default sscKvExchangeAuto) */
} sscKvCacheConfig_t;

#define SSC_KV_CACHE_CONFIG_MAGIC 0x53534b56u
#define SSC_KV_CACHE_CONFIG_INITIALIZER                                                           \
  {                                                                                               \
    sizeof(sscKvCacheConfig_t), SSC_KV_CACHE_CONFIG_MAGIC, SSC_VERSION_CODE, 0, 0, 0, 0, 0, 0, 0, \
        sscBfloat16, sscKvPageRoundRobin, 16, sscKvExchangeAuto                                   \
  }

typedef struct sscKvCache* sscKvCache_t;

/**
 * Creates a KV cache on comm (collective: every rank passes the same configuration). Each rank
 * allocates its page pool, K and V each maxPages * numKvHeads * pageSize * headDim
 * elements of dtype, laid out [page][kv_head][token in page][headDim], plus exchange scratch
 * for maxBatch * maxQHeads * (headDim + 1) floats per rank; with the fused exchange also a
 * registered scratch of about 2 * nranks * maxBatch * maxQHeads * (headDim + 4) floats plus
 * two query areas. comm must outlive the cache.
 * Errors: sscInvalidArgument for a bad configuration (the message names the field),
 * sscInvalidUsage for sscKvExchangeFused where it cannot run.
 */
SSC_EXPORT sscResult_t sscKvCacheCreate(sscComm_t comm, const sscKvCacheConfig_t* config,
                                        sscKvCache_t* cache);

/**
 * Frees the cache (local). Work queued with it must have finished (synchronize its stream first).
 * NULL is a no-op.
 */
SSC_EXPORT sscResult_t sscKvCacheDestroy(sscKvCache_t cache);

/**
 * Appends numTokens new tokens: token i goes to the end of sequence seqIds[i] (host memory,
 * ids in 0 .. maxSeqs - 1; tokens of one sequence are appended in the order given). k and v
 * (device memory, the cache's dtype) are [numTokens][numKvHeads][headDim], the same tokens
 * on every rank (16-byte aligned on the GPU backends); each rank stores only the tokens whose
 * page it owns, so appending moves no data between ranks. Fails with sscInvalidUsage,
 * changing nothing on any rank, when a rank's pool would run out of pages (every rank reaches
 * the same verdict from the replicated bookkeeping).
 */
SSC_EXPORT sscResult_t sscKvCacheAppend(sscKvCache_t cache, int numTokens, const int32_t* seqIds,
                                        const void* k, const void* v, sscStream_t stream);

/** Empties sequence seqId (length 0) and returns its pages to the pools; clears its trim. */
SSC_EXPORT sscResult_t sscKvCacheReleaseSequence(sscKvCache_t cache, int seqId);

/**
 * Forgets the tokens of sequence seqId before `position`, for a sliding-window layer whose
 * oldest tokens fell out of the window: the pages holding only such tokens go back to their
 * ranks' pools, so a sliding-window sequence keeps about window / pageSize + 1 pages however
 * long it grows. Positions, the length and the placement stay as they were; appends continue at
 * the end. Every rank makes the same calls (as for sscKvCacheAppend), so the replicated
 * bookkeeping agrees. Afterwards a decode or prefill of seqId whose window reaches below
 * `position` (window 0, the whole sequence, included) fails with sscInvalidUsage. A position at
 * or below an earlier trim changes nothing; a position outside 0 .. the sequence's length is
 * sscInvalidArgument. As after a release, the next append may reuse the freed pages: work that
 * still reads them on another stream must have finished.
 */
SSC_EXPORT sscResult_t sscKvCacheTrimSequence(sscKvCache_t cache, int seqId, int position);

/** Writes the number of tokens appended to seqId (since its last release) to *length. */
SSC_EXPORT sscResult_t sscKvCacheSequenceLength(sscKvCache_t cache, int seqId, int* length);

/** Writes the rank that stores token `position` of sequence seqId to *rank (placement only:
    the token need not exist yet). */
SSC_EXPORT sscResult_t sscKvCacheTokenOwner(sscKvCache_t cache, int seqId, int position, int* rank);

/* ---------------------------------------------------------------- attention */

/** Flags of sscAttentionDecode and sscAttentionPrefill: 0 or a bitwise or of these. */
#define SSC_ATTN_Q_SHARDED_HEADS 0x1   /* q holds this rank's slice of the query heads */
#define SSC_ATTN_OUT_SHARDED_HEADS 0x2 /* out and lse hold only this rank's slice of the heads */

/**
 * One decode step: the attention of one query token per sequence over the tokens cached for it.
 *
 *  - batch sequences, ids seqIds[0 .. batch-1] (host memory, distinct, 0 .. maxSeqs - 1).
 *    Sequence b attends to its tokens [start, L) with L = its current length and start = 0, or
 *    start = max(0, L - window) when window > 0 (sliding window: the last `window` tokens).
 *    A sequence of length 0 gives out = 0 and lse = -inf (or the sink, see below).
 *  - numQHeads: query heads, a multiple of numKvHeads (GQA: query head h reads KV head
 *    h / (numQHeads / numKvHeads); ratio 1 is multi-head attention), at most maxQHeads.
 *  - q (device memory, dtype ioDtype = sscFloat32, sscFloat16 or sscBfloat16):
 *      without SSC_ATTN_Q_SHARDED_HEADS: [batch][numQHeads][headDim], the same on every rank;
 *      with it: [batch][numQHeads / nranks][headDim], this rank's heads
 *      [rank * numQHeads / nranks, (rank + 1) * numQHeads / nranks) (numQHeads must be a
 *      multiple of nranks); the slices are all-gathered first.
 *  - scores are scale * dot(q, k) (scale is typically 1 / sqrt(headDim)).
 *  - sinks: NULL, or float [numQHeads] (device memory, every head on every rank): an attention
 *    sink logit per head, a term exp(sink) added to the softmax denominator with no value. It is
 *    applied once, in the merge, however many ranks hold tokens.
 *  - out (device memory, ioDtype): [batch][heads][headDim], lse: NULL or float [batch][heads]
 *    (device memory), the natural-log log-sum-exp of the scaled scores (sink included), where
 *    heads = numQHeads, or with SSC_ATTN_OUT_SHARDED_HEADS this rank's numQHeads / nranks
 *    heads (the same slice as above).
 * Errors: sscInvalidArgument for a bad argument (named in the message), sscInvalidUsage for a
 * destroyed communicator, plus whatever the all-gathers report. With the fused exchange a wait
 * for a peer's rows is bounded by STARSCREAM_TIMEOUT: a rank whose peer never sent (a rank that
 * skipped the call) writes NaN rows and its next call on the cache fails with sscTimeout.
 *
 * Graphs: on the GPU backends a decode may be captured into a CUDA/HIP graph (as serving engines
 * capture their decode step). The graph is bound to the call's seqIds, window, flags and
 * buffers; each replay reads those sequences as they are when it runs: every sscKvCacheAppend
 * (made outside the graph) refreshes the bound page lists on its stream, so replays must run on
 * the stream of the appends or be ordered after them, and sscKvCacheReleaseSequence and
 * sscKvCacheTrimSequence refresh them on the stream of the last append. A trim below a captured
 * decode's window start (any trim, for window 0) is refused with sscInvalidUsage. Every rank
 * replays the same graphs the same number of times, as with any collective. The split-K shape
 * is fixed at the capture, from the lengths then. At most 64 distinct captured decodes (sequence
 * lists and windows) per cache; their page lists are kept until the cache is destroyed, which
 * must come after the graphs' last replay. The host backend refuses a captured decode.
 */
SSC_EXPORT sscResult_t sscAttentionDecode(sscKvCache_t cache, const void* q, sscDataType_t ioDtype,
                                          int numQHeads, int batch, const int32_t* seqIds,
                                          float scale, const float* sinks, int window, int flags,
                                          void* out, float* lse, sscStream_t stream);

/**
 * Prefill (chunked prefill): causal attention of a chunk of new query tokens per sequence over
 * everything cached for the sequence, the chunk included. Variable lengths in one batch, given
 * as FlashAttention's varlen API and vLLM give them (their cu_seqlens, here cuSeqlens).
 *
 *  - The chunk's K and V must be in the cache already (sscKvCacheAppend first, every new token
 *    of the batch): sequence b's chunk is its last n_b = cuSeqlens[b + 1] - cuSeqlens[b]
 *    tokens, at positions [L - n_b, L) with L = its current length (n_b <= L; n_b = 0 is
 *    allowed). A prefix cached by earlier calls is attended to as well (chunked prefill).
 *  - batch sequences, ids seqIds[0 .. batch-1] (host memory, distinct, 0 .. maxSeqs - 1);
 *    cuSeqlens: host memory, batch + 1 non-decreasing offsets with cuSeqlens[0] = 0;
 *    T = cuSeqlens[batch] query tokens in all.
 *  - Query token i of sequence b (position p) attends to positions [start, p] with start = 0,
 *    or start = max(0, p + 1 - window) when window > 0 (the last `window` tokens, itself
 *    included: the decode's rule for its one token).
 *  - numQHeads, scale, sinks (applied once, in the merge) and ioDtype as sscAttentionDecode.
 *  - q (device memory, ioDtype): [T][numQHeads][headDim], the same on every rank (queries
 *    are replicated: each rank computes every query token over its own KV pages).
 *  - out (device memory, ioDtype): [T][heads][headDim]; lse: NULL or float [T][heads], where
 *    heads = numQHeads, or this rank's numQHeads / nranks heads with
 *    SSC_ATTN_OUT_SHARDED_HEADS (the only flag taken: SSC_ATTN_Q_SHARDED_HEADS is refused).
 *  - Sliding-window layers: use a cache with sscKvSequenceOwner (not sharded), as for decode.
 * Each rank computes a partial output and LSE per (token, head) over its pages, then the ranks
 * exchange and merge them as a decode does, with rows = tokens x heads, in pieces of at most
 * maxBatch * maxQHeads / numQHeads tokens (the exchange scratch sized at create).
 * Errors: as sscAttentionDecode; sscInvalidArgument also for bad cuSeqlens or a chunk longer
 * than its sequence.
 */
SSC_EXPORT sscResult_t sscAttentionPrefill(sscKvCache_t cache, const void* q, sscDataType_t ioDtype,
                                           int numQHeads, int batch, const int32_t* seqIds,
                                           const int32_t* cuSeqlens, float scale,
                                           const float* sinks, int window, int flags, void* out,
                                           float* lse, sscStream_t stream);

/* ---------------------------------------------------------------- GEMM + collectives */
/*
 * Linear layers whose matrix product and the collective after (or before) it run as one call on
 * a communicator and a stream: GEMM + reduce-scatter (a row-parallel layer: each rank holds a
 * K-slice of the inputs and of the weight, the partial products are summed and each rank keeps
 * its rows of the sum) and all-gather + GEMM (each rank holds some rows of X, every rank needs
 * all of them times its own weight). Pass the communicator of the partitions of one GPU to run
 * the intra-GPU level of a 2D sharding (sscGemmShard2d says which op and which dimension).
 *
 * Math: Y = X W^T with W stored [N][K] as nn.Linear stores its weight (Y = x @ weight.T), or
 * Y = X W with W stored [K][N] (flag SSC_GEMM_WEIGHT_KN). Inputs bf16 or fp16, products
 * accumulated in fp32, Y written as the input type or as fp32 (outDtype). Every matrix is
 * dense row-major ([rows][cols], element (i, j) at i * cols + j). Any M, N, K >= 0.
 *
 * Rows of an M-row matrix over nranks ranks (sscGemmRowShard): PyTorch's torch.chunk /
 * DTensor Shard(0) rule. With c = ceil(M / nranks), rank r owns rows
 * [min(M, r * c), min(M, (r + 1) * c)): every rank but the last ones holds c rows, a rank may
 * hold fewer or none when M is not a multiple of nranks (M = 10 over 4 ranks: 3, 3, 3, 1).
 *
 * Reduce-scatter precision: each rank's partial product is rounded to outDtype before the
 * reduction (as a bf16 reduce-scatter in PyTorch does after the GEMM); the reduction itself
 * accumulates in fp32. With outDtype = sscFloat32 nothing is rounded before the end.
 *
 * Both ops are collective over the context's communicator: every rank calls with the same m, n,
 * k, types, flags, variant and chunks, and its own pointers (device memory on the GPU backends).
 * Calls on one context must be issued on one stream (or synchronized in between): the context
 * owns the scratch they use. The GPU backend queues everything on `stream` and never waits for
 * the device, but for one thing: where STARSCREAM_GEMM_PROBE is on (docs/environment.md), the
 * first call that runs a new GEMM shape waits for `stream` once while it checks the vendor BLAS's
 * algorithm (such a call on a stream being captured into a graph fails with sscInvalidUsage: run
 * it once before capturing). The host backend finishes before returning.
 */

/** Rows [*firstRow, *firstRow + *numRows) of an m-row matrix owned by rank of nranks (the
    rule above). */
SSC_EXPORT sscResult_t sscGemmRowShard(int64_t m, int nranks, int rank, int64_t* firstRow,
                                       int64_t* numRows);

/** How a call runs. */
typedef enum {
  /* The rule in docs/gemm.md: a fused form where its time, estimated from the communicator's
     rates and the call's shape, is below unfused's, else unfused; chunked when args.chunks >= 2
     asks. */
  sscGemmAuto = 0,
  /* The whole GEMM, then the whole collective, on `stream`. */
  sscGemmUnfused = 1,
  /* Row chunks, each its GEMM and its collective in turn (no overlap within a rank). */
  sscGemmChunked = 2,
  /* Up to 16 ranks, no collective call; the context's workspace is mapped into the peers and
     per-chunk flags order the ranks. sscGemmReduceScatter: each rank's GEMM writes a chunk into
     its workspace and each owner sums its rows out of every rank's slot. sscAllGatherGemm:
     chunks 0 or 1: each rank stores its rows of X into every rank's workspace, then one GEMM over
     the gathered X; chunks >= 2: one GEMM for its own rows first (no wait), then the peers' rows
     read in place from their workspaces (small blocks as one batched GEMM); xGathered selects
     the first form; the workspace must hold the gathered X (m x k inputs). Refused with
     sscInvalidUsage where it cannot run (more ranks, a backend that cannot map the workspace, a
     workspace too small for the gathered X, a stream being captured into a graph, whose replay
     its per-call flags would not order; sscGemmAuto runs unfused there). */
  sscGemmFused = 3
} sscGemmVariant_t;

/** The two ops, as sscGemmQueryPlan and sscGemmShard2d name them. */
typedef enum {
  sscGemmOpReduceScatter = 0, /* sscGemmReduceScatter */
  sscGemmOpAllGather = 1      /* sscAllGatherGemm */
} sscGemmOp_t;

/** Flags of sscGemmArgs_t: 0 or a bitwise or of these. */
/* w is stored [K][N] (Y = X W) instead of [N][K] (Y = X W^T). */
#define SSC_GEMM_WEIGHT_KN 0x1
/* sscGemmFused (or sscGemmAuto where it runs fused): the ranks order themselves with stream
   memory operations instead of waiting kernels, and the all-gather's rows move by copy engine on
   a stream of the context's, so no kernel of the op waits on a peer and the partition's SMs run
   only the GEMMs (and the reduce-scatter's sum). Its waits have no timeout of their own: a
   watchdog thread releases them after STARSCREAM_TIMEOUT or an abort, and the next call fails
   with sscTimeout. Refused (sscInvalidUsage) on a stream being captured into a graph and where
   the driver lacks stream memory operations; other variants ignore it. */
#define SSC_GEMM_COPY_ENGINE 0x2

/** sscGemmArgs_t.outDtype value: Y has the input type. */
#define SSC_GEMM_OUT_AS_INPUT ((sscDataType_t)-1)

/** Context configuration: SSC_GEMM_CONFIG_INITIALIZER, then change what you need. */
typedef struct sscGemmConfig_v1 {
  size_t size;           /* sizeof(sscGemmConfig_t), set by the initializer */
  unsigned int magic;    /* SSC_GEMM_CONFIG_MAGIC, set by the initializer */
  unsigned int version;  /* SSC_VERSION_CODE, set by the initializer */
  size_t workspaceBytes; /* per-rank scratch for the chunks (two slots of one chunk each plus one
                            rank's chunk); 0 = 256 MiB. A call whose whole collective does not
                            fit a slot runs in more chunks. The same on every rank (the fused
                            variant reads the peers' slots at its own offsets). */
} sscGemmConfig_t;

#define SSC_GEMM_CONFIG_MAGIC 0x5353474du
#define SSC_GEMM_CONFIG_INITIALIZER \
  { sizeof(sscGemmConfig_t), SSC_GEMM_CONFIG_MAGIC, SSC_VERSION_CODE, 0 }

/** One call's arguments: SSC_GEMM_ARGS_INITIALIZER, then set m, n, k, x, w, y (and dtype). */
typedef struct sscGemmArgs_v1 {
  size_t size;            /* sizeof(sscGemmArgs_t), set by the initializer */
  unsigned int magic;     /* SSC_GEMM_ARGS_MAGIC, set by the initializer */
  unsigned int version;   /* SSC_VERSION_CODE, set by the initializer */
  int64_t m, n, k;        /* the global M; N and K as this rank's x and w have them (below) */
  sscDataType_t dtype;    /* x and w: sscBfloat16 (default) or sscFloat16 */
  sscDataType_t outDtype; /* y: SSC_GEMM_OUT_AS_INPUT (default) or sscFloat32 */
  const void* x;
  const void* w;
  void* y;
  int flags;                /* 0, SSC_GEMM_WEIGHT_KN, SSC_GEMM_COPY_ENGINE or both (|) */
  sscGemmVariant_t variant; /* default sscGemmAuto */
  int chunks;               /* 0: chosen by the rule; >= 1: this many (capped at one row of a
                               rank's block per chunk, raised where the workspace needs it); with
                               sscGemmAuto, 2 or more selects the chunked variant */
  void* xGathered;          /* sscAllGatherGemm only: NULL, or [m][k] (the input type) that
                               receives the gathered X as well (sequence-parallel backward needs
                               it); x may point at this rank's rows inside it (in place). Costs
                               one device copy of X per call. */
  const void* bias;         /* NULL, or [n] of y's type (nn.Linear's bias): added to every row of
                               y in fp32 and rounded to y's type once more (one pass over the rows
                               y holds). sscGemmReduceScatter: the layer's bias, the same on every
                               rank, added once to the sum; sscAllGatherGemm: this rank's N-slice
                               of it. Arguments whose size ends at xGathered (no bias field) mean
                               NULL. */
} sscGemmArgs_t;

#define SSC_GEMM_ARGS_MAGIC 0x53534741u
#define SSC_GEMM_ARGS_INITIALIZER                                                       \
  {                                                                                     \
    sizeof(sscGemmArgs_t), SSC_GEMM_ARGS_MAGIC, SSC_VERSION_CODE, 0, 0, 0, sscBfloat16, \
        SSC_GEMM_OUT_AS_INPUT, 0, 0, 0, 0, sscGemmAuto, 0, 0, 0                         \
  }

typedef struct sscGemmContext* sscGemm_t;

/** Creates a context on comm (local: no communication): scratch, and on the GPU backends the
    BLAS handle (cuBLASLt / hipBLASLt) and a stream for its own setup copies. comm must outlive
    it. */
SSC_EXPORT sscResult_t sscGemmCreate(sscComm_t comm, const sscGemmConfig_t* config,
                                     sscGemm_t* gemm);
/** Frees it; work queued with it must have finished. NULL is a no-op. */
SSC_EXPORT sscResult_t sscGemmDestroy(sscGemm_t gemm);

/**
 * GEMM + reduce-scatter. x: [m][k] (this rank's K-slice of the inputs), w: [n][k] ([k][n] with
 * SSC_GEMM_WEIGHT_KN), y: [rows][n], this rank's rows (sscGemmRowShard(m, nranks, rank)) of
 * sum over ranks of x w^T. A rank that owns no rows may pass y = NULL.
 */
SSC_EXPORT sscResult_t sscGemmReduceScatter(sscGemm_t gemm, const sscGemmArgs_t* args,
                                            sscStream_t stream);

/**
 * All-gather + GEMM. x: [rows][k], this rank's rows (sscGemmRowShard(m, nranks, rank)) of the
 * full X [m][k] (NULL allowed when it owns none); w: [n][k] ([k][n] with SSC_GEMM_WEIGHT_KN);
 * y: [m][n] = X w^T with X gathered from every rank.
 */
SSC_EXPORT sscResult_t sscAllGatherGemm(sscGemm_t gemm, const sscGemmArgs_t* args,
                                        sscStream_t stream);

/** Which variant and how many chunks a call of op with these arguments would run (and runs:
    the ops call this). */
SSC_EXPORT sscResult_t sscGemmQueryPlan(sscGemm_t gemm, sscGemmOp_t op, const sscGemmArgs_t* args,
                                        sscGemmVariant_t* variant, int* chunks);

/* ---------------------------------------------------------------- the 2D-sharding helper */

/** The inter-GPU sharding of a linear layer (Megatron's names). */
typedef enum {
  sscLinearColumnParallel = 0, /* W split by output features N over the GPUs */
  sscLinearRowParallel = 1     /* W split by input features K over the GPUs */
} sscLinearParallel_t;

/** The question: SSC_GEMM_SHARD2D_QUERY_INITIALIZER, then set inter, m, n, k, partitions. */
typedef struct sscGemmShard2dQuery_v1 {
  size_t size;               /* sizeof(sscGemmShard2dQuery_t), set by the initializer */
  unsigned int magic;        /* SSC_GEMM_SHARD2D_QUERY_MAGIC, set by the initializer */
  unsigned int version;      /* SSC_VERSION_CODE, set by the initializer */
  sscLinearParallel_t inter; /* the layer's inter-GPU sharding */
  int64_t m, n, k;           /* the per-GPU problem after the inter-GPU sharding:
                                Y[m][n] = X[m][k] W^T */
  int partitions;            /* partitions of one GPU (ranks of the intra-GPU communicator), >= 1 */
  int elemBytes;             /* bytes per element of X, W, Y (default 2) */
  /* The machine the cost rule weighs (the helper is pure arithmetic, with no communicator to
     ask): whole-GPU dense peak, HBM bandwidth, the intra-GPU collective's bus bandwidth and fixed
     cost per call. Set them for the GPU at hand; 0 takes the defaults listed in docs/gemm.md. */
  double peakTflops, hbmGbps, collGbps, collLatencyUs;
} sscGemmShard2dQuery_t;

#define SSC_GEMM_SHARD2D_QUERY_MAGIC 0x53533244u
#define SSC_GEMM_SHARD2D_QUERY_INITIALIZER                                         \
  {                                                                                \
    sizeof(sscGemmShard2dQuery_t), SSC_GEMM_SHARD2D_QUERY_MAGIC, SSC_VERSION_CODE, \
        sscLinearColumnParallel, 0, 0, 0, 1, 2, 0.0, 0.0, 0.0, 0.0                 \
  }

/** The answer: SSC_GEMM_SHARD2D_PLAN_INITIALIZER; sscGemmShard2d fills the rest. */
typedef struct sscGemmShard2dPlan_v1 {
  size_t size;          /* sizeof(sscGemmShard2dPlan_t), set by the initializer */
  unsigned int magic;   /* SSC_GEMM_SHARD2D_PLAN_MAGIC, set by the initializer */
  unsigned int version; /* SSC_VERSION_CODE, set by the initializer */
  int twoD;             /* 1: the dimension orthogonal to the inter-GPU one is split (2D); 0:
                           the inter-GPU dimension is split further (1D) */
  sscGemmOp_t op;       /* the op each partition calls on its GPU's communicator:
                           sscGemmOpReduceScatter splits K over the partitions,
                           sscGemmOpAllGather splits N */
  int64_t m, n, k;      /* the op's m, n, k on partition 0 (the split one from sscGemmRowShard:
                           partition p gets sscGemmRowShard(dim, partitions, p) of it) */
  double estUs;         /* the rule's estimate for the choice (GEMM + unfused collective) */
  double otherEstUs;    /* and for the other option */
} sscGemmShard2dPlan_t;

#define SSC_GEMM_SHARD2D_PLAN_MAGIC 0x53533250u
#define SSC_GEMM_SHARD2D_PLAN_INITIALIZER                                           \
  {                                                                                 \
    sizeof(sscGemmShard2dPlan_t), SSC_GEMM_SHARD2D_PLAN_MAGIC, SSC_VERSION_CODE, 0, \
        sscGemmOpReduceScatter, 0, 0, 0, 0.0, 0.0                                   \
  }

/**
 * The intra-GPU sharding of a linear layer (pure arithmetic, no communicator). The two options
 * compute the same FLOPs: split K and call sscGemmReduceScatter (partials [m][n] reduced), or
 * split N and call sscAllGatherGemm (X [m][k] gathered). For a column-parallel layer the first
 * is the 2D one (K is orthogonal to its inter-GPU N split), for a row-parallel layer the second.
 * The rule (docs/gemm.md) estimates each as roofline GEMM time with a short-K penalty plus the
 * collective's bytes over collGbps, and picks the cheaper.
 */
SSC_EXPORT sscResult_t sscGemmShard2d(const sscGemmShard2dQuery_t* query,
                                      sscGemmShard2dPlan_t* plan);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* STARSCREAM_STARSCREAM_OPS_H_ */
