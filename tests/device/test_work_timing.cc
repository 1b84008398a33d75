// SPDX-License-Identifier: MIT
// How a traced work's interval is read back (src/device/work_timing.h): the host backend's own
// stamps; a GPU backend's timer, attached while the trace may already be reading; and a work
// that goes without a device time, which must say so (-1) rather than stay unfinished (0) and
// hold up the trace's in-order reads of the calls after it.
#include <gtest/gtest.h>

#include <memory>

#include "src/device/work_timing.h"

namespace ssc {
namespace {

// A device timer that reports what the test sets.
class FakeTimer final : public DeviceTimer {
 public:
  explicit FakeTimer(int* state) : state_(state) {}
  int read(int64_t* startNs, int64_t* endNs, bool /*fresh*/) override {
    if (*state_ == 1) *startNs = 100, *endNs = 250;
    return *state_;
  }

 private:
  int* state_;
};

TEST(WorkTiming, HostStampsReadOnceTheEndIsSet) {
  WorkTiming t;
  int64_t start = 0, end = 0;
  EXPECT_EQ(t.read(&start, &end), 0);
  t.startNs = 10;
  EXPECT_EQ(t.read(&start, &end), 0);
  t.endNs = 30;
  ASSERT_EQ(t.read(&start, &end), 1);
  EXPECT_EQ(start, 10);
  EXPECT_EQ(end, 30);
}

TEST(WorkTiming, AnAttachedTimerAnswersForTheWork) {
  WorkTiming t;
  int state = 0;
  t.attach(std::make_unique<FakeTimer>(&state));
  int64_t start = 0, end = 0;
  EXPECT_EQ(t.read(&start, &end), 0);
  state = 1;
  ASSERT_EQ(t.read(&start, &end), 1);
  EXPECT_EQ(start, 100);
  EXPECT_EQ(end, 250);
  state = -1;
  EXPECT_EQ(t.read(&start, &end), -1);
}

TEST(WorkTiming, AWorkWithoutDeviceTimeIsNeverKnown) {
  WorkTiming t;
  t.markUnknown();
  int64_t start = 0, end = 0;
  EXPECT_EQ(t.read(&start, &end), -1);
}

}  // namespace
}  // namespace ssc
