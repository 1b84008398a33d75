// SPDX-License-Identifier: MIT
// What a transport sees of the communicator it serves, and nothing more: its rank among nranks,
// the topology (which peers share its node or GPU), the bootstrap ring for exchanges at setup,
// the settings the communicator read when it was created and the limits of its waits, the abort
// flag that ends every wait, and where to report a failure found asynchronously (a proxy
// thread's). sscComm (src/comm/comm.h) is a PeerView; transports never include it, so the
// communicator can change without touching them, and a transport can be tested over a fake view.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "src/core/bootstrap.h"
#include "src/core/env.h"
#include "src/core/futex_wait.h"
#include "src/topology/topology.h"
#include "starscream/starscream.h"

namespace ssc {

class PeerView {
 public:
  virtual ~PeerView() = default;

  int rank = 0;
  int nranks = 0;
  std::unique_ptr<Bootstrap> bootstrap;
  Topology topo;
  // The STARSCREAM_* variables (and external inputs) as the environment held them when the
  // communicator was created: transports, backends and the ops configure themselves from these,
  // never from the environment, so a variable set later changes nothing here.
  env::Snapshot settings;
  // STARSCREAM_TIMEOUT and STARSCREAM_SPIN from `settings`: every wait on a peer (host FIFOs,
  // the shared call table, the GEMM ops' flags; the GPU kernels' waits in timer ticks).
  WaitLimits waits;
  // Raised by sscCommAbort and by the peer watch when a peer died, aborted or left: every wait on
  // a peer (bootstrap, host transports, GPU kernels through the backend's watcher) ends.
  std::atomic<bool> abortFlag{false};

  // Records an asynchronous failure on the communicator (the first one wins) so that
  // sscCommGetAsyncError reports it.
  virtual void setAsyncError(sscResult_t code, const std::string& message) = 0;
};

}  // namespace ssc
