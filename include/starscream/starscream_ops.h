/*
 * Starscream operators over a communicator: sequence-sharded paged attention (issue #17).
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
 * all-gather the partials (sscAllGather on the communicator and stream) and merge them in fp32.
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
 * [batch][heads][head_dim] means element (b, h, i) at ((b * heads) + h) * head_dim + i.
 *
 * Streams: calls on one cache must be issued on one stream (or synchronized in between): the
 * cache keeps small per-call scratch buffers (page lists) that the next call reuses. On the host
 * backend sscKvCacheAppend and sscAttentionDecode finish their work before they return (they
 * first wait for the work already queued on `stream`).
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
 * [p * page_size, (p + 1) * page_size); the rank that owns page p stores those tokens' K and V.
 */
typedef enum {
  /* Page p goes to rank p % nranks: a sequence's pages are dealt out one at a time, so every
     rank holds an equal share (within one page) whatever the length. */
  SSC_KV_PAGE_ROUND_ROBIN = 0,
  /* Runs of block_pages consecutive pages go to one rank, the runs dealt out round-robin:
     page p goes to rank (p / block_pages) % nranks. Fewer, longer runs per rank; the shares
     differ by up to block_pages pages. */
  SSC_KV_CONTIGUOUS = 1,
  /* Not sharded: all pages of sequence s live on rank s % nranks. For sliding-window layers,
     whose window fits one partition: the decode then computes each sequence on one rank, the
     other ranks contribute empty partials, and the merge returns that rank's result unchanged
     (sequences of a batch still spread over the ranks by id). */
  SSC_KV_SEQUENCE_OWNER = 2
} sscKvInterleave_t;

/**
 * KV cache configuration. Initialise with SSC_KV_CACHE_CONFIG_INITIALIZER, then set every field
 * marked "required" (sscKvCacheCreate names the first one left unset or invalid).
 */
typedef struct sscKvCacheConfig_v1 {
  size_t size;          /* sizeof(sscKvCacheConfig_t), set by the initializer */
  unsigned int magic;   /* SSC_KV_CACHE_CONFIG_MAGIC, set by the initializer */
  unsigned int version; /* SSC_VERSION_CODE, set by the initializer */
  int num_kv_heads;     /* required: KV heads stored per token, >= 1 */
  int head_dim;         /* required: 64 or 128 */
  int page_size;        /* required: tokens per page, >= 1 */
  int max_pages;        /* required: pages each rank can hold (its pool), >= 1 */
  int max_seqs;         /* required: sequence ids are 0 .. max_seqs - 1 */
  int max_batch;        /* required: most sequences in one decode call */
  int max_q_heads;      /* required: most query heads in one decode call (sizes the scratch) */
  sscDataType_t dtype;  /* K/V storage: sscBfloat16 (default) or sscFloat16 */
  int interleave;       /* an sscKvInterleave_t; default SSC_KV_PAGE_ROUND_ROBIN */
  int block_pages;      /* SSC_KV_CONTIGUOUS only: pages per run, >= 1 (default 16) */
} sscKvCacheConfig_t;

#define SSC_KV_CACHE_CONFIG_MAGIC 0x53534b56u
#define SSC_KV_CACHE_CONFIG_INITIALIZER                                                      \
  { sizeof(sscKvCacheConfig_t), SSC_KV_CACHE_CONFIG_MAGIC, SSC_VERSION_CODE, 0, 0, 0, 0, 0, 0, \
    0, sscBfloat16, SSC_KV_PAGE_ROUND_ROBIN, 16 }

typedef struct sscKvCache* sscKvCache_t;

/**
 * Creates a KV cache on comm (collective: every rank passes the same configuration). Each rank
 * allocates its page pool, K and V each max_pages * num_kv_heads * page_size * head_dim
 * elements of dtype, laid out [page][kv_head][token in page][head_dim], plus exchange scratch
 * for max_batch * max_q_heads * (head_dim + 1) floats per rank. comm must outlive the cache.
 * Errors: sscInvalidArgument for a bad configuration (the message names the field).
 */
sscResult_t sscKvCacheCreate(sscComm_t comm, const sscKvCacheConfig_t* config,
                             sscKvCache_t* cache);

/**
 * Frees the cache (local). Work queued with it must have finished (synchronize its stream first).
 * NULL is a no-op.
 */
sscResult_t sscKvCacheDestroy(sscKvCache_t cache);

/**
 * Appends num_tokens new tokens: token i goes to the end of sequence seq_ids[i] (host memory,
 * ids in 0 .. max_seqs - 1; tokens of one sequence are appended in the order given). k and v
 * (device memory, the cache's dtype) are [num_tokens][num_kv_heads][head_dim], the same tokens
 * on every rank (16-byte aligned on the GPU backends); each rank stores only the tokens whose
 * page it owns, so appending moves no data between ranks. Fails with sscInvalidUsage,
 * changing nothing on any rank, when a rank's pool would run out of pages (every rank reaches
 * the same verdict from the replicated bookkeeping).
 */
sscResult_t sscKvCacheAppend(sscKvCache_t cache, int num_tokens, const int32_t* seq_ids,
                             const void* k, const void* v, sscStream_t stream);

/** Empties sequence seq_id (length 0) and returns its pages to the pools. */
sscResult_t sscKvCacheReleaseSequence(sscKvCache_t cache, int seq_id);

/** Writes the number of tokens appended to seq_id (since its last release) to *length. */
sscResult_t sscKvCacheSequenceLength(sscKvCache_t cache, int seq_id, int* length);

/** Writes the rank that stores token `position` of sequence seq_id to *rank (placement only:
    the token need not exist yet). */
sscResult_t sscKvCacheTokenOwner(sscKvCache_t cache, int seq_id, int position, int* rank);

/* ---------------------------------------------------------------- attention */

/** sscAttentionDecode flags (bitwise or). */
#define SSC_ATTN_Q_SHARDED_HEADS 0x1   /* q holds this rank's slice of the query heads */
#define SSC_ATTN_OUT_SHARDED_HEADS 0x2 /* out and lse hold only this rank's slice of the heads */

/**
 * One decode step: the attention of one query token per sequence over the tokens cached for it.
 *
 *  - batch sequences, ids seq_ids[0 .. batch-1] (host memory, distinct, 0 .. max_seqs - 1).
 *    Sequence b attends to its tokens [start, L) with L = its current length and start = 0, or
 *    start = max(0, L - window) when window > 0 (sliding window: the last `window` tokens).
 *    A sequence of length 0 gives out = 0 and lse = -inf (or the sink, see below).
 *  - num_q_heads: query heads, a multiple of num_kv_heads (GQA: query head h reads KV head
 *    h / (num_q_heads / num_kv_heads); ratio 1 is multi-head attention), at most max_q_heads.
 *  - q (device memory, dtype io_dtype = sscFloat32, sscFloat16 or sscBfloat16):
 *      without SSC_ATTN_Q_SHARDED_HEADS: [batch][num_q_heads][head_dim], the same on every rank;
 *      with it: [batch][num_q_heads / nranks][head_dim], this rank's heads
 *      [rank * num_q_heads / nranks, (rank + 1) * num_q_heads / nranks) (num_q_heads must be a
 *      multiple of nranks); the slices are all-gathered first.
 *  - scores are scale * dot(q, k) (scale is typically 1 / sqrt(head_dim)).
 *  - sinks: NULL, or float [num_q_heads] (device memory, every head on every rank): an attention
 *    sink logit per head, a term exp(sink) added to the softmax denominator with no value. It is
 *    applied once, in the merge, however many ranks hold tokens.
 *  - out (device memory, io_dtype): [batch][heads][head_dim], lse: NULL or float [batch][heads]
 *    (device memory), the natural-log log-sum-exp of the scaled scores (sink included), where
 *    heads = num_q_heads, or with SSC_ATTN_OUT_SHARDED_HEADS this rank's num_q_heads / nranks
 *    heads (the same slice as above).
 * Errors: sscInvalidArgument for a bad argument (named in the message), sscInvalidUsage for a
 * destroyed communicator, plus whatever the all-gathers report.
 */
sscResult_t sscAttentionDecode(sscKvCache_t cache, const void* q, sscDataType_t io_dtype,
                               int num_q_heads, int batch, const int32_t* seq_ids, float scale,
                               const float* sinks, int window, int flags, void* out, float* lse,
                               sscStream_t stream);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* STARSCREAM_STARSCREAM_OPS_H_ */
