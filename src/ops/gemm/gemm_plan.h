// SPDX-License-Identifier: MIT
// The pure shape logic of the fused GEMM-collectives (starscream_ops.h, docs/gemm.md): which rows
// each rank owns, how a call is cut into chunks, which GEMMs a chunk runs and where they read
// and write, the rule that picks the variant, and the 2D-sharding helper's cost rule. No
// memory, no communicator, no device: the host backend and the GPU backend execute the same
// plan, and tests/ops/gemm checks it alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "starscream/starscream_ops.h"

namespace ssc::gemm {

enum class Op { kReduceScatter = 0, kAllGather = 1 };

// The torch.chunk / DTensor Shard(0) rule: c = ceil(m / nranks), rank r owns
// [min(m, r c), min(m, (r + 1) c)).
struct RowRange {
  int64_t first = 0;
  int64_t count = 0;
};
int64_t blockRows(int64_t m, int nranks);
RowRange rowShard(int64_t m, int nranks, int rank);

// The default chunk count of a forced sscGemmChunked call that names none (makePlan): chunks of
// at least kMinChunkBytes of collective, at most kMaxChunks. Not a choice of AUTO's (AUTO never
// chunks unless asked); a default that keeps each chunk's collective well above the size where
// its fixed cost (launch and barriers, tens of microseconds) is most of its time.
constexpr size_t kMinChunkBytes = size_t{16} << 20;
constexpr int kMaxChunks = 8;
constexpr size_t kDefaultWorkspaceBytes = size_t{256} << 20;

struct Problem {
  Op op = Op::kReduceScatter;
  int64_t m = 0, n = 0, k = 0;
  int nranks = 1;
  size_t inBytes = 2;      // element size of x and w
  size_t outBytes = 2;     // element size of y
  bool gatherOut = false;  // all-gather: the caller wants the gathered X too (xGathered)
  // Elements of one row of the collective's buffer: n (reduce-scatter of Y) or k (all-gather of X).
  int64_t width() const { return op == Op::kReduceScatter ? n : k; }
  // Element size of the collective's buffer.
  size_t collBytes() const { return op == Op::kReduceScatter ? outBytes : inBytes; }
};

// How a call runs. Chunk j covers rows [j * chunkRows, min(block, (j + 1) * chunkRows)) of
// every rank's block of `block` rows; its collective moves nranks * rows * width elements laid
// out [rank][rows][width] in a slot of the workspace.
struct Plan {
  sscGemmVariant_t variant = sscGemmUnfused;
  int chunks = 1;
  int64_t block = 0;      // c = ceil(m / nranks)
  int64_t chunkRows = 0;  // rows of each block per chunk (the last chunk may have fewer)
  int slots = 1;          // workspace slots in flight: 2 for the chunked and fused variants
  size_t slotBytes = 0;   // nranks * chunkRows * width * collBytes
  size_t padBytes = 0;    // one rank's chunk: chunkRows * width * collBytes
  // After the pad: room for one chunk's strided side made contiguous (reduce-scatter: the
  // chunk's rows of x, nranks x chunkRows x k inputs; all-gather: its rows of y, nranks x
  // chunkRows x n outputs), so a chunk is ONE vendor GEMM that reads W once instead of a
  // strided batch that reads W once per rank (at small M, where the GEMM is bound by reading W,
  // that costs chunks x nranks reads of W: docs/gemm.md). Chunked and fused plans of more than one
  // chunk; 0 elsewhere (the GPU half then runs a batch, the host half never needs it).
  size_t scratchBytes = 0;
  bool direct = false;  // one rank: the GEMM writes y, no collective, no workspace
  // The fused all-gather (chunks 1: push + one GEMM; chunks = nranks: one GEMM per source rank
  // reading the peers' rows in place, own rows first): the fused all-gather below.
  bool agPerRank = false;
  std::string reason;  // why this variant and chunk count (logged at INFO)
};

// The fused reduce-scatter: each rank's GEMM writes a chunk's partial rows into a slot of its
// registered workspace, sets the chunk's ready flag there; each owner waits for every rank's flag,
// sums its rows straight out of the K slots (peer mappings, no collective call) and sets a done
// flag in each producer's workspace, which the producer waits for before refilling that slot.
// Flags live in a fixed tail after the workspace (same offsets on every rank).
// kFusedMaxRanks is a limit of these data structures, not a tuning rule: the flag arrays below
// hold one word per rank at fixed offsets (done[2][16], from[2][16], readyFrom[2][16] in the
// 4 KiB tail), a wait kernel's warp polls at most 32 flags (two uses of 16 readers), and the
// peer batch's pointer table has room for 15 peers (kPointerTableStride). More ranks need a
// larger tail and table, not a new measurement.
constexpr int kFusedMaxRanks = 16;
constexpr size_t kFusedFlagBytes = 4096;
constexpr size_t kFusedReadyOff = 0;   // uint32 ready[slot]: the producer's chunk use number
constexpr size_t kFusedBellOff = 64;   // uint32: the host backend's futex word for this rank
constexpr size_t kFusedDoneOff = 128;  // uint32 done[slot][owner]: owner finished reading
constexpr size_t kFusedFromOff = 512;  // uint32 from[slot][producer]: the fused all-gather's
                                       // producer wrote (push) or published (per rank) its rows
constexpr size_t kFusedErrOff =
    1024;  // uint32 {code, peer}: a GPU wait timed out (host backend: unused)
constexpr size_t kFusedReadyFromOff =
    1536;  // uint32 readyFrom[use % 2][producer]: SSC_GEMM_COPY_ENGINE's
           // reduce-scatter; each producer writes it in every
           // owner, so every wait reads local memory
constexpr size_t kFusedArriveOff = 2048;  // uint32 arrive[producer]: the arrival barrier's count
                                          // (monotonic: a wait passes at >= the barrier's use)

// The fused all-gather + GEMM: a slot holds the whole gathered X, [nranks x block][k], in each
// rank's registered workspace (two slots when they fit, else one). Two forms:
//  - push, one GEMM (plan.chunks = 1, agPerRank false): each rank stores its rows of X into
//    every rank's slot (peer mappings, one kernel), sets from[slot][me] in each, waits for every
//    from[slot][q] in its own flags, then runs ONE vendor GEMM over its local slot (W read once);
//  - per rank (plan.chunks = nranks, agPerRank true): each rank copies its rows into its own slot
//    only and sets from[slot][me] in every rank; it runs the GEMM of its own rows straight from
//    x (no wait), then waits and runs one GEMM per peer reading that peer's slot in place
//    (no gathered copy of X; W read nranks times).
// Then each rank sets done[slot][me] in every producer's flags; a producer waits for every
// rank's done of a slot's earlier uses (both slots, as the fused reduce-scatter's first chunk
// does) before writing it again. xGathered asks for the push form (the gathered X is there).

// The per-rank all-gather's GEMMs over the peers' rows, read in place from their slots
// (gpu_gemm_fused.cc, gpu_gemm_ce.cc): the peers whose block is full (`block` rows, so one GEMM
// shape) as ONE pointer-array batch of the vendor BLAS where it has one (one launch instead of
// nranks - 1), the
// peer whose block the end of m cuts as a GEMM of its own, peers with no rows not at all. Both
// lists start at rank + 1 and wrap, so the ranks do not all read one peer's slot first. The
// batch where the entries are small: below kPeerBatchMaxRows rows a block, or below
// kPeerBatchMaxFlops an entry, where the launches the batch saves are a large part of the
// entries' time. These two bounds are a property of the vendor library's pointer-array kernels,
// not of a machine's rates: cuBLASLt's are not its fastest at large tiles (on larger entries the
// batch ran 3-60 % slower than one GEMM per peer, on small ones 1.1-1.9x faster). Check them on
// a machine with gemm_coll_perf's ag.fusedpr column (docs/gemm.md) with the bounds moved.
constexpr int64_t kPeerBatchMaxRows = 512;
constexpr double kPeerBatchMaxFlops = 1.5e9;
struct PeerGemms {
  std::vector<int> batched;  // full blocks
  std::vector<int> single;   // a short block (at most one)
  bool batch = false;        // run `batched` as one batch (blocks below kPeerBatchMaxRows rows)
};
PeerGemms peerGemms(const Problem& p, int rank);

// What sscGemmAuto's rule weighs (autoPicksFused): the rates of one rank of the communicator
// while every rank runs the same op, and the fixed costs of what the variants launch. Plain
// numbers, so the rule is a pure function of them and of the call's shape: the ops take them from
// the communicator's tuner (gemm_rates.h), the unit tests feed their own. The reduce-scatter's
// and the all-gather's collective differ, so collFixedUs and collGBps are the call's op's.
struct GemmRates {
  double gemmTflops = 0;   // a rank's dense GEMM rate where the GEMM is compute-bound
  double memGBps = 0;      // a rank's memory rate for a GEMM's operands (W, X, Y)
  double copyGBps = 0;     // a rank's device-to-device copy (bytes copied a second)
  double launchUs = 0;     // one more kernel on the stream
  double syncUs = 0;       // a wait for every rank (one kernel that meets its peers' flags)
  double collFixedUs = 0;  // the call's collective (core sscReduceScatter / sscAllGather): fixed
  double collGBps = 0;     // cost and rate, counting the bytes of its whole buffer (all ranks)
  bool barrier = false;    // the unfused variant waits for every rank before its collective
                           // (STARSCREAM_GEMM_BARRIER, barrierWanted)
  // Every rate > 0: a rule without them picks no fused form.
  bool valid() const;
};

// The rule's estimates for one call (microseconds, one rank; the slowest rank's shape, so every
// rank computes the same numbers). The model, term by term, is in gemm_plan.cc
// (estimateVariants) and docs/gemm.md ("The variant rule").
struct VariantEstimates {
  double unfused = 0;  // the whole GEMM, then the core's collective
  double fused = 0;    // reduce-scatter: fused in one chunk; all-gather: the per-rank form
  double push = 0;     // all-gather: push + one GEMM (reduce-scatter: 0)
};
VariantEstimates estimateVariants(const Problem& p, const GemmRates& r);
// One GEMM launch on the roofline: `entries` GEMMs of rows x n x k in one launch (a batch reads
// W once per entry), at the rates' compute or memory rate, whichever binds, plus one launch.
double estimateGemmLaunchUs(const GemmRates& r, double rows, double n, double k, double entries,
                            size_t inBytes, size_t outBytes);

// Whether sscGemmAuto runs a call fused, given the plan it chose otherwise: only where that is
// one unfused chunk, and a fused form's estimate (estimateVariants) is below unfused's. *perRank:
// which all-gather form (xGathered allows only the push form). Always with waiting kernels:
// SSC_GEMM_COPY_ENGINE's forms run only where the caller's flag asks (each submission of stream
// operations costs the stream more than a one-warp wait). *estimates, when given, receives the
// estimates (for the plan's reason).
bool autoPicksFused(const Problem& p, const Plan& otherwise, const GemmRates& rates, bool* perRank,
                    VariantEstimates* estimates = nullptr);

// Whether the GPU half probes the vendor BLAS's algorithm for each new GEMM shape
// (gpu_gemm_probe.h): mode is STARSCREAM_GEMM_PROBE ("on", "off", "auto"; anything else reads as
// "auto"), mpsPercent CUDA_MPS_ACTIVE_THREAD_PERCENTAGE or null. auto probes when that cap is
// set below 100 %: only there were algorithms seen to leave output unwritten (gpu_gemm_probe.h).
bool probeWanted(const std::string& mode, const char* mpsPercent);

// Whether the GPU half holds each collective of the unfused and chunked variants until every
// rank has reached it in stream order (gpu_gemm_fused.cc, kernelArrivalBarrier): mode is
// STARSCREAM_GEMM_BARRIER ("on", "off", "auto"; anything else reads as "auto"), shared whether
// ranks run on the same compute units (ranksShareComputeUnits). auto holds them where they do:
// there a peer's collective kernel, launched while this rank's GEMM is still queued, spins on SMs
// that GEMM needs and can starve it past STARSCREAM_TIMEOUT (docs/gemm.md, "The arrival
// barrier"). Must come out alike on every rank (the barrier is collective).
bool barrierWanted(const std::string& mode, bool shared);

// Chooses the plan for `requestVariant` (an sscGemmVariant_t) and `requestChunks` (0 or a
// minimum) within workspaceBytes. Returns false with *why set when the call cannot run (the
// workspace cannot hold one row per rank, or the fused variant is asked for where it is not
// built: more than kFusedMaxRanks ranks, an all-gather whose gathered X does not fit one slot
// of the workspace, or fusedAvailable false: the workspace could not be mapped into the peers).
// sscGemmAuto considers the fused variant only when fusedAvailable and `rates` (the machine's,
// autoPicksFused) are given and valid; without them it runs unfused.
bool makePlan(const Problem& p, int requestVariant, int requestChunks, size_t workspaceBytes,
              Plan* plan, std::string* why, bool fusedAvailable = true,
              const GemmRates* rates = nullptr);

struct ChunkRows {
  int64_t begin = 0;  // first row within each block
  int64_t rows = 0;
};
ChunkRows chunkRows(const Plan& plan, int j);

// One GEMM (or a strided batch of equal ones) of a chunk: `rows` rows of A starting at row aRow
// times W into `rows` rows of D starting at dRow, repeated `batch` times with A and D advanced by
// aStride and dStride rows. Reduce-scatter: A = x, D = the chunk's slot. All-gather: A = the
// chunk's slot, D = y.
struct GemmPiece {
  int64_t aRow = 0, dRow = 0, rows = 0;
  int batch = 1;
  int64_t aStride = 0, dStride = 0;
};
// The pieces of chunk j: the ranks whose chunk rows all lie below m as one piece (one GEMM when
// their rows are contiguous), then the one rank whose chunk is cut by m, if any. Ranks past m
// contribute nothing (their slot rows are never read into anything a rank keeps).
std::vector<GemmPiece> chunkPieces(const Problem& p, const Plan& plan, int j);

// This rank's rows of chunk j that it keeps (reduce-scatter output) or sends (all-gather input):
// min(rows, max(0, own - begin)). Fewer than the chunk's rows means the pad buffer is used.
int64_t ownChunkRows(const Problem& p, const Plan& plan, int j, int rank);

// Reference GEMM on the host: y[rows][n] = x[rows][k] w^T (w [n][k], or [k][n] when weightKN),
// fp32 accumulation, inputs bf16/fp16 (inType), y stored as outType (bf16, fp16 or fp32).
// ldy: elements between rows of y.
void hostGemm(const void* x, const void* w, void* y, int64_t rows, int64_t n, int64_t k,
              sscDataType_t inType, sscDataType_t outType, bool weightKN, int64_t ldy);

// The 2D-sharding helper's rule (sscGemmShard2d). Estimates in microseconds. The helper is pure
// arithmetic on its query (no communicator, so no tuner to ask): the caller describes the
// machine in the query, and a figure left 0 takes these defaults, the public API's documented
// ones (starscream_ops.h): one H200's datasheet peak and HBM rate, and an intra-GPU
// reduce-scatter's bus bandwidth and fixed cost at 8 partitions of it (gpu_coll_perf).
struct Machine {
  double peakTflops = 989.0;  // whole-GPU dense bf16
  double hbmGbps = 4800.0;
  double collGbps = 380.0;
  double collLatencyUs = 20.0;
};
constexpr double kShortKPenalty = 512.0;  // a GEMM with depth k costs (1 + 512 / k) x its roofline
double estimateGemmUs(const Machine& mc, int partitions, double m, double n, double k, double elem);
double estimateCollUs(const Machine& mc, int partitions, double bytes);
bool shard2d(const sscGemmShard2dQuery_t& q, sscGemmShard2dPlan_t* plan, std::string* why);

}  // namespace ssc::gemm

namespace ssc::gemm {

// The order of a call's work, all of it on the caller's stream, as the GPU half issues it (the
// host half runs the same list in order). Chunk j's slot is j % plan.slots.
//
// One stream, never a side stream for the GEMMs: a vendor GEMM running beside a kernel that waits
// on the peers (the core's zero-copy collectives, the fused waits) in the same process can hang
// every rank. Under MPS (ranks sharing one GPU's SMs) both overlapped forms did, at random: the
// chunked all-gather (a core kernel's blocks waiting on a rank whose SMs the GEMM held) and the
// fused reduce-scatter of more than one chunk (a producer's GEMM never finishing beside its own
// stream's wait); CUDA_MODULE_LOADING=EAGER did not change it, so it is not lazy loading
// (docs/gemm.md, "The hangs of the overlapped forms"). The overlap had not paid either: the
// chunked variant ran at 0.58-0.65x of unfused.
enum class StepKind {
  kGemm,      // chunk's GEMM pieces (RS: x -> slot; AG: slot -> y)
  kColl,      // chunk's collective (RS: slot -> y or pad; AG: x or pad -> slot)
  kPadIn,     // AG: this rank's rows of the chunk -> pad (it owns fewer than the chunk's rows)
  kPadOut,    // RS: pad -> this rank's rows of y
  kGatherOut  // AG with xGathered: the chunk's gathered rows, slot -> xGathered
};
struct Step {
  StepKind kind;
  int chunk;
};
// Direct (one-rank) plans have no steps. gatherOut: the all-gather's rows are also copied out
// (sscGemmArgs_t.xGathered).
std::vector<Step> schedule(const Problem& p, const Plan& plan, int rank, bool gatherOut = false);

}  // namespace ssc::gemm
