// SPDX-License-Identifier: MIT
// Pipes between a fault test and the ranks it forks (fault_harness.h), made before the FaultJob
// so that every child inherits them: a board where each rank posts its pid (so the test can stop
// and resume it with SIGSTOP/SIGCONT), and a gate that ranks wait at until the test opens it.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "tests/reliability/fault_harness.h"

namespace ssc::testing {

class ChildPipe {
 public:
  ChildPipe() {
    if (::pipe2(fds_, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  }
  ~ChildPipe() {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  ChildPipe(const ChildPipe&) = delete;
  ChildPipe& operator=(const ChildPipe&) = delete;

 protected:
  bool write(const void* data, size_t bytes) const {
    ssize_t n;
    do n = ::write(fds_[1], data, bytes);
    while (n < 0 && errno == EINTR);
    return n == static_cast<ssize_t>(bytes);
  }
  // Reads exactly `bytes` (small: one write of them is atomic), or false after timeoutSeconds
  // (< 0: no limit).
  bool read(void* data, size_t bytes, double timeoutSeconds) const {
    pollfd p{fds_[0], POLLIN, 0};
    const int ms = timeoutSeconds < 0 ? -1 : static_cast<int>(timeoutSeconds * 1000);
    int ready;
    do ready = ::poll(&p, 1, ms);
    while (ready < 0 && errno == EINTR);
    if (ready <= 0) return false;
    ssize_t n;
    do n = ::read(fds_[0], data, bytes);
    while (n < 0 && errno == EINTR);
    return n == static_cast<ssize_t>(bytes);
  }

 private:
  int fds_[2];
};

// Each rank posts (rank, pid); the test collects them.
class PidBoard : public ChildPipe {
 public:
  void post(int rank) const {
    const int64_t record[2] = {rank, static_cast<int64_t>(::getpid())};
    (void)write(record, sizeof(record));
  }
  // By rank; -1 where nothing came within timeoutSeconds.
  std::vector<pid_t> collect(int nranks, double timeoutSeconds) const {
    std::vector<pid_t> pids(static_cast<size_t>(nranks), -1);
    const double until = monotonicSeconds() + timeoutSeconds;
    for (int i = 0; i < nranks; ++i) {
      int64_t record[2];
      const double left = until - monotonicSeconds();
      if (left <= 0 || !read(record, sizeof(record), left)) break;
      if (record[0] >= 0 && record[0] < nranks)
        pids[static_cast<size_t>(record[0])] = static_cast<pid_t>(record[1]);
    }
    return pids;
  }
};

// Ranks wait at the gate; the test lets `count` of them through.
class Gate : public ChildPipe {
 public:
  void pass() const {
    char c;
    (void)read(&c, 1, -1);
  }
  void open(int count) const {
    for (int i = 0; i < count; ++i) (void)write("g", 1);
  }
};

}  // namespace ssc::testing
