#include "src/device/host/host_stream.h"

#include <set>

namespace ssc {

namespace {
std::mutex g_streamsMu;
std::set<HostStream*> g_streams;
}  // namespace

HostStream::HostStream() {
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
  std::unique_lock<std::mutex> lk(mu_);
  doneCv_.wait(lk, [&] { return queue_.empty() && !busy_; });
  sscResult_t r = firstError_;
  firstError_ = sscSuccess;
  return r;
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
    if (r != sscSuccess && firstError_ == sscSuccess) firstError_ = r;
    if (queue_.empty()) doneCv_.notify_all();
  }
}

HostStream* HostStream::fromHandle(sscStream_t stream) {
  auto* s = static_cast<HostStream*>(stream);
  std::lock_guard<std::mutex> g(g_streamsMu);
  return g_streams.count(s) ? s : nullptr;
}

void HostStream::syncAll() {
  std::vector<HostStream*> all;
  {
    std::lock_guard<std::mutex> g(g_streamsMu);
    all.assign(g_streams.begin(), g_streams.end());
  }
  for (HostStream* s : all) s->synchronize();
}

}  // namespace ssc
