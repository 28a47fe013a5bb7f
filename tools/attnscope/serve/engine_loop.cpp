// The engine's thread for `attnscope serve` (tools/attnscope/serve/engine_loop.h).
#include "tools/attnscope/serve/engine_loop.h"

#include <algorithm>

#include "tools/attnscope/cli/elapsed.h"

namespace attnscope::cli {

void LoopMetrics::Histogram::add(double value) {
  if (counts.empty()) counts.assign(bounds.size() + 1, 0);
  const auto bucket = std::lower_bound(bounds.begin(), bounds.end(), value) - bounds.begin();
  ++counts[static_cast<std::size_t>(bucket)];
  sum += value;
  ++count;
}

bool EngineLoop::Stream::next(engine::Event& event, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return false;
  event = std::move(events_.front());
  events_.pop_front();
  return true;
}

void EngineLoop::Stream::push(const engine::Event& event) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(event);
  }
  ready_.notify_one();
}

EngineLoop::EngineLoop(engine::Engine& engine, std::int64_t max_queue)
    : engine_(engine), max_queue_(max_queue), thread_([this] { run(); }) {}

EngineLoop::~EngineLoop() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    accepting_ = false;
    stopping_ = true;
  }
  work_.notify_one();
  thread_.join();
}

std::shared_ptr<EngineLoop::Stream> EngineLoop::submit(engine::Request request) {
  auto stream = std::make_shared<Stream>();
  stream->submitted_ = std::chrono::steady_clock::now();
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!accepting_ || in_flight_ >= max_queue_) {
      ++metrics_.requests_rejected;
      return nullptr;
    }
    ++in_flight_;
    inbox_.emplace_back(std::move(request), stream);
  }
  work_.notify_one();
  return stream;
}

void EngineLoop::cancel(const std::shared_ptr<Stream>& stream) {
  engine::RequestId id = 0;
  {
    const std::lock_guard<std::mutex> lock(stream->mutex_);
    if (stream->cancelled_) return;
    stream->cancelled_ = true;
    id = stream->id_;
  }
  if (id == 0) return;  // not submitted yet: the loop sees cancelled_ when it submits it
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    cancels_.push_back(stream);
  }
  work_.notify_one();
}

void EngineLoop::stop_accepting() {
  const std::lock_guard<std::mutex> lock(mutex_);
  accepting_ = false;
}

std::int64_t EngineLoop::drain(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait_until(lock, deadline, [&] { return in_flight_ == 0; });
  const std::int64_t left = in_flight_;
  if (left == 0) return 0;
  stopping_ = true;  // the loop cancels everything in flight, then exits
  lock.unlock();
  work_.notify_one();
  lock.lock();
  idle_.wait(lock, [&] { return in_flight_ == 0; });
  return left;
}

LoopMetrics EngineLoop::metrics() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return metrics_;
}

void EngineLoop::run() {
  for (;;) {
    std::vector<std::pair<engine::Request, std::shared_ptr<Stream>>> inbox;
    std::vector<std::shared_ptr<Stream>> cancels;
    bool stopping = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_.wait(lock, [&] {
        return stopping_ || !inbox_.empty() || !cancels_.empty() || !engine_.idle();
      });
      inbox.swap(inbox_);
      cancels.swap(cancels_);
      stopping = stopping_;
    }
    std::int64_t prompt_tokens = 0;
    for (auto& [request, stream] : inbox) {
      prompt_tokens += static_cast<std::int64_t>(request.prompt.size());
      const engine::RequestId id = engine_.submit(std::move(request));
      bool cancelled = false;
      {
        const std::lock_guard<std::mutex> lock(stream->mutex_);
        stream->id_ = id;
        cancelled = stream->cancelled_;
      }
      streams_[id] = stream;
      if (cancelled || stopping) engine_.cancel(id);
    }
    for (const std::shared_ptr<Stream>& stream : cancels) {
      const std::lock_guard<std::mutex> lock(stream->mutex_);
      engine_.cancel(stream->id_);  // false when it finished meanwhile: nothing to do
    }
    if (stopping) {
      for (const auto& [id, stream] : streams_) engine_.cancel(id);
    }
    if (engine_.idle() && stopping && streams_.empty()) return;

    const auto start = std::chrono::steady_clock::now();
    const engine::StepReport report = engine_.step();
    const auto now = std::chrono::steady_clock::now();
    const std::lock_guard<std::mutex> lock(mutex_);
    metrics_.busy_seconds += seconds_since(start);
    metrics_.prompt_tokens += prompt_tokens;
    for (const engine::Event& e : report.events) {
      const auto found = streams_.find(e.id);
      if (found == streams_.end()) continue;
      Stream& stream = *found->second;
      if (e.has_token) {
        ++metrics_.generation_tokens;
        const std::chrono::duration<double> since_first = now - stream.submitted_;
        const std::chrono::duration<double> since_last = now - stream.last_token_;
        if (!stream.first_token_seen_) {
          metrics_.time_to_first_token.add(since_first.count());
        } else {
          metrics_.inter_token.add(since_last.count());
        }
        stream.first_token_seen_ = true;
        stream.last_token_ = now;
      }
      stream.push(e);
      if (e.finished) {
        ++metrics_.requests_finished;
        --in_flight_;
        streams_.erase(found);
      }
    }
    const PagedKVCache::Usage usage = engine_.kv_usage();
    metrics_.running = engine_.scheduler().running();
    metrics_.waiting = engine_.scheduler().waiting() + static_cast<std::int64_t>(inbox_.size());
    metrics_.kv_blocks = usage.blocks.blocks;
    metrics_.kv_blocks_used = usage.blocks.in_use;
    metrics_.kv_blocks_free = usage.blocks.blocks - usage.blocks.in_use;
    metrics_.prefix_hits = usage.blocks.prefix_hits;
    metrics_.prefix_lookups = usage.blocks.prefix_lookups;
    metrics_.preemptions = engine_.scheduler().preemptions();
    metrics_.allocated_bytes = static_cast<std::int64_t>(engine_.allocated_bytes());
    if (in_flight_ == 0) idle_.notify_all();
  }
}

}  // namespace attnscope::cli
