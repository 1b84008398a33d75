// SPDX-License-Identifier: MIT
// A communicator's table of registered buffers (src/comm/registrations.h): which ranges overlap,
// the order of registration, the mapped registration seen from any address inside it, removal.
// Addresses are fake (nothing is dereferenced).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "src/comm/registrations.h"

namespace ssc::test {
namespace {

void* at(uintptr_t a) { return reinterpret_cast<void*>(a); }

std::vector<void*> views(uintptr_t base) { return {at(base), at(base + 0x100000)}; }

TEST(RegistrationTable, OverlapsOnlyWhatIntersects) {
  RegistrationTable t;
  EXPECT_FALSE(t.overlaps(at(0x1000), 0x100));
  t.add(at(0x1000), 0x100, {});
  t.add(at(0x3000), 0x100, {});
  EXPECT_TRUE(t.overlaps(at(0x1000), 1));
  EXPECT_TRUE(t.overlaps(at(0x10ff), 1)) << "the last byte";
  EXPECT_TRUE(t.overlaps(at(0x0f00), 0x101)) << "reaches into the first from below";
  EXPECT_TRUE(t.overlaps(at(0x0f00), 0x3000)) << "covers both";
  EXPECT_FALSE(t.overlaps(at(0x1100), 0x1f00)) << "exactly the gap between them";
  EXPECT_FALSE(t.overlaps(at(0x0f00), 0x100)) << "ends where the first starts";
  EXPECT_FALSE(t.overlaps(at(0x3100), 0x100)) << "starts where the second ends";
}

TEST(RegistrationTable, IndicesFollowTheOrderOfRegistration) {
  RegistrationTable t;
  EXPECT_EQ(t.add(at(0x5000), 16, {}), 0);
  EXPECT_EQ(t.add(at(0x1000), 16, {}), 1);
  Registration r;
  ASSERT_TRUE(t.take(at(0x5000), &r));
  EXPECT_EQ(r.index, 0);
  EXPECT_EQ(t.add(at(0x5000), 16, {}), 2) << "an index is never reused";
  EXPECT_EQ(t.size(), 2u);
}

TEST(RegistrationTable, MappedRegistrationSeenFromInsideIt) {
  RegistrationTable t;
  t.add(at(0x1000), 0x1000, views(0x7000'0000));
  t.add(at(0x4000), 0x1000, {});  // recorded only: the backend could not share it
  int calls = 0;
  const char* seenBase = nullptr;
  EXPECT_TRUE(t.withMapped(at(0x1800), 0x800, false, [&](const char* base, const Registration& r) {
    ++calls;
    seenBase = base;
    EXPECT_EQ(r.bytes, 0x1000u);
    EXPECT_EQ(r.peerBases, views(0x7000'0000));
  }));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seenBase, static_cast<const char*>(at(0x1000)));
  const auto never = [&](const char*, const Registration&) { ++calls; };
  EXPECT_FALSE(t.withMapped(at(0x1800), 0x801, false, never)) << "runs past its end";
  EXPECT_FALSE(t.withMapped(at(0x0800), 0x10, false, never)) << "below every registration";
  EXPECT_FALSE(t.withMapped(at(0x4000), 0x10, false, never)) << "not mapped";
  EXPECT_FALSE(t.withMapped(at(0x1800), 0, true, never)) << "exact: inside is not the start";
  EXPECT_TRUE(t.withMapped(at(0x1000), 0, true, never));
  EXPECT_EQ(calls, 2);
}

TEST(RegistrationTable, TakeRemovesOnlyARegistrationStart) {
  RegistrationTable t;
  t.add(at(0x1000), 0x1000, views(0x7000'0000));
  Registration r;
  EXPECT_FALSE(t.take(nullptr, &r));
  EXPECT_FALSE(t.take(at(0x1800), &r)) << "inside a buffer is not its handle";
  ASSERT_TRUE(t.take(at(0x1000), &r));
  EXPECT_EQ(r.peerBases, views(0x7000'0000));
  EXPECT_FALSE(t.take(at(0x1000), &r)) << "twice";
  EXPECT_FALSE(t.overlaps(at(0x1000), 0x1000));
  EXPECT_EQ(t.size(), 0u);
}

}  // namespace
}  // namespace ssc::test
