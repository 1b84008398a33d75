// SPDX-License-Identifier: MIT
// Reliability: every STARSCREAM_* variable of the registry (src/core/env.cc) against a corpus of
// hostile values (tests/reliability/env_corpus.txt). Each (variable, value) pair runs in a fresh
// pair of forked processes, one rank each, both with the value set: communicator init, then two
// all-reduces on plain buffers (a small one and one of 400 KB) checked element by element. The
// contract: either init succeeds and every result is exactly right, or init (or a call) fails
// with a non-success code and an error text that names the variable. Never a crash (a signal),
// never a hang (kCaseSeconds per pair, then both ranks are killed), never wrong data.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "src/core/env.h"
#include "transports/host/shm_transport.h"
#include "starscream/starscream.h"

namespace {

constexpr double kCaseSeconds = 20;
// The ranks' own STARSCREAM_TIMEOUT (unless that is the variable under test): a wait for a peer
// that failed ends well inside the case's limit.
constexpr const char* kRankTimeout = "8";

// ---------------------------------------------------------------- the corpus

std::string unescape(const std::string& line) {
  if (line == "<empty>") return "";
  if (line.rfind("<repeat ", 0) == 0 && line.back() == '>') {
    const size_t space = line.find(' ', 8);
    const size_t n = std::stoul(line.substr(8, space - 8));
    const std::string unit = line.substr(space + 1, line.size() - space - 2);
    std::string out;
    while (out.size() < n) out += unit;
    out.resize(n);
    return out;
  }
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\\' || i + 1 >= line.size()) {
      out += line[i];
      continue;
    }
    const char e = line[++i];
    if (e == 't')
      out += '\t';
    else if (e == 'n')
      out += '\n';
    else if (e == '\\')
      out += '\\';
    else if (e == 'x' && i + 2 < line.size() + 1) {
      out += static_cast<char>(std::stoi(line.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += '\\';
      out += e;
    }
  }
  return out;
}

std::vector<std::string> loadCorpus() {
  std::ifstream in(SSC_ENV_CORPUS);
  std::vector<std::string> values;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    values.push_back(unescape(line));
  }
  return values;
}

// A value as it appears in a failure report: printable, at most 40 characters.
std::string shown(const std::string& value) {
  std::string out;
  for (unsigned char c : value.substr(0, 40)) {
    if (c >= 0x20 && c < 0x7f)
      out += static_cast<char>(c);
    else
      out += fmt::format("\\x{:02x}", c);
  }
  if (value.size() > 40) out += fmt::format("... ({} bytes)", value.size());
  return "'" + out + "'";
}

// ---------------------------------------------------------------- one rank (a forked child)

void report(int fd, const std::string& line) {
  const std::string text = line.substr(0, 4000) + "\n";
  ssize_t ignored = write(fd, text.data(), text.size());
  (void)ignored;
}

// Runs rank `rank` of the pair and exits: never returns. The result goes to `resultFd` as one
// line: "OK", "FAIL <stage> <code> <message>" or "WRONG <detail>".
[[noreturn]] void runRank(int rank, const char* var, const std::string& value, int idRead,
                          int idWrite, int resultFd, const std::string& logPath) {
  // Quiet and bounded: the library's own log goes to a file the parent shows on failure.
  const int log = open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (log >= 0) {
    dup2(log, 1);
    dup2(log, 2);
    close(log);
  }
  if (std::strcmp(var, "STARSCREAM_TIMEOUT") != 0) setenv("STARSCREAM_TIMEOUT", kRankTimeout, 1);
  setenv(var, value.c_str(), 1);
  auto failed = [&](const char* stage, sscResult_t r, sscComm_t comm) {
    report(resultFd,
           fmt::format("FAIL {} {} {}", stage, static_cast<int>(r), sscGetLastError(comm)));
    _exit(0);
  };
  // Rank 0 makes the unique id and hands it to rank 1 (a status byte first).
  sscUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (rank == 0) {
    const sscResult_t r = sscGetUniqueId(&id);
    const char ok = r == sscSuccess ? 1 : 0;
    ssize_t ignored = write(idWrite, &ok, 1);
    ignored = write(idWrite, &id, sizeof(id));
    (void)ignored;
    if (r != sscSuccess) failed("unique-id", r, nullptr);
  } else {
    char ok = 0;
    if (read(idRead, &ok, 1) != 1 || ok != 1 || read(idRead, &id, sizeof(id)) != sizeof(id)) {
      report(resultFd, "FAIL peer 0 rank 0 made no unique id");
      _exit(0);
    }
  }
  sscComm_t comm = nullptr;
  sscResult_t r = sscCommInitRank(&comm, 2, id, rank);
  if (r != sscSuccess) failed("init", r, nullptr);
  sscStream_t stream = nullptr;
  if ((r = sscStreamCreate(&stream)) != sscSuccess) failed("stream", r, comm);
  for (size_t count : {size_t{7}, size_t{100003}}) {
    void* in = nullptr;
    void* out = nullptr;
    if ((r = sscMemAlloc(&in, count * 4)) != sscSuccess) failed("alloc", r, comm);
    if ((r = sscMemAlloc(&out, count * 4)) != sscSuccess) failed("alloc", r, comm);
    // Small integers: exact in int32 and float32 alike. Rank q's element k: q * 3 + k % 11.
    const bool isFloat = count > 1000;
    for (size_t k = 0; k < count; ++k) {
      const int v = rank * 3 + static_cast<int>(k % 11);
      if (isFloat)
        static_cast<float*>(in)[k] = static_cast<float>(v);
      else
        static_cast<int32_t*>(in)[k] = v;
    }
    r = sscAllReduce(in, out, count, isFloat ? sscFloat32 : sscInt32, sscSum, comm, stream);
    if (r == sscSuccess) r = sscStreamSynchronize(stream);
    if (r != sscSuccess) failed("all-reduce", r, comm);
    for (size_t k = 0; k < count; ++k) {
      const int want = 3 + 2 * static_cast<int>(k % 11);
      const double got = isFloat ? static_cast<float*>(out)[k] : static_cast<int32_t*>(out)[k];
      if (got != want) {
        report(resultFd, fmt::format("WRONG rank {} count {} out[{}] = {} want {}", rank, count, k,
                                     got, want));
        _exit(0);
      }
    }
    sscMemFree(in);
    sscMemFree(out);
  }
  sscStreamDestroy(stream);
  if ((r = sscCommDestroy(comm)) != sscSuccess) failed("destroy", r, nullptr);
  report(resultFd, "OK");
  _exit(0);
}

// ---------------------------------------------------------------- one pair (the parent)

struct Outcome {
  std::string line[2];  // each rank's result line ("" when it wrote none)
  std::string problem;  // why the pair broke the contract ("" when it kept it)
};

std::string readAll(int fd) {
  std::string out;
  char buf[4096];
  fcntl(fd, F_SETFL, O_NONBLOCK);
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string tail(const std::string& path) {
  std::ifstream in(path);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return all.size() > 1500 ? "..." + all.substr(all.size() - 1500) : all;
}

Outcome runPair(const char* var, const std::string& value, const std::string& dir) {
  int idPipe[2], resultPipe[2][2];
  if (pipe(idPipe) != 0 || pipe(resultPipe[0]) != 0 || pipe(resultPipe[1]) != 0) {
    Outcome o;
    o.problem = "pipe() failed";
    return o;
  }
  std::string logs[2] = {dir + "/rank0.log", dir + "/rank1.log"};
  pid_t pids[2];
  for (int rank = 0; rank < 2; ++rank) {
    pids[rank] = fork();
    if (pids[rank] == 0) {
      close(resultPipe[rank][0]);
      runRank(rank, var, value, idPipe[0], idPipe[1], resultPipe[rank][1], logs[rank]);
    }
  }
  close(idPipe[0]);
  close(idPipe[1]);
  close(resultPipe[0][1]);
  close(resultPipe[1][1]);
  int status[2] = {0, 0};
  bool done[2] = {false, false};
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(kCaseSeconds);
  while (!(done[0] && done[1]) && std::chrono::steady_clock::now() < deadline) {
    for (int q = 0; q < 2; ++q)
      if (!done[q] && waitpid(pids[q], &status[q], WNOHANG) == pids[q]) done[q] = true;
    if (!(done[0] && done[1])) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Outcome o;
  for (int q = 0; q < 2; ++q)
    if (!done[q]) {
      kill(pids[q], SIGKILL);
      waitpid(pids[q], &status[q], 0);
    }
  for (int q = 0; q < 2; ++q) {
    o.line[q] = readAll(resultPipe[q][0]);
    close(resultPipe[q][0]);
  }
  const std::string pair = fmt::format("{}={}", var, shown(value));
  for (int q = 0; q < 2 && o.problem.empty(); ++q) {
    if (!done[q])
      o.problem = fmt::format("{}: rank {} hung (killed after {} s); its log: {}", pair, q,
                              kCaseSeconds, tail(logs[q]));
    else if (WIFSIGNALED(status[q]))
      o.problem = fmt::format("{}: rank {} crashed with signal {}; its log: {}", pair, q,
                              WTERMSIG(status[q]), tail(logs[q]));
    else if (o.line[q].empty())
      o.problem = fmt::format("{}: rank {} exited ({}) without a result; its log: {}", pair, q,
                              WEXITSTATUS(status[q]), tail(logs[q]));
    else if (o.line[q].rfind("WRONG", 0) == 0)
      o.problem = fmt::format("{}: wrong data: {}", pair, o.line[q]);
  }
  if (!o.problem.empty()) return o;
  // Both ranks finished: fine when both succeeded; when any failed, some rank's error must name
  // the variable (a peer of the failing rank may only see it go).
  const bool failed = o.line[0] != "OK" || o.line[1] != "OK";
  const bool named =
      o.line[0].find(var) != std::string::npos || o.line[1].find(var) != std::string::npos;
  if (failed && !named)
    o.problem = fmt::format("{}: failed without naming the variable: rank 0: {} | rank 1: {}", pair,
                            o.line[0].substr(0, 600), o.line[1].substr(0, 600));
  return o;
}

// ---------------------------------------------------------------- the tests

class EnvFuzz : public ::testing::TestWithParam<const char*> {};

TEST_P(EnvFuzz, EveryHostileValueWorksOrFailsNamingTheVariable) {
  const std::vector<std::string> corpus = loadCorpus();
  ASSERT_GE(corpus.size(), 30u) << "corpus " << SSC_ENV_CORPUS << " missing or short";
  char dirTemplate[] = "/tmp/ssc-env-fuzz-XXXXXX";
  ASSERT_NE(mkdtemp(dirTemplate), nullptr);
  const std::string dir = dirTemplate;
  int ok = 0, refused = 0;
  for (const std::string& value : corpus) {
    const Outcome o = runPair(GetParam(), value, dir);
    EXPECT_EQ(o.problem, "");
    if (o.problem.empty()) (o.line[0] == "OK" && o.line[1] == "OK" ? ok : refused) += 1;
  }
  std::remove((dir + "/rank0.log").c_str());
  std::remove((dir + "/rank1.log").c_str());
  rmdir(dir.c_str());
  std::printf("%s: %d values ran right, %d were refused naming the variable\n", GetParam(), ok,
              refused);
}

// A spin that checks neither aborts nor STARSCREAM_TIMEOUT must stay short whatever the value
// (a plain cast once wrapped 99999999999 to 1.2e9 polls, and INT64_MAX to -1).
TEST(EnvBounds, SpinCountIsClampedForEveryHostileValue) {
  ssc::env::Snapshot settings;
  for (const std::string& value : loadCorpus()) {
    settings.set("STARSCREAM_SPIN", value.c_str());
    const int spins = ssc::WaitLimits::from(settings).spins;
    EXPECT_GE(spins, 0) << shown(value);
    EXPECT_LE(spins, ssc::kShmMaxSpins) << shown(value);
  }
  settings.set("STARSCREAM_SPIN", "99999999999");
  EXPECT_EQ(ssc::WaitLimits::from(settings).spins, ssc::kShmMaxSpins);
}

std::vector<const char*> registryNames() {
  std::vector<const char*> names;
  for (const auto& v : ssc::env::registry()) names.push_back(v.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Registry, EnvFuzz, ::testing::ValuesIn(registryNames()),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param + std::strlen("STARSCREAM_"));
                         });

}  // namespace
