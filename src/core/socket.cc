// SPDX-License-Identifier: MIT
#include "src/core/socket.h"

#include <arpa/inet.h>
#include <fmt/ranges.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "src/core/errors.h"
#include "src/core/log.h"

namespace ssc {
namespace {

bool aborted(const std::atomic<bool>* flag) {
  return flag != nullptr && flag->load(std::memory_order_acquire);
}

// Waits until poll(2) reports an event on one of fds. Sleeps in slices of kAbortPollMs so the
// abort flag is seen promptly. `verb` and `peer` only build the failure message.
sscResult_t waitReady(pollfd* fds, nfds_t count, const Deadline& deadline,
                      const std::atomic<bool>* abortFlag, std::string_view verb,
                      std::string_view peer) {
  for (;;) {
    if (aborted(abortFlag)) return fail(sscRemoteError, "aborted while {} {}", verb, peer);
    if (deadline.passed()) {
      return fail(sscTimeout, "timed out {} {} (STARSCREAM_TIMEOUT={:g} s)", verb, peer,
                  deadline.budgetSeconds());
    }
    int ready = ::poll(fds, count, deadline.pollMs(kAbortPollMs));
    if (ready > 0) return sscSuccess;
    if (ready < 0 && errno != EINTR) {
      return fail(sscSystemError, "poll failed while {} {}: {}", verb, peer, errnoString(errno));
    }
  }
}

sscResult_t ioFailure(const IoResult& io, std::string_view verb, std::string_view peer, size_t done,
                      size_t total) {
  if (io.status == IoResult::kClosed) {
    return fail(sscRemoteError, "peer closed the connection while {} {} ({} of {} bytes done)",
                verb, peer, done, total);
  }
  return fail(sscRemoteError, "network error while {} {}: {}", verb, peer, errnoString(io.error));
}

sscResult_t setNoDelay(int fd) {
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
    return fail(sscSystemError, "setsockopt(TCP_NODELAY): {}", errnoString(errno));
  return sscSuccess;
}

// Non-blocking and close-on-exec from birth: a fork+exec in another thread must not inherit
// bootstrap sockets, and no call may block outside poll(2).
sscResult_t newSocket(int family, Socket* out) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(sscSystemError, "socket(): {}", errnoString(errno));
  *out = Socket(fd);
  return setNoDelay(fd);
}

SocketAddress localAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
  return SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
}

bool oneOf(int error, std::initializer_list<int> errors) {
  return std::find(errors.begin(), errors.end(), error) != errors.end();
}

// Failures that mean "not there yet" rather than "never": the peer has not called listen,
// its backlog overflowed, or the route is still coming up.
bool connectRetryable(int error) {
  return oneOf(error, {ECONNREFUSED, ECONNRESET, ECONNABORTED, ETIMEDOUT, EHOSTUNREACH, ENETUNREACH,
                       ENETDOWN, EAGAIN, EADDRNOTAVAIL});
}

// accept(2) reports some errors of the pending connection itself; Linux documents that they
// should be treated as "try again".
bool acceptRetryable(int error) {
  return oneOf(error, {EINTR, ECONNABORTED, EPROTO, ENETDOWN, ENOPROTOOPT, EHOSTDOWN, ENONET,
                       EHOSTUNREACH, EOPNOTSUPP, ENETUNREACH});
}

[[maybe_unused]] const char* strerrorResult(const char* gnu, const char*) { return gnu; }
[[maybe_unused]] const char* strerrorResult(int xsi, const char* buffer) {
  return xsi == 0 ? buffer : "unknown error";
}

}  // namespace

std::string errnoString(int error) {
  char buffer[256] = {0};
  return fmt::format("{} (errno {})",
                     strerrorResult(strerror_r(error, buffer, sizeof(buffer)), buffer), error);
}

// ---------------------------------------------------------------- Deadline

Deadline Deadline::after(double seconds) {
  Deadline d;
  d.budget_ = seconds;
  // Beyond a century the arithmetic below could overflow; nobody waits that long on purpose.
  if (!(seconds > 0) || !std::isfinite(seconds) || seconds > 3e9) return d;
  d.never_ = false;
  d.at_ = Clock::now() +
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  return d;
}

int Deadline::pollMs(int capMs) const {
  if (never_) return capMs;
  auto left = at_ - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  // Round up: waking a hair before the deadline would turn the last stretch into a spin.
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<int64_t>(ms, capMs));
}

Deadline Deadline::extendedBy(std::chrono::milliseconds grace) const {
  Deadline d = *this;
  if (!d.never_) d.at_ += grace;
  return d;
}

Deadline Deadline::earliest(const Deadline& other) const {
  if (never_) return other;
  if (other.never_) return *this;
  return at_ <= other.at_ ? *this : other;
}

// ---------------------------------------------------------------- SocketAddress

SocketAddress SocketAddress::fromSockaddr(const sockaddr* sa, socklen_t len) {
  SocketAddress a;
  if (sa == nullptr) return a;
  if (sa->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in)))
    std::memcpy(&a.u_.in4, sa, sizeof(sockaddr_in));
  else if (sa->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6)))
    std::memcpy(&a.u_.in6, sa, sizeof(sockaddr_in6));
  return a;
}

SocketAddress SocketAddress::loopback(int family) {
  SocketAddress a;
  if (family == AF_INET6) {
    a.u_.in6.sin6_family = AF_INET6;
    a.u_.in6.sin6_addr = in6addr_loopback;
  } else {
    a.u_.in4.sin_family = AF_INET;
    a.u_.in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  return a;
}

socklen_t SocketAddress::length() const {
  if (family() == AF_INET) return sizeof(sockaddr_in);
  if (family() == AF_INET6) return sizeof(sockaddr_in6);
  return 0;
}

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(u_.in4.sin_port);
  if (family() == AF_INET6) return ntohs(u_.in6.sin6_port);
  return 0;
}

void SocketAddress::setPort(uint16_t port) {
  if (family() == AF_INET) u_.in4.sin_port = htons(port);
  if (family() == AF_INET6) u_.in6.sin6_port = htons(port);
}

std::string SocketAddress::toString() const {
  char host[INET6_ADDRSTRLEN] = {0};
  if (family() == AF_INET) {
    ::inet_ntop(AF_INET, &u_.in4.sin_addr, host, sizeof(host));
    return fmt::format("{}:{}", host, port());
  }
  if (family() == AF_INET6) {
    ::inet_ntop(AF_INET6, &u_.in6.sin6_addr, host, sizeof(host));
    if (u_.in6.sin6_scope_id == 0) return fmt::format("[{}]:{}", host, port());
    char ifname[IF_NAMESIZE] = {0};
    if (::if_indextoname(u_.in6.sin6_scope_id, ifname) != nullptr)
      return fmt::format("[{}%{}]:{}", host, ifname, port());
    return fmt::format("[{}%{}]:{}", host, u_.in6.sin6_scope_id, port());
  }
  return "(no address)";
}

sscResult_t selectListenAddress(const std::string& ifname, SocketAddress* out) {
  if (ifname.empty()) {
    *out = SocketAddress::loopback(AF_INET);
    return sscSuccess;
  }
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return fail(sscSystemError, "getifaddrs: {}", errnoString(errno));
  std::vector<std::string> names;
  bool found = false;
  SocketAddress v4, v6Global, v6LinkLocal;
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (std::find(names.begin(), names.end(), ifa->ifa_name) == names.end())
      names.emplace_back(ifa->ifa_name);
    if (ifname != ifa->ifa_name) continue;
    found = true;
    if (ifa->ifa_addr == nullptr) continue;
    if (ifa->ifa_addr->sa_family == AF_INET && !v4.valid()) {
      v4 = SocketAddress::fromSockaddr(ifa->ifa_addr, sizeof(sockaddr_in));
    } else if (ifa->ifa_addr->sa_family == AF_INET6) {
      // Link-local addresses need a scope id that only means something on this host's link;
      // take one only when the interface has nothing better.
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(ifa->ifa_addr);
      SocketAddress& slot = IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr) ? v6LinkLocal : v6Global;
      if (!slot.valid()) slot = SocketAddress::fromSockaddr(ifa->ifa_addr, sizeof(sockaddr_in6));
    }
  }
  ::freeifaddrs(list);
  if (!found) {
    return fail(sscInvalidArgument,
                "STARSCREAM_SOCKET_IFNAME={}: no such network interface (available: {})", ifname,
                fmt::join(names, ", "));
  }
  *out = v4.valid() ? v4 : v6Global.valid() ? v6Global : v6LinkLocal;
  if (!out->valid()) {
    return fail(sscInvalidArgument,
                "STARSCREAM_SOCKET_IFNAME={}: the interface has no IPv4 or IPv6 address", ifname);
  }
  out->setPort(0);
  SSC_LOG(kInfo, "bootstrap uses interface {} address {}", ifname, out->toString());
  return sscSuccess;
}

// ---------------------------------------------------------------- Socket

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.release();
  }
  return *this;
}

void Socket::reset() {
  if (fd_ >= 0) {
    // Not retried on EINTR: on Linux the descriptor is released even then, and a retry could
    // close a descriptor another thread has just been given.
    ::close(fd_);
    fd_ = -1;
  }
}

int Socket::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

sscResult_t Socket::listen(const SocketAddress& addr, Socket* out, SocketAddress* bound) {
  if (!addr.valid()) return SSC_INTERNAL("listen on an invalid address");
  Socket s;
  SSC_CHECK(newSocket(addr.family(), &s));
  int one = 1;
  // A restarted job may reuse a port whose previous connections linger in TIME_WAIT.
  if (::setsockopt(s.fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0)
    return fail(sscSystemError, "setsockopt(SO_REUSEADDR): {}", errnoString(errno));
  if (addr.family() == AF_INET6 &&
      ::setsockopt(s.fd_, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0)
    return fail(sscSystemError, "setsockopt(IPV6_V6ONLY): {}", errnoString(errno));
  if (::bind(s.fd_, addr.get(), addr.length()) != 0)
    return fail(sscSystemError, "cannot bind {}: {}", addr.toString(), errnoString(errno));
  if (::listen(s.fd_, SOMAXCONN) != 0)
    return fail(sscSystemError, "cannot listen on {}: {}", addr.toString(), errnoString(errno));
  *bound = localAddress(s.fd_);
  if (!bound->valid()) return fail(sscSystemError, "getsockname: {}", errnoString(errno));
  *out = std::move(s);
  SSC_LOG(kTrace, "listening on {}", bound->toString());
  return sscSuccess;
}

sscResult_t Socket::connect(const SocketAddress& addr, const Deadline& deadline,
                            const std::atomic<bool>* abortFlag, std::string_view peer, Socket* out,
                            Refused refused) {
  if (!addr.valid()) return SSC_INTERNAL("connect to an invalid address");
  const std::string who = fmt::format("{} at {}", peer, addr.toString());
  int backoffMs = 1;
  std::chrono::steady_clock::time_point firstRefusal{};
  int refusals = 0;
  for (int attempt = 1;; ++attempt) {
    Socket s;
    SSC_CHECK(newSocket(addr.family(), &s));
    int error = ::connect(s.fd_, addr.get(), addr.length()) == 0 ? 0 : errno;
    // EINTR leaves a non-blocking connect running, exactly like EINPROGRESS.
    if (error == EINPROGRESS || error == EINTR) {
      pollfd pfd{s.fd_, POLLOUT, 0};
      SSC_CHECK(waitReady(&pfd, 1, deadline, abortFlag, "connecting to", who));
      socklen_t len = sizeof(error);
      if (::getsockopt(s.fd_, SOL_SOCKET, SO_ERROR, &error, &len) != 0) error = errno;
    }
    // Retrying a loopback port nobody listens on can "succeed" by TCP simultaneous open when
    // the kernel happens to pick that very port as our source: a socket connected to itself.
    if (error == 0 && localAddress(s.fd_).toString() == addr.toString()) error = ECONNREFUSED;
    if (error == 0) {
      SSC_LOG(kTrace, "connected to {} (attempt {})", who, attempt);
      *out = std::move(s);
      return sscSuccess;
    }
    if (!connectRetryable(error))
      return fail(sscSystemError, "cannot connect to {}: {}", who, errnoString(error));
    if (error == ECONNREFUSED && refused == Refused::kMeansGone) {
      // Nothing listens there any more. A short grace only absorbs a refusal that is not the
      // listener's absence (none is known on Linux, where a full backlog drops, not refuses).
      const auto now = std::chrono::steady_clock::now();
      if (refusals++ == 0) firstRefusal = now;
      if (now - firstRefusal >= std::chrono::milliseconds(kRefusedGraceMs)) {
        return fail(
            sscRemoteError,
            "{} refused the connection ({} attempts over {} ms): nothing "
            "listens there any more",
            who, refusals,
            std::chrono::duration_cast<std::chrono::milliseconds>(now - firstRefusal).count());
      }
    }
    if (attempt == 1)
      SSC_LOG(kTrace, "{} not reachable yet ({}); retrying", who, errnoString(error));
    s.reset();
    if (aborted(abortFlag)) return fail(sscRemoteError, "aborted while connecting to {}", who);
    if (deadline.passed()) {
      return fail(sscTimeout, "could not connect to {} within STARSCREAM_TIMEOUT={:g} s: {}", who,
                  deadline.budgetSeconds(), errnoString(error));
    }
    // Exponential backoff capped at the abort poll period, so aborts stay prompt.
    ::poll(nullptr, 0, deadline.pollMs(backoffMs));
    backoffMs = std::min(backoffMs * 2, kAbortPollMs);
  }
}

IoResult Socket::tryAccept(Socket* out, SocketAddress* from) const {
  for (;;) {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Socket s(fd);
      // Inherited from the listener on Linux, but not promised by POSIX.
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      if (from != nullptr)
        *from = SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
      *out = std::move(s);
      return {IoResult::kProgress, 0, 0};
    }
    int error = errno;
    if (error == EAGAIN || error == EWOULDBLOCK) return {IoResult::kWouldBlock, 0, 0};
    if (!acceptRetryable(error)) return {IoResult::kError, 0, error};
  }
}

sscResult_t Socket::accept(const Deadline& deadline, const std::atomic<bool>* abortFlag,
                           std::string_view what, Socket* out, SocketAddress* from) const {
  for (;;) {
    IoResult io = tryAccept(out, from);
    if (io.status == IoResult::kProgress) return sscSuccess;
    if (io.status == IoResult::kError) {
      return fail(sscSystemError, "accept failed while waiting for {}: {}", what,
                  errnoString(io.error));
    }
    pollfd pfd{fd_, POLLIN, 0};
    SSC_CHECK(waitReady(&pfd, 1, deadline, abortFlag, "waiting for", what));
  }
}

IoResult Socket::trySend(const void* data, size_t bytes) const {
  for (;;) {
    // MSG_NOSIGNAL: a vanished peer must be an error code, not SIGPIPE killing the process.
    ssize_t n = ::send(fd_, data, bytes, MSG_NOSIGNAL);
    if (n >= 0) return {IoResult::kProgress, static_cast<size_t>(n), 0};
    int error = errno;
    if (error == EINTR) continue;
    if (error == EAGAIN || error == EWOULDBLOCK) return {IoResult::kWouldBlock, 0, 0};
    if (error == EPIPE || error == ECONNRESET) return {IoResult::kClosed, 0, error};
    return {IoResult::kError, 0, error};
  }
}

IoResult Socket::tryRecv(void* data, size_t bytes) const {
  for (;;) {
    ssize_t n = ::recv(fd_, data, bytes, 0);
    if (n > 0 || (n == 0 && bytes == 0)) return {IoResult::kProgress, static_cast<size_t>(n), 0};
    if (n == 0) return {IoResult::kClosed, 0, 0};
    int error = errno;
    if (error == EINTR) continue;
    if (error == EAGAIN || error == EWOULDBLOCK) return {IoResult::kWouldBlock, 0, 0};
    if (error == ECONNRESET) return {IoResult::kClosed, 0, error};
    return {IoResult::kError, 0, error};
  }
}

sscResult_t Socket::sendAll(const void* data, size_t bytes, const Deadline& deadline,
                            const std::atomic<bool>* abortFlag, std::string_view peer) const {
  return sendRecvAll(*this, data, bytes, peer, *this, nullptr, 0, peer, deadline, abortFlag);
}

sscResult_t Socket::recvAll(void* data, size_t bytes, const Deadline& deadline,
                            const std::atomic<bool>* abortFlag, std::string_view peer) const {
  return sendRecvAll(*this, nullptr, 0, peer, *this, data, bytes, peer, deadline, abortFlag);
}

sscResult_t sendRecvAll(const Socket& out, const void* sendData, size_t sendBytes,
                        std::string_view sendPeer, const Socket& in, void* recvData,
                        size_t recvBytes, std::string_view recvPeer, const Deadline& deadline,
                        const std::atomic<bool>* abortFlag) {
  const char* src = static_cast<const char*>(sendData);
  char* dst = static_cast<char*>(recvData);
  size_t sent = 0, received = 0;
  while (sent < sendBytes || received < recvBytes) {
    bool progressed = false;
    if (sent < sendBytes) {
      IoResult io = out.trySend(src + sent, sendBytes - sent);
      if (io.status == IoResult::kProgress) {
        sent += io.bytes;
        progressed = true;
      } else if (io.status != IoResult::kWouldBlock) {
        return ioFailure(io, "sending to", sendPeer, sent, sendBytes);
      }
    }
    if (received < recvBytes) {
      IoResult io = in.tryRecv(dst + received, recvBytes - received);
      if (io.status == IoResult::kProgress) {
        received += io.bytes;
        progressed = true;
      } else if (io.status != IoResult::kWouldBlock) {
        return ioFailure(io, "receiving from", recvPeer, received, recvBytes);
      }
    }
    if (progressed) continue;
    // Only once nothing more can move: what a peer sent before it left (or before an abort was
    // raised because it left) still completes the transfer, so a barrier that a departing peer
    // finished is not failed by its departure.
    if (aborted(abortFlag)) {
      return received < recvBytes
                 ? fail(sscRemoteError, "aborted while receiving from {}", recvPeer)
                 : fail(sscRemoteError, "aborted while sending to {}", sendPeer);
    }

    pollfd fds[2];
    nfds_t count = 0;
    const bool wantSend = sent < sendBytes, wantRecv = received < recvBytes;
    if (wantSend) fds[count++] = {out.fd(), POLLOUT, 0};
    if (wantRecv) {
      if (count == 1 && fds[0].fd == in.fd())
        fds[0].events |= POLLIN;
      else
        fds[count++] = {in.fd(), POLLIN, 0};
    }
    SSC_CHECK(wantRecv ? waitReady(fds, count, deadline, abortFlag, "receiving from", recvPeer)
                       : waitReady(fds, count, deadline, abortFlag, "sending to", sendPeer));
  }
  return sscSuccess;
}

}  // namespace ssc
