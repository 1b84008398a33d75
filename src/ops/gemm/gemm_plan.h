// The pure shape logic of the fused GEMM-collectives (starscream_ops.h, issue #18): which rows
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

// The rule's thresholds (docs/gemm.md). A chunk's collective below kMinChunkBytes spends too
// much of its time in the collective's fixed cost (about 20 us per call at 8 partitions of an
// H200, perf/RESULTS.md) for the overlap to pay it back.
constexpr size_t kMinChunkBytes = size_t{16} << 20;
constexpr int kMaxChunks = 8;
constexpr size_t kDefaultWorkspaceBytes = size_t{256} << 20;

struct Problem {
  Op op = Op::kReduceScatter;
  int64_t m = 0, n = 0, k = 0;
  int nranks = 1;
  size_t inBytes = 2;   // element size of x and w
  size_t outBytes = 2;  // element size of y
  bool gatherOut = false;  // all-gather: the caller wants the gathered X too (x_gathered)
  // Elements of one row of the collective's buffer: n (reduce-scatter of Y) or k (all-gather of X).
  int64_t width() const { return op == Op::kReduceScatter ? n : k; }
  // Element size of the collective's buffer.
  size_t collBytes() const { return op == Op::kReduceScatter ? outBytes : inBytes; }
};

// How a call runs. Chunk j covers rows [j * chunkRows, min(block, (j + 1) * chunkRows)) of
// every rank's block of `block` rows; its collective moves nranks * rows * width elements laid
// out [rank][rows][width] in a slot of the workspace.
struct Plan {
  sscGemmVariant_t variant = SSC_GEMM_UNFUSED;
  int chunks = 1;
  int64_t block = 0;      // c = ceil(m / nranks)
  int64_t chunkRows = 0;  // rows of each block per chunk (the last chunk may have fewer)
  int slots = 1;          // workspace slots in flight: 2 for the chunked and fused variants
  size_t slotBytes = 0;   // nranks * chunkRows * width * collBytes
  size_t padBytes = 0;    // one rank's chunk: chunkRows * width * collBytes
  // After the pad: room for one chunk's strided side made contiguous (reduce-scatter: the
  // chunk's rows of x, nranks x chunkRows x k inputs; all-gather: its rows of y, nranks x
  // chunkRows x n outputs), so a chunk is ONE vendor GEMM that reads W once instead of a
  // strided batch that reads W once per rank (what made the chunked variant 2-10x slower than
  // unfused, perf/RESULTS.md session 6). Chunked and fused plans of more than one chunk; 0
  // elsewhere (the GPU half then runs a batch, the host half never needs it).
  size_t scratchBytes = 0;
  bool direct = false;    // one rank: the GEMM writes y, no collective, no workspace
  // The fused all-gather (chunks 1: push + one GEMM; chunks = nranks: one GEMM per source rank
  // reading the peers' rows in place, own rows first): the fused all-gather below.
  bool agPerRank = false;
  std::string reason;     // why this variant and chunk count (logged at INFO)
};

// The fused variant (reduce-scatter only): each rank's GEMM writes a chunk's partial rows into a
// slot of its registered workspace, sets the chunk's ready flag there; each owner waits for every
// rank's flag, sums its rows straight out of the K slots (peer mappings, no collective call) and
// sets a done flag in each producer's workspace, which the producer waits for before refilling
// that slot. Flags live in a fixed tail after the workspace (same offsets on every rank).
constexpr int kFusedMaxRanks = 16;
constexpr size_t kFusedFlagBytes = 4096;
constexpr size_t kFusedReadyOff = 0;    // uint32 ready[slot]: the producer's chunk use number
constexpr size_t kFusedBellOff = 64;    // uint32: the host backend's futex word for this rank
constexpr size_t kFusedDoneOff = 128;   // uint32 done[slot][owner]: owner finished reading
constexpr size_t kFusedFromOff = 512;   // uint32 from[slot][producer]: the fused all-gather's
                                        // producer wrote (push) or published (per rank) its rows
constexpr size_t kFusedErrOff = 1024;   // uint32 {code, peer}: a GPU wait timed out (host backend: unused)
constexpr size_t kFusedReadyFromOff = 1536;  // uint32 readyFrom[use % 2][producer]: SSC_GEMM_COPY_ENGINE's
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
// does) before writing it again. x_gathered asks for the push form (the gathered X is there).

// The per-rank all-gather's GEMMs over the peers' rows, read in place from their slots
// (gpu_gemm_fused.cc, gpu_gemm_ce.cc): the peers whose block is full (`block` rows, so one GEMM
// shape) as ONE pointer-array batch of the vendor BLAS where it has one (a launch and a read of
// each W tile shared by the batch instead of nranks - 1 GEMMs: perf/RESULTS.md session 23), the
// peer whose block the end of m cuts as a GEMM of its own, peers with no rows not at all. Both
// lists start at rank + 1 and wrap, so the ranks do not all read one peer's slot first. The
// batch where the entries are small: below kPeerBatchMaxRows rows a block (W-bound GEMMs, whose
// W tiles the batch's entries share), or below kPeerBatchMaxFlops an entry. On the H200 (calls
// CC, CD) the batch beat one GEMM per peer by 1.1-1.9x there, and ran 3-60 % slower on larger
// entries (cuBLASLt's pointer-array kernels are not its fastest at large tiles).
constexpr int64_t kPeerBatchMaxRows = 512;
constexpr double kPeerBatchMaxFlops = 1.5e9;
struct PeerGemms {
  std::vector<int> batched;  // full blocks
  std::vector<int> single;   // a short block (at most one)
  bool batch = false;        // run `batched` as one batch (blocks below kPeerBatchMaxRows rows)
};
PeerGemms peerGemms(const Problem& p, int rank);

// Whether SSC_GEMM_AUTO runs a call fused, given the plan the rule chose otherwise (the measured
// rule, docs/gemm.md and perf/RESULTS.md sessions 19, 21 and 23); *perRank: which all-gather
// form. Always with waiting kernels: SSC_GEMM_COPY_ENGINE's forms run only where the caller's
// flag asks (gemm_plan.cc says why).
bool autoPicksFused(const Problem& p, const Plan& otherwise, bool* perRank);

// Whether the GPU half probes the vendor BLAS's algorithm for each new GEMM shape
// (gpu_gemm_probe.h): mode is STARSCREAM_GEMM_PROBE ("on", "off", "auto"; anything else reads as
// "auto"), mpsPercent CUDA_MPS_ACTIVE_THREAD_PERCENTAGE or null. auto probes when that cap is
// set below 100 %: only there were algorithms seen to leave output unwritten (perf/RESULTS.md
// session 20).
bool probeWanted(const std::string& mode, const char* mpsPercent);

// Whether the GPU half holds each collective of the unfused and chunked variants until every
// rank has reached it in stream order (gpu_gemm_fused.cc, kernelArrivalBarrier): mode is
// STARSCREAM_GEMM_BARRIER ("on", "off", "auto"; anything else reads as "auto"), shared whether
// ranks run on the same compute units (ranksShareComputeUnits). auto holds them where they do:
// there a peer's collective kernel, launched while this rank's GEMM is still queued, spins on SMs
// that GEMM needs, and at 8 MPS partitions of the H200 it starved it past STARSCREAM_TIMEOUT
// (perf/RESULTS.md session 22). Must come out alike on every rank (the barrier is collective).
bool barrierWanted(const std::string& mode, bool shared);

// Chooses the plan for `requestVariant` (an sscGemmVariant_t) and `requestChunks` (0 or a
// minimum) within workspaceBytes. Returns false with *why set when the call cannot run (the
// workspace cannot hold one row per rank, or the fused variant is asked for where it is not
// built: more than kFusedMaxRanks ranks, an all-gather whose gathered X does not fit one slot
// of the workspace, or fusedAvailable false: the workspace could not be mapped into the peers).
// SSC_GEMM_AUTO considers the fused variant only when fusedAvailable.
bool makePlan(const Problem& p, int requestVariant, int requestChunks, size_t workspaceBytes,
              Plan* plan, std::string* why, bool fusedAvailable = true);

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

// The 2D-sharding helper's rule (sscGemmShard2d). Estimates in microseconds.
struct Machine {
  double peakTflops = 989.0;  // H200 dense bf16
  double hbmGbps = 4800.0;
  double collGbps = 380.0;    // reduce-scatter busbw at 8 partitions, 256 MiB (perf/RESULTS.md)
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
// every rank. On the H200 under MPS (16 SMs a rank) both overlapped forms did, at random: the
// chunked all-gather (a core kernel's blocks waiting on a rank whose SMs the GEMM held) and the
// fused reduce-scatter of more than one chunk (a producer's GEMM never finishing beside its own
// stream's wait); CUDA_MODULE_LOADING=EAGER did not change it, so it is not lazy loading
// (perf/RESULTS.md, session 19; docs/gemm.md). The overlap had not paid either: the chunked
// variant ran at 0.58x of unfused.
enum class StepKind {
  kGemm,     // chunk's GEMM pieces (RS: x -> slot; AG: slot -> y)
  kColl,     // chunk's collective (RS: slot -> y or pad; AG: x or pad -> slot)
  kPadIn,    // AG: this rank's rows of the chunk -> pad (it owns fewer than the chunk's rows)
  kPadOut,   // RS: pad -> this rank's rows of y
  kGatherOut  // AG with x_gathered: the chunk's gathered rows, slot -> x_gathered
};
struct Step {
  StepKind kind;
  int chunk;
};
// Direct (one-rank) plans have no steps. gatherOut: the all-gather's rows are also copied out
// (sscGemmArgs_t.x_gathered).
std::vector<Step> schedule(const Problem& p, const Plan& plan, int rank, bool gatherOut = false);

}  // namespace ssc::gemm
