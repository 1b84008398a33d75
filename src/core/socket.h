// SPDX-License-Identifier: MIT
// A small TCP layer for the bootstrap: RAII sockets, IPv4 and IPv6, every blocking call bounded
// by a deadline and an abort flag. Sockets are non-blocking underneath and every wait is a
// poll(2) of at most kAbortPollMs, so an abort set from another thread is seen promptly without
// spinning, and a dead or hung peer becomes sscTimeout rather than a hang.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "starscream/starscream.h"

namespace ssc {

// The longest a wait sleeps before re-checking the abort flag.
inline constexpr int kAbortPollMs = 100;

// When a wait must give up. Built from a STARSCREAM_TIMEOUT its owner read at its creation;
// remembers the budget so that timeout messages can say what it was. A budget <= 0 (or not
// finite) never expires.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after(double seconds);

  bool never() const { return never_; }
  bool passed() const { return !never_ && Clock::now() >= at_; }
  // What poll(2) may sleep: at most capMs, and not past the deadline.
  int pollMs(int capMs) const;
  double budgetSeconds() const { return budget_; }
  // The same deadline moved later; the reported budget is unchanged.
  Deadline extendedBy(std::chrono::milliseconds grace) const;
  // Whichever of the two comes first.
  Deadline earliest(const Deadline& other) const;

 private:
  Clock::time_point at_{};
  double budget_ = 0;
  bool never_ = true;
};

// An IPv4 or IPv6 socket address.
class SocketAddress {
 public:
  SocketAddress() = default;
  static SocketAddress fromSockaddr(const sockaddr* sa, socklen_t len);
  // 127.0.0.1 or ::1, port 0.
  static SocketAddress loopback(int family);

  bool valid() const { return family() == AF_INET || family() == AF_INET6; }
  int family() const { return u_.sa.sa_family; }
  const sockaddr* get() const { return &u_.sa; }
  socklen_t length() const;
  uint16_t port() const;  // host byte order
  void setPort(uint16_t port);
  // "127.0.0.1:4242", "[::1]:4242", "[fe80::1%eth0]:4242".
  std::string toString() const;

 private:
  union {
    sockaddr sa;
    sockaddr_in in4;
    sockaddr_in6 in6;
  } u_{};
};

// The address this process listens on: loopback when `ifname` (STARSCREAM_SOCKET_IFNAME) is
// empty, else the first IPv4 (else IPv6) address of that interface. An unknown interface is
// sscInvalidArgument with the list of interfaces that do exist.
sscResult_t selectListenAddress(const std::string& ifname, SocketAddress* out);

// What one non-blocking transfer attempt did.
struct IoResult {
  enum Status { kProgress, kWouldBlock, kClosed, kError } status;
  size_t bytes;  // moved, when kProgress
  int error;     // errno, when kError
};

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { reset(); }
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void reset();
  int release();

  // Listens on addr (port 0: an ephemeral port); *bound gets the address actually bound.
  static sscResult_t listen(const SocketAddress& addr, Socket* out, SocketAddress* bound);

  // What a refused connection means to connect().
  enum class Refused {
    // The peer may not be listening yet: retry with backoff until the deadline.
    kRetry,
    // The peer listened before its address was handed out (the bootstrap root, a rank's ring
    // listener), so a refusal means it went away: fail with sscRemoteError once refusals have
    // lasted kRefusedGraceMs, instead of waiting out the deadline.
    kMeansGone,
  };
  static constexpr int kRefusedGraceMs = 300;

  // Connects to addr. Unreachable attempts are retried with backoff until the deadline (the
  // route may still be coming up); refused ones as `refused` says. `peer` names it in messages.
  static sscResult_t connect(const SocketAddress& addr, const Deadline& deadline,
                             const std::atomic<bool>* abortFlag, std::string_view peer, Socket* out,
                             Refused refused = Refused::kRetry);

  // Accepts one connection on this listening socket. *from (optional) gets the peer address.
  sscResult_t accept(const Deadline& deadline, const std::atomic<bool>* abortFlag,
                     std::string_view what, Socket* out, SocketAddress* from = nullptr) const;

  // Moves exactly `bytes`. A peer that closes first is sscRemoteError.
  sscResult_t sendAll(const void* data, size_t bytes, const Deadline& deadline,
                      const std::atomic<bool>* abortFlag, std::string_view peer) const;
  sscResult_t recvAll(void* data, size_t bytes, const Deadline& deadline,
                      const std::atomic<bool>* abortFlag, std::string_view peer) const;

  // Single non-blocking attempts that record no error: for event loops that decide themselves
  // whether a failure matters (the bootstrap root drops misbehaving clients silently).
  IoResult trySend(const void* data, size_t bytes) const;
  IoResult tryRecv(void* data, size_t bytes) const;
  // kProgress with *out connected, kWouldBlock when nobody is waiting, or kError.
  IoResult tryAccept(Socket* out, SocketAddress* from = nullptr) const;

 private:
  int fd_ = -1;
};

// Sends `sendBytes` on `out` while receiving `recvBytes` on `in`, interleaved as each side
// becomes ready. Doing the two halves one after the other would deadlock a ring as soon as a
// block exceeds what the kernel buffers hold; this never does. `out` and `in` may be the same.
sscResult_t sendRecvAll(const Socket& out, const void* sendData, size_t sendBytes,
                        std::string_view sendPeer, const Socket& in, void* recvData,
                        size_t recvBytes, std::string_view recvPeer, const Deadline& deadline,
                        const std::atomic<bool>* abortFlag);

// strerror, thread-safe.
std::string errnoString(int error);

}  // namespace ssc
