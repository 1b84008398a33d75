// SPDX-License-Identifier: MIT
// Hostile input for the topology file reader: every file of the corpus (tests/topology/corpus/:
// deep nesting, truncated files, huge numbers, wrong types, binary junk), a nesting far deeper
// than any stack, and paths that are not files (/dev/zero, a FIFO, a directory). Each must give
// an error code and a message naming the path: never a crash, a hang or unbounded memory.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "src/topology/topology.h"

namespace ssc {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// What loading `path` gave, with the message captured on the loading thread (it is per thread).
struct Loaded {
  sscResult_t result = sscSuccess;
  std::string message;
  std::string name;  // of the topology: must stay untouched on failure
};

Loaded load(const std::string& path) {
  Topology topo;
  topo.name = "untouched";
  Loaded out;
  out.result = loadTopologyFile(path, kAnyRankCount, &topo);
  out.message = lastError();
  out.name = topo.name;
  return out;
}

void expectRefused(const std::string& path, const Loaded& got, const std::string& needle = "") {
  EXPECT_NE(got.result, sscSuccess) << path;
  EXPECT_NE(got.message.find(path), std::string::npos) << path << ": " << got.message;
  EXPECT_NE(got.message.find(needle), std::string::npos) << path << ": " << got.message;
  EXPECT_EQ(got.name, "untouched") << path << ": output written on failure";
}

class TopoFuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ssc-topo-fuzz-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  fs::path dir_;
};

TEST_F(TopoFuzz, EveryCorpusFileIsRefusedWithAMessage) {
  const fs::path corpus = fs::path(SSC_SOURCE_DIR) / "tests/topology/corpus";
  int files = 0;
  for (const auto& entry : fs::directory_iterator(corpus)) {
    const std::string path = entry.path().string();
    const Loaded got = load(path);
    expectRefused(path, got);
    // The file's fault, never "a bug in Starscream" (sscInternalError).
    EXPECT_EQ(got.result, sscInvalidArgument) << path << ": " << got.message;
    ++files;
  }
  EXPECT_GE(files, 40) << "the corpus in " << corpus << " is incomplete";
}

// nlohmann parses iteratively, but printing a value (the messages quote what the file had) and
// copying one recurse: 100000 levels overflowed the stack before depth was bounded.
TEST_F(TopoFuzz, NestingDeeperThanAnyStackIsRefused) {
  const size_t levels = 100000;
  const std::string array = std::string(levels, '[') + std::string(levels, ']');
  std::string object;
  for (size_t i = 0; i < levels; ++i) object += "{\"a\":";
  object += "1" + std::string(levels, '}');
  const std::string inField =
      R"({"format": "starscream-topology/1", "nodes": 1, "gpus_per_node": 1,
          "partitions_per_gpu": 1, "gpus": )" +
      array + "}";
  for (const auto& [name, text] : {std::pair{"array.json", array}, std::pair{"object.json", object},
                                   std::pair{"field.json", inField}}) {
    const std::string path = write(name, text);
    expectRefused(path, load(path), "nested deeper than");
  }
}

TEST_F(TopoFuzz, TheDepthLimitLeavesRealFilesAlone) {
  // Placement entries are the deepest thing a valid file holds (three levels).
  const std::string path = write("ok.json", R"({"format": "starscream-topology/1", "nodes": 1,
      "gpus_per_node": 1, "partitions_per_gpu": 2, "placement": [[0, 0, 1], [0, 0, 0]]})");
  Topology topo;
  EXPECT_EQ(loadTopologyFile(path, 2, &topo), sscSuccess) << lastError();
}

// A character device has no size to check and never ends: it must be refused, not read.
TEST_F(TopoFuzz, DevZeroIsRefused) {
  const auto start = std::chrono::steady_clock::now();
  expectRefused("/dev/zero", load("/dev/zero"), "not a regular file");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST_F(TopoFuzz, DirectoryIsRefused) {
  expectRefused(dir_.string(), load(dir_.string()), "not a regular file");
}

// Opening a FIFO for reading waits for a writer; nobody will ever write this one.
TEST_F(TopoFuzz, FifoIsRefusedWithoutBlocking) {
  const std::string path = (dir_ / "fifo.json").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  auto loading = std::async(std::launch::async, [&] { return load(path); });
  if (loading.wait_for(10s) != std::future_status::ready) {
    // Unblock the reader (a writer that leaves at once gives it end-of-file), then fail.
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
    ADD_FAILURE() << "loading a FIFO blocked";
  }
  expectRefused(path, loading.get(), "not a regular file");
}

// /proc files are regular with a size of 0: the reader must go by what it reads, not by stat.
TEST_F(TopoFuzz, SizeIsWhatIsReadNotWhatStatSays) {
  expectRefused("/proc/self/status", load("/proc/self/status"), "invalid JSON");
}

TEST_F(TopoFuzz, FileOverTheCapIsRefused) {
  const std::string path = (dir_ / "huge.json").string();
  std::ofstream(path) << "{}";
  fs::resize_file(path, (64u << 20) + 1);  // sparse: costs no disk
  expectRefused(path, load(path), "too large");
}

}  // namespace
}  // namespace ssc
