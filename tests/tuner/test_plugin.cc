// SPDX-License-Identifier: MIT
// libstarscream-tuner.so as NCCL loads it: dlopen, the v5 symbol, init, getCollInfo on a cost
// table, finalize. The model's figures land in the ring's Simple and LL cells only.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tuner/plugin/nccl_tuner_v5.h"

namespace {

using namespace sscnccl;

class Plugin : public ::testing::Test {
 protected:
  void SetUp() override {
    lib_ = dlopen(SSC_TUNER_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib_, nullptr) << dlerror();
    tuner_ = static_cast<TunerV5*>(dlsym(lib_, SSC_NCCL_TUNER_SYMBOL));
    ASSERT_NE(tuner_, nullptr) << dlerror();
  }
  void TearDown() override {
    unsetenv("STARSCREAM_TOPO_FILE");
    unsetenv("STARSCREAM_TUNER_PROFILE");
    if (lib_ != nullptr) dlclose(lib_);
  }
  void* lib_ = nullptr;
  TunerV5* tuner_ = nullptr;
};

constexpr float kNcclCost = 1e6f;  // what "NCCL" put in the table before the plugin ran

// NCCL's logger, capturing what the plugin logs.
std::vector<std::string> gLines;
void capture(LogLevel, unsigned long, const char*, int, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  gLines.emplace_back(buf);
}
int linesWith(const std::string& what) {
  int n = 0;
  for (const std::string& l : gLines) n += l.find(what) != std::string::npos;
  return n;
}

void fill(float (&table)[kNumAlgorithms][kNumProtocols]) {
  for (auto& row : table)
    for (float& c : row) c = kNcclCost;
  table[kAlgoNvls][kProtoLL] = kIgnore;
}

TEST_F(Plugin, ExportsOnlyThePluginSymbol) {
  EXPECT_STREQ(tuner_->name, "starscream");
  // The model's own symbols stay inside: no clash with libstarscream*.so in the same process.
  EXPECT_EQ(dlsym(lib_, "sscAllReduce"), nullptr);
  EXPECT_EQ(dlsym(lib_, "_ZN3ssc5TunerC1ENS_8TopologyENS_12TunerProfileENS_11ModelLimitsE"),
            nullptr);
}

TEST_F(Plugin, FillsTheRingCellsFromTheModel) {
  setenv("STARSCREAM_TOPO_FILE", SSC_SOURCE_DIR "/tools/topologies/h200-mps-8.json", 1);
  void* ctx = nullptr;
  ASSERT_EQ(tuner_->init(&ctx, 42, 8, 1, nullptr, nullptr, nullptr), kSuccess);
  ASSERT_NE(ctx, nullptr);
  float table[kNumAlgorithms][kNumProtocols];
  int channels = -7;
  for (size_t bytes : {size_t{8}, size_t{1} << 28}) {
    fill(table);
    ASSERT_EQ(tuner_->getCollInfo(ctx, kAllReduce, bytes, 1, reinterpret_cast<float**>(table),
                                  kNumAlgorithms, kNumProtocols, 0, &channels),
              kSuccess);
    const float simple = table[kAlgoRing][kProtoSimple], ll = table[kAlgoRing][kProtoLL];
    EXPECT_GT(simple, 0);
    EXPECT_NE(simple, kNcclCost);
    EXPECT_GT(ll, 0);
    EXPECT_NE(ll, kNcclCost);
    // Small: LL's packets win; large: the FIFO protocol's bandwidth does.
    if (bytes == 8) {
      EXPECT_LT(ll, simple);
    } else {
      EXPECT_LT(simple, ll);
    }
    // Everything else is NCCL's, ignored cells stay ignored, channels are NCCL's to choose.
    EXPECT_EQ(table[kAlgoTree][kProtoSimple], kNcclCost);
    EXPECT_EQ(table[kAlgoRing][kProtoLL128], kNcclCost);
    EXPECT_EQ(table[kAlgoNvls][kProtoLL], kIgnore);
    EXPECT_EQ(channels, -7);
  }
  // A function the model has no plan for: untouched.
  fill(table);
  EXPECT_EQ(tuner_->getCollInfo(ctx, kSendRecv, 1024, 1, reinterpret_cast<float**>(table),
                                kNumAlgorithms, kNumProtocols, 0, &channels),
            kSuccess);
  EXPECT_EQ(table[kAlgoRing][kProtoSimple], kNcclCost);
  // An ignored ring cell stays ignored.
  fill(table);
  table[kAlgoRing][kProtoLL] = kIgnore;
  EXPECT_EQ(tuner_->getCollInfo(ctx, kAllGather, 1 << 20, 1, reinterpret_cast<float**>(table),
                                kNumAlgorithms, kNumProtocols, 0, &channels),
            kSuccess);
  EXPECT_EQ(table[kAlgoRing][kProtoLL], kIgnore);
  EXPECT_NE(table[kAlgoRing][kProtoSimple], kNcclCost);
  EXPECT_EQ(tuner_->finalize(ctx), kSuccess);
}

TEST_F(Plugin, BadInputIsAnErrorNotACrash) {
  void* ctx = nullptr;
  EXPECT_EQ(tuner_->init(&ctx, 1, 0, 1, nullptr, nullptr, nullptr), kInvalidArgument);
  setenv("STARSCREAM_TUNER_PROFILE", "/nonexistent.json", 1);
  EXPECT_EQ(tuner_->init(&ctx, 1, 4, 1, nullptr, nullptr, nullptr), kInvalidArgument);
  unsetenv("STARSCREAM_TUNER_PROFILE");
  setenv("STARSCREAM_TOPO_FILE", SSC_SOURCE_DIR "/tools/topologies/h200-mps-8.json", 1);
  EXPECT_EQ(tuner_->init(&ctx, 1, 4, 1, nullptr, nullptr, nullptr), kInvalidArgument);  // 8 != 4
  unsetenv("STARSCREAM_TOPO_FILE");
  ASSERT_EQ(tuner_->init(&ctx, 1, 6, 2, nullptr, nullptr, nullptr), kSuccess);
  float table[kNumAlgorithms][kNumProtocols];
  fill(table);
  int channels = 0;
  EXPECT_EQ(tuner_->getCollInfo(nullptr, kAllReduce, 8, 1, reinterpret_cast<float**>(table),
                                kNumAlgorithms, kNumProtocols, 0, &channels),
            kInternalError);
  // A table too small to hold the ring's cells is left alone.
  EXPECT_EQ(tuner_->getCollInfo(ctx, kAllReduce, 8, 1, reinterpret_cast<float**>(table), 1, 1, 0,
                                &channels),
            kSuccess);
  EXPECT_EQ(table[0][0], kNcclCost);
  EXPECT_EQ(tuner_->finalize(ctx), kSuccess);
}

// Proof in a log that NCCL asked: one INFO line per (function, size octave) with the cells
// before and after, and the counts at finalize.
TEST_F(Plugin, LogsWhatItSetOncePerSizeClassAndCountsAtFinalize) {
  setenv("STARSCREAM_TOPO_FILE", SSC_SOURCE_DIR "/tools/topologies/h200-mps-8.json", 1);
  gLines.clear();
  void* ctx = nullptr;
  ASSERT_EQ(tuner_->init(&ctx, 7, 8, 1, capture, nullptr, nullptr), kSuccess);
  EXPECT_EQ(linesWith("Starscream tuner: 8 ranks"), 1);
  float table[kNumAlgorithms][kNumProtocols];
  int channels = 0;
  for (size_t bytes : {size_t{8}, size_t{9}, size_t{8}, size_t{1} << 20}) {  // 8 and 9: one class
    fill(table);
    ASSERT_EQ(tuner_->getCollInfo(ctx, kAllReduce, bytes, 1, reinterpret_cast<float**>(table),
                                  kNumAlgorithms, kNumProtocols, 0, &channels),
              kSuccess);
  }
  fill(table);
  table[kAlgoRing][kProtoLL] = kIgnore;
  ASSERT_EQ(tuner_->getCollInfo(ctx, kAllGather, 4096, 1, reinterpret_cast<float**>(table),
                                kNumAlgorithms, kNumProtocols, 0, &channels),
            kSuccess);
  EXPECT_EQ(linesWith("getCollInfo"), 3);
  EXPECT_EQ(linesWith("getCollInfo AllReduce 8 B: ring Simple 1000000.0 -> "), 1);
  EXPECT_EQ(linesWith("getCollInfo AllReduce 1048576 B"), 1);
  EXPECT_EQ(linesWith("ring LL -1.0 -> -1.0 us"), 1);  // the ignored cell, reported as such
  EXPECT_EQ(tuner_->finalize(ctx), kSuccess);
  EXPECT_EQ(linesWith("getCollInfo called 5 times, 9 ring cells set"), 1) << gLines.back();
}

// The cost table on emulated machines that are not here: several GPUs, several nodes, 64 CPX
// partitions. The model's ring times grow with the size, LL wins small and Simple large.
TEST_F(Plugin, FillsTheCostTableOnEmulatedTopologies) {
  struct Case {
    const char* file;  // nullptr: nNodes x nRanks/nNodes GPUs from NCCL's counts
    size_t ranks, nodes;
  };
  for (const Case& c : {Case{SSC_SOURCE_DIR "/tools/topologies/2x4.json", 8, 1},
                        Case{SSC_SOURCE_DIR "/tools/topologies/2node-2x2.json", 8, 2},
                        Case{SSC_SOURCE_DIR "/tools/topologies/mi300x-8x-cpx-nps4.json", 64, 1},
                        Case{nullptr, 16, 2}}) {
    SCOPED_TRACE(c.file != nullptr ? c.file : "uniform 2 x 8");
    if (c.file != nullptr)
      setenv("STARSCREAM_TOPO_FILE", c.file, 1);
    else
      unsetenv("STARSCREAM_TOPO_FILE");
    void* ctx = nullptr;
    ASSERT_EQ(tuner_->init(&ctx, 3, c.ranks, c.nodes, nullptr, nullptr, nullptr), kSuccess);
    for (Func f : {kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce}) {
      float prevSimple = 0;
      for (size_t bytes : {size_t{64}, size_t{1} << 16, size_t{1} << 24, size_t{1} << 30}) {
        float table[kNumAlgorithms][kNumProtocols];
        fill(table);
        int channels = 0;
        ASSERT_EQ(tuner_->getCollInfo(ctx, f, bytes, 1, reinterpret_cast<float**>(table),
                                      kNumAlgorithms, kNumProtocols, 0, &channels),
                  kSuccess);
        const float simple = table[kAlgoRing][kProtoSimple], ll = table[kAlgoRing][kProtoLL];
        EXPECT_GT(simple, 0) << f << " " << bytes;
        EXPECT_NE(simple, kNcclCost) << f << " " << bytes;
        EXPECT_GE(simple, prevSimple) << f << " " << bytes;
        if (bytes == 64) {
          EXPECT_LE(ll, simple * 1.01f) << f;  // LL no dearer when latency-bound
        }
        if (bytes == size_t{1} << 30) {
          EXPECT_LT(simple, ll) << f;
        }
        EXPECT_EQ(table[kAlgoTree][kProtoSimple], kNcclCost);
        prevSimple = simple;
      }
    }
    EXPECT_EQ(tuner_->finalize(ctx), kSuccess);
  }
}

}  // namespace
