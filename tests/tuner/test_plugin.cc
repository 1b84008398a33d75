// libstarscream-tuner.so as NCCL loads it: dlopen, the v5 symbol, init, getCollInfo on a cost
// table, finalize. The model's figures land in the ring's Simple and LL cells only.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

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

void fill(float (&table)[kNumAlgorithms][kNumProtocols]) {
  for (auto& row : table)
    for (float& c : row) c = kNcclCost;
  table[kAlgoNvls][kProtoLL] = kIgnore;
}

TEST_F(Plugin, ExportsOnlyThePluginSymbol) {
  EXPECT_STREQ(tuner_->name, "starscream");
  // The model's own symbols stay inside: no clash with libstarscream*.so in the same process.
  EXPECT_EQ(dlsym(lib_, "sscAllReduce"), nullptr);
  EXPECT_EQ(dlsym(lib_, "_ZN3ssc5TunerC1ENS_8TopologyENS_12TunerProfileENS_11ModelLimitsE"), nullptr);
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
    if (bytes == 8) EXPECT_LT(ll, simple);
    if (bytes > 8) EXPECT_LT(simple, ll);
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

}  // namespace
