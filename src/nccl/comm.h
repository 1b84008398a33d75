// SPDX-License-Identifier: MIT
// The communicator behind nccl.h's opaque ncclComm_t: a Starscream communicator plus what the
// NCCL semantics need on top of it (the configuration a split inherits, the completion stream of
// the host backend, creations still running, the revoked state), and the registry that
// validates the handles applications pass in.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "src/nccl/config.h"
#include "src/nccl/shim.h"

namespace ssc::nccl {

// A Starscream communicator being created on a thread of its own: a split or shrink that must
// not block the caller (non-blocking config, or called inside a group, where NCCL completes it
// at ncclGroupEnd so that one thread may drive several ranks).
class CreateJob {
 public:
  void finish(sscResult_t result, std::string message, sscComm_t comm);
  bool done();
  void wait();
  sscResult_t result();  // valid once done
  const std::string& message();
  sscComm_t takeComm();  // the new communicator (once done); the caller now owns it

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  sscResult_t result_ = sscInProgress;
  std::string message_;
  sscComm_t comm_ = nullptr;
};

enum class Need {
  kLive,            // any live handle (destroy, abort, async error)
  kReady,           // initialised, not revoked (collectives, queries)
  kReadyOrRevoked,  // initialised; a revoked communicator may still be split or shrunk
};

}  // namespace ssc::nccl

struct ncclComm {
  static constexpr uint64_t kMagic = 0x4e43434c5353434dull;  // "NCCLSSCM"
  uint64_t magic = kMagic;
  ssc::nccl::ShimConfig config;

  // Until `ready`, guarded by mu; afterwards immutable until destroy.
  sscComm_t ssc = nullptr;
  std::shared_ptr<ssc::nccl::CreateJob> job;  // set while a split/shrink creates `ssc`
  std::atomic<bool> ready{false};
  int rank = -1;
  int nranks = 0;
  int device = -1;
  // The host backend has no device streams: the caller's stream handle means nothing to it, so
  // every call or group is completed on this internal stream before it returns.
  bool hostBackend = false;
  sscStream_t hostStream = nullptr;

  // Set by ncclCommRevoke: new work is refused; split, shrink, destroy and abort remain.
  std::atomic<bool> revoked{false};

  std::mutex mu;
  // Splits and shrinks of this communicator running on threads: they use its bootstrap, so they
  // run one at a time and are joined before it is destroyed.
  std::vector<std::pair<std::thread, std::shared_ptr<ssc::nccl::CreateJob>>> childJobs;

  ~ncclComm();
};

namespace ssc::nccl {

std::shared_ptr<ncclComm> newComm(const ShimConfig& config);

// Makes `comm` a live handle (what acquire accepts) / stops it being one and returns it.
void publish(const std::shared_ptr<ncclComm>& comm);
std::shared_ptr<ncclComm> retire(ncclComm_t handle);

// Validates `handle` and brings it to the state `need` asks for. Fails with ncclInvalidArgument
// (NULL) or ncclInvalidUsage (not a live communicator, still initialising, revoked) and a
// message, or with the error that made its initialisation fail.
ncclResult_t acquire(const char* fn, ncclComm_t handle, Need need, std::shared_ptr<ncclComm>* out);

// Moves an initialising communicator forward: ncclSuccess once ready (its rank, size, device
// and host stream are then set), ncclInProgress while initialisation runs, else the error that
// ended it. Thread-safe.
ncclResult_t advance(const char* fn, ncclComm& comm);

// Like advance, but waits while the communicator is initialising.
ncclResult_t awaitReady(const char* fn, ncclComm& comm);

// The Starscream stream a call on `comm` runs on: the caller's stream on a GPU backend, the
// communicator's internal one on the host backend. There the caller's handle is still checked as
// sscAllReduce checks it (ncclInvalidArgument for a made-up one such as 0x10): NULL, the
// vendor's default-stream handles, or a stream from sscStreamCreate (synchronized first).
ncclResult_t streamFor(const char* fn, const ncclComm& comm, VendorStream stream, sscStream_t* out);

// Runs `create` on a thread as a child job of `parent` (after the parent's earlier jobs, which
// use the same bootstrap). The returned job reports the new Starscream communicator.
std::shared_ptr<CreateJob> startChildJob(ncclComm& parent,
                                         std::function<sscResult_t(sscComm_t*)> create);

// Joins every child job of `comm` (each either finished or woken by an abort of `comm`).
void joinChildJobs(ncclComm& comm);

}  // namespace ssc::nccl
