// SPDX-License-Identifier: MIT
#include "src/comm/call_check.h"

#include <unistd.h>

#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "src/core/dtype.h"
#include "src/core/errors.h"
#include "src/core/log.h"
#include "transports/usr/shm_allgather.h"

namespace ssc {

const char* collEntryName(CollKind kind) {
  switch (kind) {
    case CollKind::kAllReduce: return "sscAllReduce";
    case CollKind::kReduceScatter: return "sscReduceScatter";
    case CollKind::kAllGather: return "sscAllGather";
    case CollKind::kBroadcast: return "sscBroadcast";
    case CollKind::kReduce: return "sscReduce";
    case CollKind::kAllToAll: return "sscAllToAll";
    case CollKind::kSendRecv: return "sscSend/sscRecv";
  }
  return "a collective";
}

const char* checkOpName(int op) {
  switch (op) {
    case -1: return "none";
    case sscSum: return "sum";
    case sscProd: return "prod";
    case sscMax: return "max";
    case sscMin: return "min";
    case sscAvg: return "avg";
    case sscNumOps: return "premulsum";
    default: return "an invalid op";
  }
}

namespace {

std::string kindName(int kind) {
  return kind >= 0 && kind <= static_cast<int>(CollKind::kSendRecv)
             ? collEntryName(static_cast<CollKind>(kind))
             : fmt::format("collective {}", kind);
}

// One field of the fingerprint: its name in messages and its value as text.
struct Field {
  const char* name;
  std::string (*show)(const CallFingerprint&);
};

const Field kFields[] = {
    {"call number", [](const CallFingerprint& f) { return std::to_string(f.seq); }},
    {"collective", [](const CallFingerprint& f) { return kindName(f.kind); }},
    {"count", [](const CallFingerprint& f) { return std::to_string(f.count); }},
    {"datatype", [](const CallFingerprint& f) { return std::string(dtypeApiName(f.dtype)); }},
    {"op", [](const CallFingerprint& f) { return std::string(checkOpName(f.op)); }},
    {"root",
     [](const CallFingerprint& f) {
       return f.root < 0 ? std::string("none") : std::to_string(f.root);
     }},
};

}  // namespace

std::string describeMismatch(const CallFingerprint* all, int nranks) {
  if (nranks < 1) return "";
  const CallFingerprint& ref = all[0];
  const char* fn = ref.kind >= 0 && ref.kind < static_cast<int>(CollKind::kSendRecv)
                       ? collEntryName(static_cast<CollKind>(ref.kind))
                       : "collective";
  // A rank whose own checks refused its arguments: the peers fail the call with it.
  for (int q = 0; q < nranks; ++q)
    if (all[q].status != sscSuccess)
      return fmt::format(
          "{}: call {} failed on rank {} ({}: see that rank's error), so every rank "
          "fails it (STARSCREAM_CHECK=1)",
          fn, ref.seq, q, resultName(static_cast<sscResult_t>(all[q].status)));
  for (const Field& field : kFields) {
    const std::string want = field.show(ref);
    int first = -1, others = 0;
    for (int q = 1; q < nranks; ++q) {
      if (field.show(all[q]) == want) continue;
      if (first < 0)
        first = q;
      else
        ++others;
    }
    if (first < 0) continue;
    std::string more =
        others == 0 ? "" : fmt::format(" (and {} more rank{})", others, others > 1 ? "s" : "");
    return fmt::format(
        "{}: call {} differs across ranks: rank 0 has {} {}, rank {} has {}{} "
        "(STARSCREAM_CHECK=1)",
        fn, ref.seq, field.name, want, first, field.show(all[first]), more);
  }
  return "";
}

CallChecker::CallChecker(sscComm* comm) : comm_(comm) {}
CallChecker::~CallChecker() = default;

CallFingerprint CallChecker::next(CollKind kind, size_t count, sscDataType_t dtype, int op,
                                  int root) {
  CallFingerprint f;
  f.seq = ++seq_;
  f.count = count;
  f.kind = static_cast<int32_t>(kind);
  f.dtype = static_cast<int32_t>(dtype);
  f.op = op;
  f.root = root;
  return f;
}

sscResult_t CallChecker::post(const CallFingerprint& mine, uint64_t* ticket) {
  if (table != nullptr) return table->post(&mine, sizeof(mine), ticket);
  *ticket = nextTicket_++;
  posted_[*ticket] = mine;
  return sscSuccess;
}

sscResult_t CallChecker::collect(uint64_t ticket, std::vector<CallFingerprint>* all) {
  all->assign(static_cast<size_t>(comm_->nranks), CallFingerprint{});
  if (table != nullptr) return table->collect(ticket, all->data(), sizeof(CallFingerprint));
  auto it = posted_.find(ticket);
  if (it == posted_.end()) return SSC_INTERNAL("checked mode: call {} was never posted", ticket);
  (*all)[comm_->rank] = it->second;
  posted_.erase(it);
  return comm_->bootstrap->allGather(all->data(), sizeof(CallFingerprint));
}

void CallChecker::collectMany(std::vector<Collect>* jobs) {
  auto run = [](Collect* j) {
    j->result = j->checker->collect(j->ticket, &j->all);
    if (j->result != sscSuccess) j->error = lastError();
  };
  std::vector<Collect*> overBootstrap;
  for (Collect& j : *jobs) {
    if (j.checker->table != nullptr)
      run(&j);  // shared memory: every post is already out
    else
      overBootstrap.push_back(&j);
  }
  if (overBootstrap.size() == 1) run(overBootstrap.front());
  if (overBootstrap.size() <= 1) return;
  std::vector<std::thread> threads;
  for (Collect* j : overBootstrap) threads.emplace_back(run, j);
  for (std::thread& t : threads) t.join();
}

void CallCheckerDeleter::operator()(CallChecker* checker) const { delete checker; }

namespace {

// At most 40 characters of a value in a message (a hostile value may be 64 KiB of anything).
std::string quoted(const std::string& text) {
  std::string out;
  for (char c : text.substr(0, 40)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return "'" + out + (text.size() > 40 ? "...'" : "'");
}

}  // namespace

sscResult_t callCheckSetUp(sscComm* comm) {
  const std::string text = comm->settings.getString("STARSCREAM_CHECK");
  struct Setting {
    int32_t mode;  // 0, 1, or -1: not a valid value
    char host[64];
  };
  std::vector<Setting> all(static_cast<size_t>(comm->nranks));
  std::memset(all.data(), 0, all.size() * sizeof(Setting));
  Setting& mine = all[comm->rank];
  mine.mode = text == "0" ? 0 : text == "1" ? 1 : -1;
  (void)gethostname(mine.host, sizeof(mine.host) - 1);
  // Every rank learns every setting, so all fail init alike instead of meeting at the first call.
  SSC_CHECK(comm->bootstrap->allGather(all.data(), sizeof(Setting)));
  if (mine.mode < 0)
    return fail(sscInvalidArgument,
                "STARSCREAM_CHECK={} is not valid: use 0 (off, the default) "
                "or 1 (compare every collective call across ranks)",
                quoted(text));
  bool oneHost = true;
  for (int q = 0; q < comm->nranks; ++q) {
    if (all[q].mode < 0)
      return fail(sscInvalidArgument, "rank {} has an invalid STARSCREAM_CHECK (0 or 1 expected)",
                  q);
    if (all[q].mode != mine.mode)
      return fail(sscInvalidUsage,
                  "STARSCREAM_CHECK differs across ranks: rank {} has {}, rank {} "
                  "has {} (it must be the same on every rank)",
                  comm->rank, mine.mode, q, all[q].mode);
    oneHost = oneHost && std::strncmp(all[q].host, mine.host, sizeof(mine.host)) == 0;
  }
  if (mine.mode == 0) return sscSuccess;
  comm->callCheck.reset(new CallChecker(comm));
  // Without the peer cache's table, a table of the checker's own keeps the exchange in shared
  // memory where every rank is on this host (the same decision on every rank).
  if (comm->peerCache == nullptr && comm->nranks > 1 && oneHost)
    SSC_CHECK(ShmAllGather::createShared(comm, &comm->callCheck->table));
  SSC_LOG(kInfo, "STARSCREAM_CHECK=1: every collective call is compared across ranks ({})",
          comm->peerCache != nullptr          ? "shared call table"
          : comm->callCheck->table != nullptr ? "shared table of its own"
                                              : "bootstrap all-gather");
  return sscSuccess;
}

}  // namespace ssc
