// SPDX-License-Identifier: MIT
// transports/net: reaching ranks on other nodes. The plugin (net_plugin.h) is loaded on first
// use; a NetComm is its communicator over the ranks of one sscComm.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transports/peer_view.h"
#include "starscream/starscream.h"
#include "transports/net/net_plugin.h"

namespace ssc {

// Ranks this rank reaches over the network: those the topology puts on another node. Empty
// when comm lives on one node. Identical reasoning on every rank (the topology is).
std::vector<int> netPeersOf(const PeerView* comm);

class NetComm {
 public:
  // Collective over comm (uses its bootstrap): loads the plugin (STARSCREAM_NET_PLUGIN), checks
  // that all ranks are processes of one job, and creates the plugin's communicator. Fails on
  // every rank when any rank fails.
  static sscResult_t create(PeerView* comm, std::unique_ptr<NetComm>* out);
  // A NetComm over a given plugin and communicator handle, which it does not free (tests drive
  // the proxy over an in-process plugin with it).
  static std::unique_ptr<NetComm> wrap(const sscNetV1* ops, void* handle);
  ~NetComm();
  NetComm(const NetComm&) = delete;
  NetComm& operator=(const NetComm&) = delete;

  const sscNetV1& ops() const { return *ops_; }
  void* handle() const { return handle_; }

 private:
  NetComm() = default;
  const sscNetV1* ops_ = nullptr;
  void* handle_ = nullptr;
  bool owned_ = true;
};

}  // namespace ssc
