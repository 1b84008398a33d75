// SPDX-License-Identifier: MIT
// Checked mode (STARSCREAM_CHECK=1): before any data of a collective moves, its ranks exchange a
// fingerprint of the call {collective, count, datatype, op, root, call number} and every rank
// fails the call with sscInvalidUsage, naming the field and the ranks, when they differ. Without
// it a same-size datatype or op mismatch gives wrong data silently and a root mismatch surfaces
// one call late, if at all.
//
// The exchange rides on the communicator's shared call table where it has one (comm->peerCache:
// one node, one rank per process), in the very record that plain-buffer zero-copy posts, so a
// call that posts anyway costs nothing more. Elsewhere the communicator keeps a table of its own
// when all ranks share a host (several ranks per process), and uses the bootstrap all-gather
// (TCP) when they do not. Everything here is off, and costs one null test per call, unless the
// variable is 1.
#pragma once

#include <cstdint>
#include <memory>
#include <map>
#include <string>
#include <vector>

#include "src/collectives/plan.h"
#include "src/comm/comm.h"
#include "starscream/starscream.h"

namespace ssc {

class ShmAllGather;

// What every rank must pass alike for one collective call (buffers and in-place-ness may differ).
struct CallFingerprint {
  uint64_t seq = 0;  // the communicator's collective call number, from 1
  uint64_t count = 0;
  int32_t kind = -1;    // CollKind
  int32_t dtype = -1;   // sscDataType_t
  int32_t op = -1;      // a built-in sscRedOp_t; sscNumOps: a pre-multiplied sum; -1: no reduction
  int32_t root = -1;    // broadcast and reduce; -1 for the others
  int32_t status = 0;   // sscSuccess, or the error this rank's own argument checks raised
  int32_t version = 1;  // layout of this record
};
static_assert(sizeof(CallFingerprint) == 40, "posted as raw bytes on every rank");

// The public entry point of a collective ("sscAllReduce").
const char* collEntryName(CollKind kind);
// "sum", "max", ..., "premulsum", "none".
const char* checkOpName(int op);

// Compares every rank's fingerprint of one call (all[q] is rank q's). Returns "" when they agree,
// else the message every rank reports, the same on every rank, e.g. "sscAllReduce: call 17
// differs across ranks: rank 0 has datatype float32, rank 1 has int32 (STARSCREAM_CHECK=1)".
std::string describeMismatch(const CallFingerprint* all, int nranks);

// Per-communicator state of checked mode (sscComm::callCheck; null when off).
class CallChecker {
 public:
  explicit CallChecker(sscComm* comm);
  ~CallChecker();

  // The fingerprint of the next collective call (numbers it).
  CallFingerprint next(CollKind kind, size_t count, sscDataType_t dtype, int op, int root);

  // The exchange for communicators without comm->peerCache: post this rank's fingerprint for
  // the next call (local), then collect every rank's. One thread driving several communicators
  // posts on all of them before collecting any (over the bootstrap, collect blocks).
  sscResult_t post(const CallFingerprint& mine, uint64_t* ticket);
  sscResult_t collect(uint64_t ticket, std::vector<CallFingerprint>* all);

  // One posted fingerprint to collect, and what came of it.
  struct Collect {
    CallChecker* checker = nullptr;
    uint64_t ticket = 0;
    std::vector<CallFingerprint> all;
    sscResult_t result = sscSuccess;
    std::string error;  // the failure's message
  };
  // Collects several communicators' fingerprints. A collect over the bootstrap blocks until
  // every rank of its communicator arrives, so when one thread drives several ranks (several
  // per process across hosts) those collects run on threads of their own: none then waits for a
  // rank the calling thread has not served yet.
  static void collectMany(std::vector<Collect>* jobs);

  std::unique_ptr<ShmAllGather> table;  // all ranks on one host, no peer cache

 private:
  sscComm* comm_;
  uint64_t seq_ = 0;
  uint64_t nextTicket_ = 1;
  std::map<uint64_t, CallFingerprint> posted_;  // bootstrap path: posted, not yet collected
};

// Collective, at communicator init: reads STARSCREAM_CHECK (0 or 1; anything else fails init
// with sscInvalidArgument naming the variable, on every rank), checks every rank has the same
// setting, and when it is 1 sets up comm->callCheck.
sscResult_t callCheckSetUp(sscComm* comm);

}  // namespace ssc
