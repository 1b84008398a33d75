// SPDX-License-Identifier: MIT
// The emulation file format (docs/topology-format.md): every shipped file loads with the right
// shape, every class of malformed input is rejected with a message naming the field, and a
// topology survives topologyToJson -> parseTopology unchanged.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "src/topology/topology.h"

namespace ssc {
namespace {

namespace fs = std::filesystem;

std::string shipped(const std::string& name) {
  return std::string(SSC_SOURCE_DIR) + "/tools/topologies/" + name + ".json";
}

struct Shape {
  const char* file;
  int nodes;
  std::vector<int> partitions;  // per GPU, node-major
  const char* model;
  const char* compute;
  const char* memory;
  int numaDomains;  // per GPU, 0: unknown
};

// Names the case in test listings (instead of a byte dump of the struct).
void PrintTo(const Shape& s, std::ostream* os) { *os << s.file; }

std::vector<int> repeat(int count, int value) { return std::vector<int>(count, value); }

const std::vector<Shape>& shippedShapes() {
  static const std::vector<Shape> shapes = {
      {"1x4", 1, repeat(1, 4), "MI300X", "QPX", "NPS1", 1},
      {"2x2", 1, repeat(2, 2), "MI300X", "DPX", "NPS1", 1},
      {"4x2", 1, repeat(4, 2), "MI300X", "DPX", "NPS1", 1},
      {"2x4", 1, repeat(2, 4), "MI300X", "QPX", "NPS1", 1},
      {"mi300x-8x-cpx-nps4", 1, repeat(8, 8), "MI300X", "CPX", "NPS4", 4},
      {"mi300x-8x-spx-nps1", 1, repeat(8, 1), "MI300X", "SPX", "NPS1", 1},
      {"mi355x-8x-dpx-nps2", 1, repeat(8, 2), "MI355X", "DPX", "NPS2", 2},
      {"mi300x-2node-8x-cpx-nps4", 2, repeat(16, 8), "MI300X", "CPX", "NPS4", 4},
      {"h200-mps-1", 1, repeat(1, 1), "H200", "MPS", "", 0},
      {"h200-mps-2", 1, repeat(1, 2), "H200", "MPS", "", 0},
      {"h200-mps-4", 1, repeat(1, 4), "H200", "MPS", "", 0},
      {"h200-mps-8", 1, repeat(1, 8), "H200", "MPS", "", 0},
      {"h200-mps-3", 1, repeat(1, 3), "H200", "MPS", "", 0},
      {"h200-mps-5", 1, repeat(1, 5), "H200", "MPS", "", 0},
      {"h200-mps-6", 1, repeat(1, 6), "H200", "MPS", "", 0},
      {"h200-mps-7", 1, repeat(1, 7), "H200", "MPS", "", 0},
      {"uneven-3-2-1", 1, {3, 2, 1}, "MI300X", "", "", 0},
      {"2node-2x2", 2, repeat(4, 2), "MI300X", "DPX", "NPS1", 1},
      {"3node-1x2", 3, repeat(3, 2), "MI300X", "DPX", "NPS1", 1},
      {"h200-mps-2node-4", 2, repeat(2, 2), "H200", "MPS", "", 0},
      {"h200-mps-2node-8", 2, repeat(4, 2), "H200", "MPS", "", 0},
  };
  return shapes;
}

class TopoShippedFile : public ::testing::TestWithParam<Shape> {};

TEST_P(TopoShippedFile, LoadsWithItsShape) {
  const Shape& s = GetParam();
  int nranks = 0;
  for (int p : s.partitions) nranks += p;
  Topology topo;
  ASSERT_EQ(loadTopologyFile(shipped(s.file), nranks, &topo), sscSuccess) << lastError();
  EXPECT_EQ(topo.name, s.file);
  EXPECT_EQ(topo.nnodes, s.nodes);
  EXPECT_EQ(topo.nranks(), nranks);
  ASSERT_EQ(topo.gpus.size(), s.partitions.size());
  EXPECT_EQ(checkTopology(topo), sscSuccess) << lastError();
  const int gpusPerNode = static_cast<int>(s.partitions.size()) / s.nodes;
  // Packed placement: rank r fills node-major, GPU-major, partition-minor.
  int rank = 0;
  for (size_t g = 0; g < s.partitions.size(); ++g) {
    const GpuInfo& gpu = topo.gpus[g];
    EXPECT_EQ(gpu.node, static_cast<int>(g) / gpusPerNode) << "gpu " << g;
    EXPECT_EQ(gpu.localIndex, static_cast<int>(g) % gpusPerNode) << "gpu " << g;
    EXPECT_EQ(gpu.model, s.model);
    EXPECT_EQ(gpu.computePartition, s.compute);
    EXPECT_EQ(gpu.memoryPartition, s.memory);
    ASSERT_EQ(static_cast<int>(gpu.ranks.size()), s.partitions[g]) << "gpu " << g;
    for (int p = 0; p < s.partitions[g]; ++p, ++rank) {
      EXPECT_EQ(gpu.ranks[p], rank) << "gpu " << g << " partition " << p;
      const RankPlacement& place = topo.ranks[rank];
      EXPECT_EQ(place.node, gpu.node);
      EXPECT_EQ(place.gpu, static_cast<int>(g));
      EXPECT_EQ(place.partition, p);
      // CPX/NPS4: XCDs 0-1 on IOD 0, 2-3 on IOD 1, ...; DPX/NPS2: one IOD per partition.
      EXPECT_EQ(place.numa, s.numaDomains > 0 ? p * s.numaDomains / s.partitions[g] : -1)
          << "rank " << rank;
    }
  }
  for (LinkTier tier : {LinkTier::kIntraGpu, LinkTier::kInterGpu, LinkTier::kNetwork}) {
    EXPECT_GT(topo.link(tier).bandwidthGBps, 0) << linkTierName(tier);
    EXPECT_FALSE(topo.link(tier).source.empty()) << linkTierName(tier);
  }
}

TEST_P(TopoShippedFile, RoundTripsThroughJson) {
  Topology first, second;
  ASSERT_EQ(loadTopologyFile(shipped(GetParam().file), kAnyRankCount, &first), sscSuccess)
      << lastError();
  const std::string json = topologyToJson(first);
  ASSERT_EQ(parseTopology(json, "<round trip>", first.nranks(), &second), sscSuccess)
      << lastError() << "\n"
      << json;
  EXPECT_EQ(first, second) << json;
  EXPECT_EQ(topologyToJson(second), json);
}

INSTANTIATE_TEST_SUITE_P(All, TopoShippedFile, ::testing::ValuesIn(shippedShapes()),
                         [](const auto& info) {
                           std::string name = info.param.file;
                           for (char& c : name)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

// A file added to tools/topologies/ without a row above fails here, not silently untested.
TEST(TopoShippedFiles, EveryFileHasAShapeTest) {
  std::set<std::string> tested;
  for (const Shape& s : shippedShapes()) tested.insert(s.file);
  int files = 0;
  for (const auto& entry :
       fs::directory_iterator(std::string(SSC_SOURCE_DIR) + "/tools/topologies")) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    EXPECT_TRUE(tested.count(entry.path().stem().string())) << entry.path();
  }
  EXPECT_EQ(files, static_cast<int>(tested.size()));
}

TEST(TopoShippedFiles, UnevenFileOrdersPartitionsPerGpu) {
  Topology topo;
  ASSERT_EQ(loadTopologyFile(shipped("uneven-3-2-1"), 6, &topo), sscSuccess) << lastError();
  EXPECT_FALSE(topo.uniformPartitions());
  EXPECT_EQ(topo.maxPartitions(), 3);
  EXPECT_EQ(topo.gpus[0].ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(topo.gpus[1].ranks, (std::vector<int>{3, 4}));
  EXPECT_EQ(topo.gpus[2].ranks, (std::vector<int>{5}));
}

TEST(TopoShippedFiles, RankCountMismatchIsInvalidUsage) {
  Topology topo;
  EXPECT_EQ(loadTopologyFile(shipped("mi300x-8x-cpx-nps4"), 8, &topo), sscInvalidUsage);
  EXPECT_NE(lastError().find("describes 64 ranks, but the communicator has 8"), std::string::npos)
      << lastError();
  EXPECT_NE(lastError().find("mi300x-8x-cpx-nps4.json"), std::string::npos) << lastError();
}

TEST(TopoShippedFiles, TwoNodeTiers) {
  Topology topo;
  ASSERT_EQ(loadTopologyFile(shipped("mi300x-2node-8x-cpx-nps4"), 128, &topo), sscSuccess);
  EXPECT_EQ(topo.tierBetween(0, 7), LinkTier::kIntraGpu);
  EXPECT_EQ(topo.tierBetween(0, 8), LinkTier::kInterGpu);
  EXPECT_EQ(topo.tierBetween(63, 64), LinkTier::kNetwork);
  EXPECT_EQ(topo.ranks[64].node, 1);
  EXPECT_EQ(topo.ranks[64].gpu, 8);
  EXPECT_EQ(topo.gpus[8].localIndex, 0);
}

// ---- malformed input ---------------------------------------------------------------------

// Writes each case into a private temporary directory, as a user's file would be.
class TopoFileErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ssc-topo-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& text) {
    const std::string path = (dir_ / "bad.json").string();
    std::ofstream(path) << text;
    return path;
  }
  // Loads `text` and expects `code` with every one of `needles` in the message.
  void expectRejected(const std::string& text, sscResult_t code,
                      const std::vector<std::string>& needles, int nranks = kAnyRankCount) {
    Topology topo;
    topo.name = "untouched";
    const std::string path = write(text);
    EXPECT_EQ(loadTopologyFile(path, nranks, &topo), code) << text;
    EXPECT_EQ(topo.name, "untouched") << "out written on failure";
    EXPECT_NE(lastError().find(path), std::string::npos) << lastError();
    for (const auto& needle : needles)
      EXPECT_NE(lastError().find(needle), std::string::npos)
          << "message: " << lastError() << "\nmissing: " << needle << "\nfile: " << text;
  }

  fs::path dir_;
};

// A valid base document with `extra` spliced in after the required keys.
std::string doc(
    const std::string& extra,
    const std::string& shape = R"("nodes": 1, "gpus_per_node": 2, "partitions_per_gpu": 2)") {
  return R"({"format": "starscream-topology/1", )" + shape + (extra.empty() ? "" : ", " + extra) +
         "}";
}

TEST_F(TopoFileErrors, BaseDocumentIsValid) {
  Topology topo;
  ASSERT_EQ(loadTopologyFile(write(doc("")), 4, &topo), sscSuccess) << lastError();
  EXPECT_EQ(topo.name, "bad");  // the file's stem when "name" is absent
}

TEST_F(TopoFileErrors, MissingFile) {
  Topology topo;
  EXPECT_EQ(loadTopologyFile((dir_ / "absent.json").string(), 4, &topo), sscInvalidArgument);
  EXPECT_NE(lastError().find("cannot open"), std::string::npos) << lastError();
}

TEST_F(TopoFileErrors, SyntaxErrorHasLineAndColumn) {
  expectRejected("{\n  \"format\": \"starscream-topology/1\",\n  \"nodes\": 1,,\n}",
                 sscInvalidArgument, {"bad.json:3:14: invalid JSON"});
  expectRejected("", sscInvalidArgument, {"invalid JSON"});
  expectRejected(std::string("\x00\xff\x01garbage", 10), sscInvalidArgument, {"invalid JSON"});
}

TEST_F(TopoFileErrors, TopLevelMustBeAnObject) {
  expectRejected("[1, 2]", sscInvalidArgument, {"expected a JSON object"});
}

TEST_F(TopoFileErrors, UnknownKeys) {
  expectRejected(doc(R"("gpus_per_nodes": 2)"), sscInvalidArgument,
                 {"field 'gpus_per_nodes'", "unknown key", "gpus_per_node"});
  expectRejected(doc(R"("links": {"usr": {"bandwidth": 1, "latency_us": 1}})"), sscInvalidArgument,
                 {"field 'links.usr.bandwidth'", "unknown key"});
  expectRejected(doc(R"("links": {"nvlink": {"bandwidth_gbps": 1, "latency_us": 1}})"),
                 sscInvalidArgument, {"field 'links.nvlink'"});
  expectRejected(doc(R"("gpus": [{"modle": "X"}, {}])"), sscInvalidArgument,
                 {"field 'gpus[0].modle'"});
}

TEST_F(TopoFileErrors, DuplicateKey) {
  expectRejected(doc(R"("nodes": 2)"), sscInvalidArgument, {"field 'nodes'", "duplicate key"});
}

TEST_F(TopoFileErrors, MissingRequiredKeys) {
  expectRejected(R"({"format": "starscream-topology/1", "nodes": 1, "gpus_per_node": 1})",
                 sscInvalidArgument, {"field 'partitions_per_gpu'", "missing"});
  expectRejected(R"({"nodes": 1, "gpus_per_node": 1, "partitions_per_gpu": 1})", sscInvalidArgument,
                 {"field 'format'", "missing"});
}

TEST_F(TopoFileErrors, WrongFormatVersion) {
  expectRejected(R"({"format": "starscream-topology/9", "nodes": 1, "gpus_per_node": 1,
                     "partitions_per_gpu": 1})",
                 sscInvalidArgument, {"field 'format'", "starscream-topology/1"});
}

TEST_F(TopoFileErrors, WrongTypes) {
  expectRejected(doc("", R"("nodes": "1", "gpus_per_node": 2, "partitions_per_gpu": 2)"),
                 sscInvalidArgument, {"field 'nodes'", "integer", "string"});
  expectRejected(doc("", R"("nodes": 1, "gpus_per_node": 2, "partitions_per_gpu": 2.5)"),
                 sscInvalidArgument, {"field 'partitions_per_gpu'", "2.5"});
  expectRejected(doc("", R"("nodes": true, "gpus_per_node": 2, "partitions_per_gpu": 2)"),
                 sscInvalidArgument, {"field 'nodes'", "boolean"});
  expectRejected(doc(R"("gpu_model": 300)"), sscInvalidArgument, {"field 'gpu_model'", "string"});
  expectRejected(doc(R"("links": [])"), sscInvalidArgument, {"field 'links'", "object"});
  expectRejected(doc(R"("placement": "spread")"), sscInvalidArgument,
                 {"field 'placement'", "packed"});
}

TEST_F(TopoFileErrors, NonPositiveAndHugeCounts) {
  expectRejected(doc("", R"("nodes": 0, "gpus_per_node": 2, "partitions_per_gpu": 2)"),
                 sscInvalidArgument, {"field 'nodes'"});
  expectRejected(doc("", R"("nodes": 1, "gpus_per_node": -2, "partitions_per_gpu": 2)"),
                 sscInvalidArgument, {"field 'gpus_per_node'", "-2"});
  expectRejected(doc("", R"("nodes": 1, "gpus_per_node": 2, "partitions_per_gpu": [4, 0])"),
                 sscInvalidArgument, {"field 'partitions_per_gpu[1]'"});
  expectRejected(
      doc("", R"("nodes": 18446744073709551615, "gpus_per_node": 2, "partitions_per_gpu": 2)"),
      sscInvalidArgument, {"field 'nodes'"});
  expectRejected(doc("", R"("nodes": 1, "gpus_per_node": 2, "partitions_per_gpu": 1000)"),
                 sscInvalidArgument, {"field 'partitions_per_gpu'", "[1, 64]"});
}

TEST_F(TopoFileErrors, ListLengths) {
  expectRejected(doc("", R"("nodes": 1, "gpus_per_node": 2, "partitions_per_gpu": [4, 4, 4])"),
                 sscInvalidArgument, {"field 'partitions_per_gpu'", "3 entries, expected 2"});
  expectRejected(doc("", R"("nodes": 2, "gpus_per_node": [1], "partitions_per_gpu": 1)"),
                 sscInvalidArgument, {"field 'gpus_per_node'", "one per node"});
  expectRejected(doc(R"("gpus": [{}])"), sscInvalidArgument, {"field 'gpus'", "2 objects"});
  expectRejected(doc(R"("node_names": ["a", "b"])"), sscInvalidArgument, {"field 'node_names'"});
}

TEST_F(TopoFileErrors, PartitionModes) {
  expectRejected(doc(R"("compute_partition": "XPX")"), sscInvalidArgument,
                 {"field 'compute_partition'", "'XPX'", "CPX"});
  expectRejected(doc(R"("memory_partition": "NPS3")"), sscInvalidArgument,
                 {"field 'memory_partition'"});
  expectRejected(doc(R"("memory_partition": "NPS2", "numa_per_gpu": 1)"), sscInvalidArgument,
                 {"field 'numa_per_gpu'", "contradicts memory_partition NPS2"});
}

TEST_F(TopoFileErrors, PlacementMustCoverEachPartitionOnce) {
  // 2 GPUs x 2 partitions: four entries, each (gpu, partition) once.
  expectRejected(doc(R"("placement": [[0,0,0],[0,0,1],[0,1,0]])"), sscInvalidArgument,
                 {"field 'placement'", "3 entries", "4 partitions"});
  expectRejected(doc(R"("placement": [[0,0,0],[0,0,1],[0,1,0],[0,0,1]])"), sscInvalidArgument,
                 {"field 'placement[3]'", "already holds rank 1"});
  expectRejected(doc(R"("placement": [[0,0,0],[0,0,1],[0,1,0],[0,1,2]])"), sscInvalidArgument,
                 {"field 'placement[3][2] (partition)'", "[0, 1]"});
  expectRejected(doc(R"("placement": [[0,0,0],[0,0,1],[0,1,0],[0,2,1]])"), sscInvalidArgument,
                 {"field 'placement[3][1] (gpu on the node)'"});
  expectRejected(doc(R"("placement": [[0,0,0],[0,0,1],[0,1,0],[1,1,1]])"), sscInvalidArgument,
                 {"field 'placement[3][0] (node)'"});
  expectRejected(doc(R"("placement": [[0,0,0],[0,0,1],[0,1,0],[0,1]])"), sscInvalidArgument,
                 {"field 'placement[3]'", "[node, gpu, partition]"});
  expectRejected(doc(R"("numa_per_gpu": 2, "placement": [[0,0,0],[0,0,1],[0,1,0],[0,1,1,2]])"),
                 sscInvalidArgument, {"field 'placement[3][3] (numa)'"});
}

TEST_F(TopoFileErrors, Links) {
  expectRejected(doc(R"("links": {"usr": {"bandwidth_gbps": 0, "latency_us": 1}})"),
                 sscInvalidArgument, {"field 'links.usr.bandwidth_gbps'", "> 0"});
  expectRejected(doc(R"("links": {"xgmi": {"bandwidth_gbps": 48, "latency_us": -1}})"),
                 sscInvalidArgument, {"field 'links.xgmi.latency_us'", ">= 0"});
  expectRejected(doc(R"("links": {"net": {"bandwidth_gbps": 48}})"), sscInvalidArgument,
                 {"field 'links.net.latency_us'", "missing"});
  expectRejected(doc(R"("links": {"net": {"bandwidth_gbps": "fast", "latency_us": 1}})"),
                 sscInvalidArgument, {"field 'links.net.bandwidth_gbps'", "string"});
}

TEST_F(TopoFileErrors, RankCountIsCheckedAfterTheFile) {
  expectRejected(doc(""), sscInvalidUsage, {"describes 4 ranks, but the communicator has 3"}, 3);
  // A broken file reports what is broken, whatever the rank count.
  expectRejected(doc(R"("bogus": 1)"), sscInvalidArgument, {"field 'bogus'"}, 3);
}

// ---- what a valid file may say -----------------------------------------------------------

TEST(TopoFileFeatures, ExplicitPlacementOrdersRanksByPartition) {
  // Round-robin over the GPUs: rank r on GPU r % 2, partition index given in reverse.
  const std::string text = doc(R"("placement": [[0,0,1],[0,1,1],[0,0,0],[0,1,0]])");
  Topology topo;
  ASSERT_EQ(parseTopology(text, "rr.json", 4, &topo), sscSuccess) << lastError();
  EXPECT_EQ(topo.gpus[0].ranks, (std::vector<int>{2, 0}));
  EXPECT_EQ(topo.gpus[1].ranks, (std::vector<int>{3, 1}));
  EXPECT_EQ(topo.ranks[1].gpu, 1);
  EXPECT_EQ(topo.ranks[1].partition, 1);
  EXPECT_EQ(topo.tierBetween(0, 2), LinkTier::kIntraGpu);
  EXPECT_EQ(topo.tierBetween(0, 1), LinkTier::kInterGpu);
}

TEST(TopoFileFeatures, NumaPerGpuAndExplicitNuma) {
  Topology topo;
  ASSERT_EQ(parseTopology(doc(R"("numa_per_gpu": 2)",
                              R"("nodes": 1, "gpus_per_node": 1, "partitions_per_gpu": 4)"),
                          "n.json", 4, &topo),
            sscSuccess)
      << lastError();
  for (int r = 0; r < 4; ++r) EXPECT_EQ(topo.ranks[r].numa, r / 2);
  // More domains than partitions: a partition interleaves over several, so its domain is unknown.
  ASSERT_EQ(parseTopology(doc(R"("memory_partition": "NPS4")",
                              R"("nodes": 1, "gpus_per_node": 1, "partitions_per_gpu": 2)"),
                          "n.json", 2, &topo),
            sscSuccess);
  EXPECT_EQ(topo.ranks[0].numa, -1);
  ASSERT_EQ(parseTopology(doc(R"("placement": [[0,0,0,3],[0,0,1,-1]])",
                              R"("nodes": 1, "gpus_per_node": 1, "partitions_per_gpu": 2)"),
                          "n.json", 2, &topo),
            sscSuccess);
  EXPECT_EQ(topo.ranks[0].numa, 3);
  EXPECT_EQ(topo.ranks[1].numa, -1);
}

TEST(TopoFileFeatures, LinksFromFileAndDefaults) {
  Topology topo;
  const std::string links = R"("gpu_model": "MI300X", "links": {
      "usr": {"bandwidth_gbps": 123.5, "latency_us": 0.5, "source": "measured"},
      "net": {"bandwidth_gbps": 12, "latency_us": 9}})";
  ASSERT_EQ(parseTopology(doc(links), "l.json", 4, &topo), sscSuccess) << lastError();
  EXPECT_EQ(topo.intraGpu.bandwidthGBps, 123.5);
  EXPECT_EQ(topo.intraGpu.latencyUs, 0.5);
  EXPECT_EQ(topo.intraGpu.source, "measured");
  EXPECT_EQ(topo.network.source, "emulation file l.json");
  EXPECT_EQ(topo.interGpu.bandwidthGBps, 48.0);  // MI300X default
  EXPECT_NE(topo.interGpu.source.find("MI300X"), std::string::npos) << topo.interGpu.source;
}

TEST(TopoFileFeatures, UnevenNodesAndPerGpuDetailsRoundTrip) {
  const std::string text = R"({"format": "starscream-topology/1", "name": "mixed", "nodes": 2,
    "gpus_per_node": [2, 1], "partitions_per_gpu": [2, 1, 3], "gpu_model": "MI300X",
    "node_names": ["a", "b"],
    "gpus": [{"pci_bus_id": "0000:0c:00.0", "uuid": "u0", "host_numa": 0, "compute_units": 152},
             {"model": "MI325X", "compute_partition": "SPX"},
             {"memory_partition": "NPS1", "compute_partition": "TPX"}]})";
  Topology topo, again;
  ASSERT_EQ(parseTopology(text, "m.json", 6, &topo), sscSuccess) << lastError();
  EXPECT_EQ(topo.gpus[0].pciBusId, "0000:0c:00.0");
  EXPECT_EQ(topo.gpus[0].hostNuma, 0);
  EXPECT_EQ(topo.gpus[0].computeUnits, 152);
  EXPECT_EQ(topo.gpus[1].model, "MI325X");
  EXPECT_EQ(topo.gpus[2].model, "MI300X");
  EXPECT_EQ(topo.gpus[2].node, 1);
  EXPECT_EQ(topo.gpus[2].ranks, (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(topo.ranks[5].numa, 0);
  EXPECT_EQ(topo.nodeNames, (std::vector<std::string>{"a", "b"}));
  const std::string json = topologyToJson(topo);
  ASSERT_EQ(parseTopology(json, "again", 6, &again), sscSuccess) << lastError() << json;
  EXPECT_EQ(topo, again) << json;
}

// ---- built-in shapes and the invariant check ---------------------------------------------

TEST(TopoBuiltIn, FlatAndUniform) {
  const Topology flat = makeFlatTopology(4);
  EXPECT_EQ(checkTopology(flat), sscSuccess) << lastError();
  EXPECT_EQ(flat.gpus.size(), 4u);
  EXPECT_EQ(flat.maxPartitions(), 1);
  EXPECT_EQ(flat.tierBetween(0, 3), LinkTier::kInterGpu);

  const Topology uni = makeUniformTopology(2, 4, 2);
  EXPECT_EQ(checkTopology(uni), sscSuccess) << lastError();
  EXPECT_EQ(uni.nranks(), 16);
  EXPECT_EQ(uni.gpus[5].node, 1);
  EXPECT_EQ(uni.gpus[5].localIndex, 1);
  EXPECT_EQ(uni.gpus[5].ranks, (std::vector<int>{10, 11}));
  EXPECT_EQ(uni.tierBetween(10, 11), LinkTier::kIntraGpu);
  EXPECT_EQ(uni.tierBetween(0, 15), LinkTier::kNetwork);
  EXPECT_STREQ(linkTierName(LinkTier::kIntraGpu), "USR");
  EXPECT_STREQ(linkTierName(LinkTier::kInterGpu), "XGMI");
  EXPECT_STREQ(linkTierName(LinkTier::kNetwork), "NET");
}

TEST(TopoBuiltIn, CheckCatchesInconsistencies) {
  Topology t = makeUniformTopology(1, 2, 2);
  t.ranks[3].partition = 0;
  EXPECT_EQ(checkTopology(t), sscInvalidArgument);
  t = makeUniformTopology(1, 2, 2);
  t.gpus[1].localIndex = 0;
  EXPECT_EQ(checkTopology(t), sscInvalidArgument);
  t = makeUniformTopology(1, 2, 2);
  t.nnodes = 2;
  EXPECT_EQ(checkTopology(t), sscInvalidArgument);
  t = makeUniformTopology(1, 2, 2);
  t.interGpu.bandwidthGBps = 0;
  EXPECT_EQ(checkTopology(t), sscInvalidArgument);
  EXPECT_EQ(checkTopology(makeFlatTopology(0)), sscInvalidArgument);
}

TEST(TopoBuiltIn, MemoryDomainHelpers) {
  EXPECT_EQ(memoryDomainsOf("NPS4"), 4);
  EXPECT_EQ(memoryDomainsOf("NPS1"), 1);
  EXPECT_EQ(memoryDomainsOf(""), 0);
  EXPECT_EQ(memoryDomainsOf("NPSx"), 0);
  EXPECT_EQ(partitionMemoryDomain(5, 8, 4), 2);
  EXPECT_EQ(partitionMemoryDomain(2, 3, 2), 1);
  EXPECT_EQ(partitionMemoryDomain(0, 1, 4), -1);
  EXPECT_EQ(partitionMemoryDomain(0, 4, 0), -1);
}

// Which shapes make ranks share SMs/CUs (the GEMM ops' arrival barrier, docs/gemm.md): more
// ranks on a GPU than its compute mode makes hardware partitions.
TEST(TopoBuiltIn, RanksShareComputeUnits) {
  EXPECT_EQ(hardwarePartitions("CPX", "MI300X"), 8);
  EXPECT_EQ(hardwarePartitions("CPX", "MI300A"), 6);
  EXPECT_EQ(hardwarePartitions("CPX", "H200"), 0);
  EXPECT_EQ(hardwarePartitions("DPX", ""), 2);
  EXPECT_EQ(hardwarePartitions("MPS", "H200"), 0);
  EXPECT_EQ(hardwarePartitions("", ""), 0);
  EXPECT_FALSE(ranksShareComputeUnits(makeFlatTopology(4)));  // a GPU per rank
  EXPECT_FALSE(ranksShareComputeUnits(makeFlatTopology(1)));
  for (const char* mode : {"", "MPS", "SPX"}) {  // 8 ranks on one GPU's SMs
    Topology t = makeUniformTopology(1, 1, 8);
    for (GpuInfo& g : t.gpus) g.computePartition = mode, g.model = "H200";
    EXPECT_TRUE(ranksShareComputeUnits(t)) << mode;
  }
  Topology cpx = makeUniformTopology(2, 2, 8);  // 8 XCD partitions a GPU, one rank each
  for (GpuInfo& g : cpx.gpus) g.computePartition = "CPX", g.model = "MI300X";
  EXPECT_FALSE(ranksShareComputeUnits(cpx));
  cpx.gpus[3].computePartition = "QPX";  // 8 ranks on 4 partitions of one GPU
  EXPECT_TRUE(ranksShareComputeUnits(cpx));
  Topology dpx = makeUniformTopology(1, 2, 2);
  for (GpuInfo& g : dpx.gpus) g.computePartition = "DPX", g.model = "MI300X";
  EXPECT_FALSE(ranksShareComputeUnits(dpx));
}

}  // namespace
}  // namespace ssc
