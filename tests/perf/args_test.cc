// SPDX-License-Identifier: MIT
#include "perf/common/args.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace ssc::perf {
namespace {

// Parses {"prog", args...} into a fresh Options.
ParseResult parse(std::initializer_list<const char*> args, Options* options) {
  std::vector<std::string> storage = {"all_reduce_perf"};
  for (const char* a : args) storage.emplace_back(a);
  std::vector<char*> argv;
  for (std::string& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  *options = Options();
  return parseArgs(static_cast<int>(storage.size()), argv.data(), options);
}

TEST(PerfArgs, DefaultsAreNcclTests) {
  Options o;
  ASSERT_EQ(parse({}, &o).status, ParseStatus::kOk);
  EXPECT_EQ(o.minBytes, 32u << 20);
  EXPECT_EQ(o.maxBytes, 32u << 20);
  EXPECT_EQ(o.stepBytes, 1u << 20);
  EXPECT_EQ(o.stepFactor, 1u);
  EXPECT_EQ(o.iters, 20);
  EXPECT_EQ(o.warmupIters, 1);
  EXPECT_EQ(o.aggIters, 1);
  EXPECT_EQ(o.runCycles, 1);
  EXPECT_EQ(o.check, 1);
  EXPECT_EQ(o.op, PerfOp::kSum);
  EXPECT_EQ(o.type, sscFloat32);
  EXPECT_EQ(o.root, 0);
  EXPECT_EQ(o.blocking, 0);
  EXPECT_EQ(o.average, 1);
  EXPECT_TRUE(o.algo.empty());
  EXPECT_TRUE(o.jsonFile.empty());
  EXPECT_TRUE(o.topoFile.empty());
}

TEST(PerfArgs, ShortFlags) {
  Options o;
  const ParseResult r = parse({"-b", "8",
                               "-e", "128M",
                               "-f", "2",
                               "-i", "4K",
                               "-n", "5",
                               "-w", "3",
                               "-m", "4",
                               "-N", "2",
                               "-c", "0",
                               "-o", "prod",
                               "-d", "bfloat16",
                               "-r", "-1",
                               "-z", "1",
                               "-a", "3",
                               "-C", "1",
                               "-R", "1",
                               "-A", "hierarchical",
                               "-J", "out.jsonl",
                               "-T", "tools/topologies/x.json"},
                              &o);
  ASSERT_EQ(r.status, ParseStatus::kOk) << r.message;
  EXPECT_EQ(o.minBytes, 8u);
  EXPECT_EQ(o.maxBytes, 128u << 20);
  EXPECT_EQ(o.stepFactor, 2u);
  EXPECT_EQ(o.stepBytes, 4096u);
  EXPECT_EQ(o.iters, 5);
  EXPECT_EQ(o.warmupIters, 3);
  EXPECT_EQ(o.aggIters, 4);
  EXPECT_EQ(o.runCycles, 2);
  EXPECT_EQ(o.check, 0);
  EXPECT_EQ(o.op, PerfOp::kProd);
  EXPECT_EQ(o.type, sscBfloat16);
  EXPECT_EQ(o.root, -1);
  EXPECT_EQ(o.blocking, 1);
  EXPECT_EQ(o.average, 3);
  EXPECT_TRUE(o.reportCpuTime);
  EXPECT_TRUE(o.localRegister);
  EXPECT_EQ(o.algo, "hierarchical");
  EXPECT_EQ(o.jsonFile, "out.jsonl");
  EXPECT_EQ(o.topoFile, "tools/topologies/x.json");
}

TEST(PerfArgs, LongFlagsAndAll) {
  Options o;
  const ParseResult r = parse(
      {"--minbytes=1K", "--maxbytes", "1G", "--stepfactor", "4", "--op", "all", "--datatype", "all",
       "--algo", "bidir_ring", "--json", "a.jsonl", "--topo", "t.json", "--iters", "7"},
      &o);
  ASSERT_EQ(r.status, ParseStatus::kOk) << r.message;
  EXPECT_EQ(o.minBytes, 1024u);
  EXPECT_EQ(o.maxBytes, size_t{1} << 30);
  EXPECT_EQ(o.stepFactor, 4u);
  EXPECT_FALSE(o.op.has_value());
  EXPECT_FALSE(o.type.has_value());
  EXPECT_EQ(o.algo, "bidir_ring");
  EXPECT_EQ(o.jsonFile, "a.jsonl");
  EXPECT_EQ(o.topoFile, "t.json");
  EXPECT_EQ(o.iters, 7);
}

TEST(PerfArgs, EveryTypeAndOpName) {
  const char* types[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                         "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  for (const char* name : types) {
    Options o;
    ASSERT_EQ(parse({"-d", name}, &o).status, ParseStatus::kOk) << name;
    EXPECT_STREQ(typeName(*o.type), name);
  }
  const char* ops[] = {"sum", "prod", "max", "min", "avg", "mulsum"};
  for (const char* name : ops) {
    Options o;
    ASSERT_EQ(parse({"-o", name}, &o).status, ParseStatus::kOk) << name;
    EXPECT_STREQ(opName(*o.op), name);
  }
}

TEST(PerfArgs, Errors) {
  Options o;
  EXPECT_EQ(parse({"-x"}, &o).status, ParseStatus::kError);
  EXPECT_EQ(parse({"--bogus"}, &o).status, ParseStatus::kError);
  EXPECT_EQ(parse({"-b"}, &o).status, ParseStatus::kError);  // missing value
  EXPECT_EQ(parse({"-n", "abc"}, &o).status, ParseStatus::kError);
  EXPECT_EQ(parse({"-n", "0"}, &o).status, ParseStatus::kError);  // no timed iterations
  EXPECT_EQ(parse({"-b", "2M", "-e", "1M"}, &o).status, ParseStatus::kError);
  EXPECT_EQ(parse({"-b", "12x"}, &o).status, ParseStatus::kError);
  EXPECT_EQ(parse({"-d", "float17"}, &o).status, ParseStatus::kError);
  EXPECT_EQ(parse({"-o", "xor"}, &o).status, ParseStatus::kError);
  EXPECT_EQ(parse({"-a", "4"}, &o).status, ParseStatus::kError);
  EXPECT_EQ(parse({"-g", "2"}, &o).status, ParseStatus::kError);  // one rank per process
  EXPECT_EQ(parse({"-A", "tree"}, &o).status, ParseStatus::kError);
  EXPECT_EQ(parse({"stray"}, &o).status, ParseStatus::kError);
  const ParseResult r = parse({"-r", "-2"}, &o);
  EXPECT_EQ(r.status, ParseStatus::kError);
  EXPECT_NE(r.message.find("-r"), std::string::npos) << r.message;
}

TEST(PerfArgs, ErrorLeavesOptionsUntouched) {
  Options o;
  parse({}, &o);
  o.iters = 99;
  std::vector<std::string> storage = {"p", "-n", "5", "-x"};
  std::vector<char*> argv;
  for (std::string& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  EXPECT_EQ(parseArgs(4, argv.data(), &o).status, ParseStatus::kError);
  EXPECT_EQ(o.iters, 99);
}

TEST(PerfArgs, HelpAndIgnoredGraphs) {
  Options o;
  EXPECT_EQ(parse({"-h"}, &o).status, ParseStatus::kHelp);
  const ParseResult r = parse({"-G", "10"}, &o);
  EXPECT_EQ(r.status, ParseStatus::kOk);
  EXPECT_NE(r.message.find("not supported"), std::string::npos);
  EXPECT_EQ(o.graphLaunches, 0);
}

TEST(PerfArgs, ParserRunsRepeatedly) {
  for (int i = 0; i < 3; ++i) {
    Options o;
    ASSERT_EQ(parse({"-n", "3", "-d", "half"}, &o).status, ParseStatus::kOk);
    EXPECT_EQ(o.iters, 3);
    EXPECT_EQ(o.type, sscFloat16);
  }
}

TEST(PerfArgs, Sizes) {
  EXPECT_EQ(parseSize("0"), 0u);
  EXPECT_EQ(parseSize("8"), 8u);
  EXPECT_EQ(parseSize("1K"), 1024u);
  EXPECT_EQ(parseSize("1k"), 1024u);
  EXPECT_EQ(parseSize("1.5M"), 3u << 19);
  EXPECT_EQ(parseSize("2G"), size_t{2} << 30);
  EXPECT_EQ(parseSize("1g"), size_t{1} << 30);
  EXPECT_FALSE(parseSize(""));
  EXPECT_FALSE(parseSize("-1"));
  EXPECT_FALSE(parseSize("1KB"));
  EXPECT_FALSE(parseSize("1T"));
  EXPECT_FALSE(parseSize("K"));
}

TEST(PerfArgs, AlgoSpecs) {
  std::string why;
  for (const char* ok : {"ring", "bidir_ring", "direct", "hierarchical", "flat_ring", "symmetric",
                         "auto", "allreduce=hierarchical,allgather=ring"}) {
    EXPECT_TRUE(validAlgoSpec(ok, &why)) << ok << ": " << why;
  }
  EXPECT_FALSE(validAlgoSpec("", &why));
  EXPECT_FALSE(validAlgoSpec("=ring", &why));
  EXPECT_FALSE(validAlgoSpec("ring,tree", &why));
  EXPECT_NE(why.find("tree"), std::string::npos);
  EXPECT_NE(why.find("symmetric"), std::string::npos) << why;  // the message lists every name
}

TEST(PerfArgs, UsageNamesEveryFlag) {
  const std::string text = usage("all_reduce_perf");
  for (const char* flag :
       {"-b,", "-e,", "-i,", "-f,", "-n,", "-m,", "-w,", "-N,", "-c,", "-o,", "-d,",
        "-r,", "-z,", "-a,", "-G,", "-C,", "-R,", "-A,", "-J,", "-T,", "-h,"}) {
    EXPECT_NE(text.find(flag), std::string::npos) << flag;
  }
  EXPECT_NE(text.find("Example"), std::string::npos);
  EXPECT_NE(text.find("symmetric"), std::string::npos);
}

}  // namespace
}  // namespace ssc::perf
