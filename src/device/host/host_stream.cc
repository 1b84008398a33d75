// SPDX-License-Identifier: MIT
#include "src/device/host/host_stream.h"

#include <atomic>
#include <set>
#include <vector>

#include "src/core/errors.h"

namespace ssc {

namespace {
std::mutex g_streamsMu;
std::set<HostStream*> g_streams;
std::atomic<uint64_t> g_errorOrder{0};
}  // namespace

HostStream::HostStream(bool nullStream) : nullStream_(nullStream) {
  thread_ = std::thread([this] { loop(); });
  std::lock_guard<std::mutex> g(g_streamsMu);
  g_streams.insert(this);
}

HostStream::~HostStream() {
  {
    std::lock_guard<std::mutex> g(g_streamsMu);
    g_streams.erase(this);
  }
  {
    std::unique_lock<std::mutex> lk(mu_);
    doneCv_.wait(lk, [&] { return queue_.empty() && !busy_; });
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  magic_ = 0;
}

void HostStream::enqueue(Task task) {
  {
    std::lock_guard<std::mutex> g(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

sscResult_t HostStream::synchronize() {
  StoredError e = drain(true);
  return e.code == sscSuccess ? sscSuccess : setError(e.code, std::move(e.message));
}

HostStream::StoredError HostStream::drain(bool clear) {
  std::unique_lock<std::mutex> lk(mu_);
  doneCv_.wait(lk, [&] { return queue_.empty() && !busy_; });
  StoredError e = firstError_;
  if (clear) firstError_ = StoredError{};
  return e;
}

void HostStream::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and drained
    Task task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lk.unlock();
    sscResult_t r = task();
    lk.lock();
    busy_ = false;
    // The task recorded its message on this thread; keep it for whoever synchronizes.
    if (r != sscSuccess && firstError_.code == sscSuccess)
      firstError_ = StoredError{r, lastError(), g_errorOrder.fetch_add(1)};
    if (queue_.empty()) doneCv_.notify_all();
  }
}

void HostStream::pretendCapture(bool on) {
  std::lock_guard<std::mutex> g(mu_);
  pretendCapturing_ = on;
}

bool HostStream::pretendCapturing() {
  std::lock_guard<std::mutex> g(mu_);
  return pretendCapturing_;
}

void HostStream::retainUntilPretendGraphDestroyed(std::function<void()> release) {
  std::lock_guard<std::mutex> g(mu_);
  pretendGraph_.push_back(std::move(release));
}

void HostStream::destroyPretendGraph() {
  std::vector<std::function<void()>> releases;
  {
    std::lock_guard<std::mutex> g(mu_);
    releases.swap(pretendGraph_);
  }
  for (auto& f : releases) f();
}

HostStream* HostStream::fromHandle(sscStream_t stream) {
  auto* s = static_cast<HostStream*>(stream);
  std::lock_guard<std::mutex> g(g_streamsMu);
  return g_streams.count(s) ? s : nullptr;
}

sscResult_t HostStream::syncAll() {
  std::vector<HostStream*> all;
  {
    std::lock_guard<std::mutex> g(g_streamsMu);
    all.assign(g_streams.begin(), g_streams.end());
  }
  StoredError first;
  for (HostStream* s : all) {
    StoredError e = s->drain(s->nullStream_);
    if (e.code != sscSuccess && (first.code == sscSuccess || e.order < first.order))
      first = std::move(e);
  }
  return first.code == sscSuccess ? sscSuccess : setError(first.code, std::move(first.message));
}

}  // namespace ssc
