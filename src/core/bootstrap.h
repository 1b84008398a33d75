// SPDX-License-Identifier: MIT
// Bootstrap: how ranks find each other before any data moves. sscGetUniqueId starts a root
// listener thread and encodes its address plus a random cookie; every rank connects to the root,
// which checks the cookie and rank count, then hands each rank the listening address of the next
// rank so the ranks form a TCP ring. allGather runs around that ring (n-1 steps); barrier is an
// allGather of nothing. All waits honour the abort flag and STARSCREAM_TIMEOUT. Each ring link
// also has a control connection for the peer watch (dead, aborted or departed peers). A rank
// whose connection to the root closes before every rank joined (without withdrawing) died: the
// root then fails every rank that joined, naming it. The root listens before the id exists, so a
// rank whose connection to it is refused knows it is gone and fails at once (so with a ring
// neighbour's listener); once the communicator formed, the root tells a rank that joins with the
// same id again that the id was used.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "src/core/env.h"
#include "src/core/peer_watch.h"
#include "starscream/starscream.h"

namespace ssc {

// The settings the bootstrap runs by, from those its communicator (or unique id) read when it
// was created (from()): the bootstrap never reads the environment itself. Value-initialised, it
// waits without limit and listens on loopback.
struct BootstrapOptions {
  double timeoutSeconds = 0;    // STARSCREAM_TIMEOUT: each wait on the root or the ring; <= 0: none
  double heartbeatTimeout = 0;  // STARSCREAM_HEARTBEAT_TIMEOUT as the peer watch takes it
  std::string socketIfname;     // STARSCREAM_SOCKET_IFNAME: where to listen ("" loopback)
  static BootstrapOptions from(const env::Snapshot& settings);
};

// Creates the unique id: starts the root listener (it serves exactly one communicator of
// whatever nranks the first rank announces; after that it only answers late joiners, while a
// rank of this process keeps the communicator, else for a minute) and fills *id. The root waits
// for the ranks' joins at most options.timeoutSeconds from now.
sscResult_t bootstrapCreateUniqueId(const BootstrapOptions& options, sscUniqueId* id);

class Bootstrap {
 public:
  // Connects this rank. Fails with sscInvalidArgument for a malformed id, sscRemoteError /
  // sscInvalidUsage (with a message) when the root rejects the cookie, the rank count, a
  // duplicate rank or an id already used, sscRemoteError when the root or a ring neighbour is
  // gone (refused or closed the connection), sscTimeout when one does not answer in time.
  // `abortFlag` may be null; when it becomes true every blocking call returns sscRemoteError.
  static sscResult_t connect(const sscUniqueId& id, int rank, int nranks,
                             const std::atomic<bool>* abortFlag, const BootstrapOptions& options,
                             std::unique_ptr<Bootstrap>* out);
  virtual ~Bootstrap() = default;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  // The cookie of the unique id; the same on every rank of the communicator.
  uint64_t cookie() const { return cookie_; }

  // In place: data holds nranks blocks of `bytes` each; this rank's block (at rank*bytes) is
  // its contribution; on return every block is filled. Collective over all ranks.
  virtual sscResult_t allGather(void* data, size_t bytes) = 0;
  virtual sscResult_t barrier() = 0;

  // Starts the peer watch (peer_watch.h) on the ring's control connections: from now on a
  // neighbour that dies, aborts or leaves is reported to `handler` within milliseconds, one that
  // sends no heartbeat for options.heartbeatTimeout as unresponsive (with its host and pid),
  // on the watcher thread. No-op for one rank.
  virtual void startWatch(PeerEventHandler handler, ExitKind onExit) = 0;
  // Announces this rank's departure to every rank and stops the watch (idempotent).
  virtual void stopWatch(PeerEventKind announce) = 0;
  // True while a thread is inside allGather or barrier (waiting on the ring).
  virtual bool busy() const = 0;

 protected:
  int rank_ = 0;
  int nranks_ = 0;
  uint64_t cookie_ = 0;
};

}  // namespace ssc
