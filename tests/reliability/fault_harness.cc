// SPDX-License-Identifier: MIT
#include "tests/reliability/fault_harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace ssc::testing {
namespace {

// The report's wire form: fixed size, so one write(2) of it is atomic on a pipe.
struct ReportWire {
  int32_t result;
  double seconds;
  char message[1024];
};

void writeAll(int fd, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

}  // namespace

double monotonicSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void RankContext::ready() const {
  const int32_t r = rank_;
  writeAll(readyFd_, &r, sizeof(r));
}

void RankContext::report(sscResult_t result, sscComm_t comm) const {
  const char* text = sscGetLastError(comm);
  report(result, std::string(text != nullptr ? text : ""));
}

void RankContext::report(sscResult_t result, const std::string& message) const {
  ReportWire w{};
  w.result = result;
  w.seconds = monotonicSeconds();
  std::strncpy(w.message, message.c_str(), sizeof(w.message) - 1);
  writeAll(reportFd_, &w, sizeof(w));
}

FaultJob::FaultJob(int nranks, const Scenario& scenario, const std::vector<int>& absent)
    : nranks_(nranks), pids_(nranks, -1), reportFds_(nranks, -1), reports_(nranks) {
  // The children are forked before the unique id exists: making it starts the bootstrap root's
  // thread, and a fork while another thread holds an allocator lock (AddressSanitizer's has no
  // fork handler) leaves the child deadlocked. The id reaches them through a pipe.
  std::vector<int> idFds;
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  readyFd_ = ready[0];
  for (int r = 0; r < nranks; ++r) {
    bool skip = false;
    for (int a : absent) skip = skip || a == r;
    if (skip) continue;
    int report[2], idPipe[2];
    if (::pipe2(report, O_CLOEXEC) != 0 || ::pipe2(idPipe, O_CLOEXEC) != 0)
      throw std::runtime_error("pipe2 failed");
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      ::close(report[0]);
      ::close(ready[0]);
      ::close(idPipe[1]);
      sscUniqueId id;
      if (::read(idPipe[0], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) ::_exit(3);
      RankContext ctx(r, nranks, id, report[1], ready[1]);
      scenario(ctx);
      // _exit: no atexit handlers of the test process (gtest's) in the child. The library's own
      // exit notice is what a scenario tests by calling exit() itself.
      ::_exit(0);
    }
    ::close(report[1]);
    ::close(idPipe[0]);
    idFds.push_back(idPipe[1]);
    pids_[r] = pid;
    reportFds_[r] = report[0];
  }
  ::close(ready[1]);
  sscUniqueId id;
  if (sscGetUniqueId(&id) != sscSuccess) throw std::runtime_error("sscGetUniqueId failed");
  for (int fd : idFds) {
    writeAll(fd, &id, sizeof(id));
    ::close(fd);
  }
}

FaultJob::~FaultJob() {
  for (pid_t& pid : pids_)
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      pid = -1;
    }
  for (int fd : reportFds_)
    if (fd >= 0) ::close(fd);
  if (readyFd_ >= 0) ::close(readyFd_);
}

bool FaultJob::waitReady(int count, double timeoutSeconds) {
  const double until = monotonicSeconds() + timeoutSeconds;
  int seen = 0;
  while (seen < count) {
    const double left = until - monotonicSeconds();
    if (left <= 0) return false;
    pollfd p{readyFd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) continue;
    int32_t r;
    ssize_t n = ::read(readyFd_, &r, sizeof(r));
    if (n == sizeof(r))
      ++seen;
    else if (n == 0)
      return false;  // every child closed its end: none will be ready
  }
  return true;
}

double FaultJob::kill(int rank) {
  const double at = monotonicSeconds();
  if (pids_[rank] > 0) ::kill(pids_[rank], SIGKILL);
  return at;
}

std::vector<RankReport> FaultJob::finish(double timeoutSeconds) {
  const double until = monotonicSeconds() + timeoutSeconds;
  for (int r = 0; r < nranks_; ++r) {
    if (pids_[r] <= 0) continue;
    int status = 0;
    for (;;) {
      pid_t done = ::waitpid(pids_[r], &status, WNOHANG);
      if (done == pids_[r]) break;
      if (monotonicSeconds() > until) {
        ::kill(pids_[r], SIGKILL);
        ::waitpid(pids_[r], &status, 0);
        break;
      }
      ::usleep(5000);
    }
    pids_[r] = -1;
    RankReport& rep = reports_[r];
    rep.exitStatus = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    ReportWire w{};
    if (::read(reportFds_[r], &w, sizeof(w)) == static_cast<ssize_t>(sizeof(w))) {
      rep.reported = true;
      rep.result = w.result;
      rep.seconds = w.seconds;
      rep.message = w.message;
    }
  }
  return reports_;
}

std::vector<std::string> leftoverShm() {
  std::vector<std::string> names;
  if (DIR* d = ::opendir("/dev/shm")) {
    while (dirent* e = ::readdir(d))
      if (std::strncmp(e->d_name, "ssc-", 4) == 0) names.emplace_back(e->d_name);
    ::closedir(d);
  }
  return names;
}

}  // namespace ssc::testing
