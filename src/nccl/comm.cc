// SPDX-License-Identifier: MIT
#include "src/nccl/comm.h"

#include <chrono>
#include <cstdint>
#include <map>

#include "src/nccl/errors.h"

namespace ssc::nccl {

void CreateJob::finish(sscResult_t result, std::string message, sscComm_t comm) {
  std::lock_guard<std::mutex> g(mu_);
  result_ = result;
  message_ = std::move(message);
  comm_ = comm;
  done_ = true;
  cv_.notify_all();
}

bool CreateJob::done() {
  std::lock_guard<std::mutex> g(mu_);
  return done_;
}

void CreateJob::wait() {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [&] { return done_; });
}

sscResult_t CreateJob::result() {
  std::lock_guard<std::mutex> g(mu_);
  return result_;
}

const std::string& CreateJob::message() {
  std::lock_guard<std::mutex> g(mu_);
  return message_;
}

sscComm_t CreateJob::takeComm() {
  std::lock_guard<std::mutex> g(mu_);
  sscComm_t c = comm_;
  comm_ = nullptr;
  return c;
}

namespace {

// Live handles. shared_ptr, so that a thread inside a call keeps the communicator alive while
// another thread aborts it (NCCL allows ncclCommAbort from any thread to unblock waiters).
// Never destroyed: communicators a program does not destroy are left to process exit, as with
// NCCL; ending them from a static destructor could wait on peers that have already exited.
struct LiveSet {
  std::mutex mu;
  std::map<const ncclComm*, std::shared_ptr<ncclComm>> comms;
};
LiveSet& live() {
  static LiveSet* set = new LiveSet();
  return *set;
}

std::shared_ptr<ncclComm> find(ncclComm_t handle) {
  LiveSet& l = live();
  std::lock_guard<std::mutex> g(l.mu);
  auto it = l.comms.find(handle);
  if (it == l.comms.end() || it->second->magic != ncclComm::kMagic) return nullptr;
  return it->second;
}

// The communicator just became usable: cache what every call needs.
ncclResult_t becomeReady(const char* fn, ncclComm& c) {
  sscResult_t r = sscCommUserRank(c.ssc, &c.rank);
  if (r == sscSuccess) r = sscCommCount(c.ssc, &c.nranks);
  if (r == sscSuccess) r = sscCommDevice(c.ssc, &c.device);
  c.hostBackend = c.device < 0;
  if (r == sscSuccess && c.hostBackend) r = sscStreamCreate(&c.hostStream);
  if (r != sscSuccess) return fromSsc(fn, r, c.ssc);
  c.ready.store(true, std::memory_order_release);
  return ncclSuccess;
}

}  // namespace

std::shared_ptr<ncclComm> newComm(const ShimConfig& config) {
  auto comm = std::make_shared<ncclComm>();
  comm->config = config;
  return comm;
}

void publish(const std::shared_ptr<ncclComm>& comm) {
  LiveSet& l = live();
  std::lock_guard<std::mutex> g(l.mu);
  l.comms.emplace(comm.get(), comm);
}

std::shared_ptr<ncclComm> retire(ncclComm_t handle) {
  LiveSet& l = live();
  std::lock_guard<std::mutex> g(l.mu);
  auto it = l.comms.find(handle);
  if (it == l.comms.end()) return nullptr;
  auto comm = std::move(it->second);
  l.comms.erase(it);
  return comm;
}

ncclResult_t advance(const char* fn, ncclComm& c) {
  if (c.ready.load(std::memory_order_acquire)) return ncclSuccess;
  std::lock_guard<std::mutex> g(c.mu);
  if (c.ready.load(std::memory_order_relaxed)) return ncclSuccess;
  if (c.job) {
    if (!c.job->done()) return ncclInProgress;
    sscResult_t r = c.job->result();
    if (r != sscSuccess)  // the job stays, so every later call reports the same failure
      return fail(toNccl(r), "{}: communicator creation failed: {}", fn, c.job->message());
    c.ssc = c.job->takeComm();
    c.job.reset();
  }
  if (c.ssc == nullptr)
    return fail(ncclInternalError, "{}: communicator has no Starscream half", fn);
  sscResult_t state = sscSuccess;
  sscResult_t r = sscCommGetAsyncError(c.ssc, &state);
  if (r != sscSuccess) return fromSsc(fn, r, c.ssc);
  if (state == sscInProgress) return ncclInProgress;
  if (state != sscSuccess)
    return fail(toNccl(state), "{}: communicator initialisation failed: {}", fn,
                sscGetLastError(c.ssc));
  return becomeReady(fn, c);
}

ncclResult_t awaitReady(const char* fn, ncclComm& comm) {
  // Initialisation waits on peers over sockets; polling every millisecond costs nothing next
  // to that and keeps Starscream's non-blocking init the only state machine.
  for (;;) {
    ncclResult_t r = advance(fn, comm);
    if (r != ncclInProgress) return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

ncclResult_t acquire(const char* fn, ncclComm_t handle, Need need, std::shared_ptr<ncclComm>* out) {
  out->reset();
  if (handle == nullptr) return fail(ncclInvalidArgument, "{}: comm is NULL", fn);
  std::shared_ptr<ncclComm> comm = find(handle);
  if (comm == nullptr)
    return fail(ncclInvalidUsage,
                "{}: comm {} is not a live communicator (destroyed, aborted or "
                "never created)",
                fn, static_cast<void*>(handle));
  if (need != Need::kLive) {
    ncclResult_t r = advance(fn, *comm);
    if (r == ncclInProgress)
      return fail(ncclInvalidUsage,
                  "{}: communicator initialisation is still in progress; poll "
                  "ncclCommGetAsyncError until it reports ncclSuccess",
                  fn);
    if (r != ncclSuccess) return r;
    if (need == Need::kReady && comm->revoked.load())
      return fail(ncclInvalidUsage,
                  "{}: the communicator was revoked (ncclCommRevoke); only "
                  "ncclCommSplit, ncclCommShrink, ncclCommDestroy and ncclCommAbort remain",
                  fn);
  }
  *out = std::move(comm);
  return ncclSuccess;
}

ncclResult_t streamFor(const char* fn, const ncclComm& comm, VendorStream stream,
                       sscStream_t* out) {
  *out = comm.hostBackend ? comm.hostStream : static_cast<sscStream_t>(stream);
  // On a GPU backend the handle goes to the runtime, which validates its own handles.
  if (!comm.hostBackend) return ncclSuccess;
  // The vendor's default-stream handles: NULL, the legacy stream (1), the per-thread stream (2).
  if (reinterpret_cast<uintptr_t>(stream) <= 2) return ncclSuccess;
  // Anything else must be what sscAllReduce accepts on the host backend, a stream made by
  // sscStreamCreate: synchronizing it checks that the same way, and runs this call after the
  // work already queued there, as stream order wants.
  const sscResult_t r = sscStreamSynchronize(static_cast<sscStream_t>(stream));
  if (r == sscInvalidArgument)
    return fail(ncclInvalidArgument,
                "{}: stream {} is not a stream: on the host backend (no GPU) "
                "a call takes NULL, cudaStreamLegacy, cudaStreamPerThread or a stream from "
                "sscStreamCreate ({})",
                fn, static_cast<void*>(stream), sscGetLastError(nullptr));
  return r == sscSuccess ? ncclSuccess : fromSsc(fn, r, comm.ssc);
}

std::shared_ptr<CreateJob> startChildJob(ncclComm& parent,
                                         std::function<sscResult_t(sscComm_t*)> create) {
  auto job = std::make_shared<CreateJob>();
  std::lock_guard<std::mutex> g(parent.mu);
  // The previous job still running (if any) is this one's predecessor on the bootstrap.
  std::shared_ptr<CreateJob> previous =
      parent.childJobs.empty() ? nullptr : parent.childJobs.back().second;
  parent.childJobs.emplace_back(
      std::thread([job, previous, create = std::move(create)] {
        if (previous) previous->wait();
        sscComm_t made = nullptr;
        sscResult_t r = create(&made);
        job->finish(r, r == sscSuccess ? std::string() : std::string(sscGetLastError(nullptr)),
                    made);
      }),
      job);
  return job;
}

void joinChildJobs(ncclComm& comm) {
  std::vector<std::pair<std::thread, std::shared_ptr<CreateJob>>> jobs;
  {
    std::lock_guard<std::mutex> g(comm.mu);
    jobs.swap(comm.childJobs);
  }
  for (auto& [thread, job] : jobs)
    if (thread.joinable()) thread.join();
}

}  // namespace ssc::nccl

ncclComm::~ncclComm() {
  // Normally destroy/abort already did all of this; this is the path of a creation that failed
  // half way, or of the last reference dropped by a thread woken by an abort.
  ssc::nccl::joinChildJobs(*this);
  if (job) {
    job->wait();
    if (sscComm_t orphan = job->takeComm()) sscCommDestroy(orphan);
  }
  if (hostStream != nullptr) sscStreamDestroy(hostStream);
  if (ssc != nullptr) sscCommDestroy(ssc);
  magic = 0;
}
