// SPDX-License-Identifier: MIT
// The host transport's segments are anonymous (memfd): a communicator never puts a name in
// /dev/shm, so a rank killed at any point of its life (with named segments, 3 of 3 kills between
// shm_open and shm_unlink left a segment behind) has nothing there to leak, and a destroyed
// communicator leaves no file descriptor open.
#include <dirent.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "starscream/starscream.h"

namespace {

std::set<std::string> entries(const char* dir) {
  std::set<std::string> out;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d)) out.insert(e->d_name);
    closedir(d);
  }
  return out;
}

TEST(ShmSegment, HostCommunicatorsNeverNameSharedMemory) {
  ::setenv("STARSCREAM_BACKEND", "host", 1);
  const std::set<std::string> shmBefore = entries("/dev/shm");
  sscComm_t comms[3] = {};
  // A first cycle starts what lives for the whole process (the peer watch's thread and its
  // wake-up descriptor); the count that matters is the one around a later communicator.
  ASSERT_EQ(sscCommInitAll(comms, 3, nullptr), sscSuccess) << sscGetLastError(nullptr);
  for (sscComm_t c : comms) ASSERT_EQ(sscCommDestroy(c), sscSuccess);
  const size_t fdsBefore = entries("/proc/self/fd").size();
  ASSERT_EQ(sscCommInitAll(comms, 3, nullptr), sscSuccess) << sscGetLastError(nullptr);
  for (const std::string& e : entries("/dev/shm"))
    EXPECT_TRUE(shmBefore.count(e)) << "a live communicator named /dev/shm/" << e;
  for (sscComm_t c : comms) EXPECT_EQ(sscCommDestroy(c), sscSuccess);
  EXPECT_EQ(entries("/dev/shm"), shmBefore);
  EXPECT_EQ(entries("/proc/self/fd").size(), fdsBefore) << "file descriptors left open";
  ::unsetenv("STARSCREAM_BACKEND");
}

// A transport setting it cannot run fails init with a message naming it, instead of being
// clamped to something else silently.
TEST(ShmSegment, OutOfRangeSettingsFailInitLoudly) {
  ::setenv("STARSCREAM_BACKEND", "host", 1);
  for (const char* name :
       {"STARSCREAM_HOST_CHANNELS", "STARSCREAM_HOST_SLOTS", "STARSCREAM_HOST_SLOT_BYTES"}) {
    for (const char* value : {"0", "1000000000"}) {
      ::setenv(name, value, 1);
      sscComm_t comms[2] = {};
      EXPECT_EQ(sscCommInitAll(comms, 2, nullptr), sscInvalidArgument) << name << "=" << value;
      EXPECT_NE(std::string(sscGetLastError(nullptr)).find(name), std::string::npos)
          << sscGetLastError(nullptr);
      ::unsetenv(name);
    }
  }
  ::unsetenv("STARSCREAM_BACKEND");
}

}  // namespace
