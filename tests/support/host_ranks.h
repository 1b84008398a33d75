// SPDX-License-Identifier: MIT
// Host-backend tests that run n ranks as threads of one process: one communicator per rank
// (sscCommInitAll) and a stream each. Header-only; gtest assertions report a failed setup.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

#include "starscream/starscream.h"

namespace ssc::test {

// Runs fn(rank, comm, stream) on n threads, one rank each, then destroys what it made.
inline void runRanks(int n, const std::function<void(int, sscComm_t, sscStream_t)>& fn) {
  std::vector<sscComm_t> comms(n, nullptr);
  ASSERT_EQ(sscCommInitAll(comms.data(), n, nullptr), sscSuccess) << sscGetLastError(nullptr);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      sscStream_t stream = nullptr;
      ASSERT_EQ(sscStreamCreate(&stream), sscSuccess);
      fn(r, comms[r], stream);
      EXPECT_EQ(sscStreamDestroy(stream), sscSuccess);
    });
  for (auto& t : threads) t.join();
  for (sscComm_t c : comms) EXPECT_EQ(sscCommDestroy(c), sscSuccess);
}

}  // namespace ssc::test
