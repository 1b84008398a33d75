// SPDX-License-Identifier: MIT
// The trace writer (src/comm/trace.h): the JSON it writes parses, holds one host event per call
// and one device event per call whose device interval is known, with the call's details; the
// cap counts what it drops; the file lands under the directory with the documented name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "src/comm/trace.h"

namespace ssc {
namespace {

TraceIdentity identity() {
  TraceIdentity id;
  id.rank = 3;
  id.nranks = 8;
  id.host = "node\"1";  // a quote must come out escaped
  id.pid = 4242;
  id.gpu = 1;
  id.partition = 2;
  id.backend = "host";
  id.topology = "2x4";
  return id;
}

TraceRecord allReduce(int64_t t0, bool finished) {
  TraceRecord r;
  r.name = "allreduce";
  r.dtype = "float";
  r.op = "sum";
  r.algo = "hierarchical";
  r.protocol = "fifo";
  r.path = "fifo";
  r.count = 256;
  r.bytes = 1024;
  r.channels = 2;
  r.steps = 14;
  r.hostStartNs = t0;
  r.hostEndNs = t0 + 5000;
  r.timing = std::make_shared<WorkTiming>();
  if (finished) {
    r.timing->startNs = t0 + 6000;
    r.timing->endNs = t0 + 26000;
  }
  return r;
}

size_t countOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Python's json module is the validator (the trace tool reads the files with it).
bool validJson(const std::string& text) {
  char path[] = "/tmp/ssc-trace-test-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return false;
  const bool wrote = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  const std::string cmd =
      std::string("python3 -c 'import json,sys; json.load(open(sys.argv[1]))' ") + path;
  const bool ok = wrote && std::system(cmd.c_str()) == 0;
  std::remove(path);
  return ok;
}

TEST(TraceLog, WritesValidJsonWithEveryField) {
  TraceLog log(identity(), "/nonexistent");
  const int64_t t0 = monotonicNs();
  EXPECT_EQ(log.laneOf(nullptr), 1);
  EXPECT_EQ(log.laneOf(reinterpret_cast<void*>(0x10)), 2);
  EXPECT_EQ(log.laneOf(nullptr), 1);
  EXPECT_EQ(log.add(allReduce(t0, true)), 0);
  TraceRecord send;
  send.name = "sendrecv";
  send.ops = "send 64 B to 1, recv 64 B from 2";
  send.inGroup = true;
  send.hostStartNs = t0 + 30000;
  EXPECT_EQ(log.add(send), 1);
  log.setHostEnd(1, t0 + 31000);
  const std::string text = log.json();
  EXPECT_TRUE(validJson(text)) << text;
  EXPECT_EQ(countOf(text, "\"cat\":\"api\""), 2u);
  EXPECT_EQ(countOf(text, "\"cat\":\"device\""), 1u);  // only the call whose work ran
  for (const char* field :
       {"\"bytes\":1024", "\"dtype\":\"float\"", "\"op\":\"sum\"", "\"algorithm\":\"hierarchical\"",
        "\"protocol\":\"fifo\"", "\"path\":\"fifo\"", "\"channels\":2", "\"steps\":14",
        "\"enqueue_us\":5.000", "\"device_us\":20.000", "\"device_us\":null", "\"group\":true",
        "send 64 B to 1", "\"process_name\"", "partition 2 of GPU 1", "node\\\"1", "\"dropped\":0",
        "\"pid\":3"})
    EXPECT_NE(text.find(field), std::string::npos) << field;
}

TEST(TraceLog, UnfinishedWorkIsReadLater) {
  TraceLog log(identity(), "/nonexistent");
  TraceRecord r = allReduce(monotonicNs(), false);
  std::shared_ptr<WorkTiming> timing = r.timing;
  log.add(std::move(r));
  EXPECT_EQ(countOf(log.json(), "\"cat\":\"device\""), 0u);
  timing->startNs = 10;
  timing->endNs = 20;
  EXPECT_EQ(countOf(log.json(), "\"cat\":\"device\""), 1u);
}

TEST(TraceLog, CapCountsDroppedCalls) {
  TraceLog log(identity(), "/nonexistent", 3);
  for (int i = 0; i < 5; ++i) {
    const long index = log.add(allReduce(monotonicNs(), true));
    EXPECT_EQ(index, i < 3 ? i : -1);
  }
  EXPECT_EQ(log.calls(), 3u);
  EXPECT_EQ(log.dropped(), 2u);
  const std::string text = log.json();
  EXPECT_TRUE(validJson(text));
  EXPECT_EQ(countOf(text, "\"cat\":\"api\""), 3u);
  EXPECT_NE(text.find("\"dropped\":2"), std::string::npos);
  EXPECT_NE(text.find("\"calls\":5"), std::string::npos);
}

TEST(TraceLog, WritesTheNamedFileOncePerCommunicator) {
  char dir[] = "/tmp/ssc-trace-dir-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  TraceLog first(identity(), dir), second(identity(), dir);
  first.add(allReduce(monotonicNs(), true));
  const std::string a = first.write(), b = second.write();
  const std::string expected = std::string(dir) + "/starscream-trace.node\"1.4242.rank3";
  EXPECT_EQ(a, expected + ".json");
  EXPECT_EQ(b, expected + ".2.json");  // a second communicator of the same rank
  std::ifstream in(a);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(validJson(text.str()));
  std::remove(a.c_str());
  std::remove(b.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace ssc
