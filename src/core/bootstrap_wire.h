// SPDX-License-Identifier: MIT
// The bootstrap's wire formats and the helpers both ends use (the root in bootstrap_root.cc, the
// ranks in bootstrap.cc). Private to src/core.
#pragma once

#include <sys/random.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "src/core/errors.h"
#include "src/core/socket.h"
#include "starscream/starscream.h"

namespace ssc::bootstrap_wire {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// 2: each ring neighbour pair also opens a control connection (kWatchMagic) for the peer watch,
// and a rank that gives up before every rank joined withdraws from the root (kWithdraw).
// 3: the peer watch's heartbeats and "unresponsive" notices (kinds 4 and 5), which a version 2
// watch would take for junk.
constexpr uint16_t kProtocolVersion = 3;
constexpr char kIdMagic[4] = {'S', 'S', 'C', 'B'};
constexpr char kHelloMagic[4] = {'S', 'S', 'C', 'H'};
constexpr char kReplyMagic[4] = {'S', 'S', 'C', 'R'};
constexpr char kPeerMagic[4] = {'S', 'S', 'C', 'P'};
constexpr char kWatchMagic[4] = {'S', 'S', 'C', 'W'};
// Sent by a rank to the root when it stops waiting on purpose (an abort): its slot is freed and the
// job may still form. A connection that closes without it is a rank that died.
constexpr char kWithdraw = 'W';

// Caps on what the root (and a rank's ring listener) holds for clients that have connected but
// not yet said who they are. At the cap it stops accepting, so the kernel backlog absorbs a
// burst instead of the root refusing ranks; clients that stay silent past kHelloGrace (on a
// ring listener kHandshakeGrace) are dropped to free their slot.
constexpr size_t kMaxPendingClients = 256;
constexpr auto kHelloGrace = 5s;
constexpr uint32_t kMaxReplyMessage = 1024;
// The root's join clock starts when the id is made, before any rank's, so its verdict (which
// names the missing ranks) normally beats a rank's own timeout. This grace keeps it winning
// when a rank started at almost the same moment as the root.
constexpr auto kRootVerdictGrace = 250ms;
// How long a connection to a rank's listener may take to identify itself. Short, so stray
// clients cannot fill the listener for long; the real neighbour sends its handshake right after
// connect.
constexpr auto kHandshakeGrace = 2s;

// The wire formats. Integers travel in host byte order: every rank runs this same library on
// the same kind of host (as with NCCL). Packed so that the layout is the declared one; field
// order keeps the integers naturally aligned anyway.
#pragma pack(push, 1)
// Addresses travel as raw sockaddr_in / sockaddr_in6 bytes, as in NCCL: the library is
// Linux-only, so every rank agrees on the layout and on the AF_* values.
struct WireAddress {
  unsigned char bytes[sizeof(sockaddr_in6)];
};
struct IdWire {
  char magic[4];
  uint16_t version, reserved;
  uint64_t cookie;
  WireAddress root;
};
// Who a rank is: opens its hello to the root, and is sent both ways on each ring connection so
// that each end verifies the other.
struct PeerWire {
  char magic[4];
  uint16_t version, reserved;
  uint64_t cookie;
  int32_t rank, nranks;
};
// rank -> root.
struct HelloWire {
  PeerWire who;
  WireAddress listen;
};
// root -> rank; when result is not sscSuccess, messageBytes of explanation follow.
struct ReplyWire {
  char magic[4];
  int32_t result;
  uint32_t messageBytes;
  WireAddress next;
};
// Precedes every allGather block, so ranks in different calls fail instead of mixing data.
struct StepWire {
  uint32_t call, step;
  uint64_t bytes;
  bool operator==(const StepWire&) const = default;
};
#pragma pack(pop)
static_assert(sizeof(IdWire) <= SSC_UNIQUE_ID_BYTES);

inline WireAddress encodeAddress(const SocketAddress& a) {
  WireAddress w{};
  std::memcpy(w.bytes, a.get(), a.length());
  return w;
}

inline bool decodeAddress(const WireAddress& w, SocketAddress* out) {
  sockaddr_storage storage{};  // aligned, unlike the packed wire bytes
  std::memcpy(&storage, w.bytes, sizeof(w.bytes));
  *out = SocketAddress::fromSockaddr(reinterpret_cast<const sockaddr*>(&storage), sizeof(storage));
  return out->valid() && out->port() != 0;
}

inline sscResult_t decodeId(const sscUniqueId& id, uint64_t* cookie, SocketAddress* root) {
  IdWire w;
  std::memcpy(&w, id.internal, sizeof(w));
  if (std::memcmp(w.magic, kIdMagic, sizeof(kIdMagic)) != 0)
    return fail(sscInvalidArgument, "malformed unique id: it was not made by sscGetUniqueId");
  if (w.version != kProtocolVersion) {
    return fail(sscInvalidArgument,
                "unique id has bootstrap protocol version {}, this library speaks {}", w.version,
                kProtocolVersion);
  }
  if (!decodeAddress(w.root, root))
    return fail(sscInvalidArgument, "malformed unique id: bad root address");
  *cookie = w.cookie;
  return sscSuccess;
}

// The cookie tells communicators apart, so ids made at the same moment on different hosts must
// differ: take it from the kernel's entropy pool.
inline sscResult_t randomCookie(uint64_t* cookie) {
  auto* bytes = reinterpret_cast<unsigned char*>(cookie);
  for (size_t got = 0; got < sizeof(*cookie);) {
    ssize_t n = ::getrandom(bytes + got, sizeof(*cookie) - got, 0);
    if (n > 0)
      got += static_cast<size_t>(n);
    else if (errno != EINTR)
      return fail(sscSystemError, "getrandom: {}", errnoString(errno));
  }
  return sscSuccess;
}

template <typename Wire>
inline Wire stamped(const char (&magic)[4]) {
  Wire w{};
  std::memcpy(w.magic, magic, sizeof(magic));
  return w;
}

// Once its communicator formed, a root keeps its listener so that a late joiner (the unique id
// used a second time) is told so at once instead of waiting out its STARSCREAM_TIMEOUT (see
// bootstrap_root.cc). A rank of this process that joined through the root holds it open while
// its bootstrap lives: true when the id's root runs in this process (then release it later).
bool formedRootHold(uint64_t cookie);
void formedRootRelease(uint64_t cookie);

}  // namespace ssc::bootstrap_wire
