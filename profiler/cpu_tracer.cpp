#include "profiler/cpu_tracer.h"

#include <algorithm>

#include "runtime/error.h"

namespace attnscope::profiler {

CpuTracer::CpuTracer() : origin_(std::chrono::steady_clock::now()) {
  trace_.clock_origin_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(origin_.time_since_epoch()).count();
}

std::int64_t CpuTracer::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              origin_)
      .count();
}

CpuTracer::ThreadScopes& CpuTracer::scopes_of_this_thread() {
  const std::thread::id id = std::this_thread::get_id();
  for (ThreadScopes& scopes : threads_) {
    if (scopes.id == id) return scopes;
  }
  threads_.push_back({id, static_cast<int>(threads_.size()) + 1, {}});
  return threads_.back();
}

void CpuTracer::begin_span(std::int64_t track, const char* name) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const std::int64_t now = now_ns();
  if (const auto open = open_spans_.find(track); open != open_spans_.end()) {
    open->second.end_ns = now;
    trace_.spans.push_back(std::move(open->second));
  }
  open_spans_[track] = Span{track, name, now, now};
}

void CpuTracer::end_span(std::int64_t track) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto open = open_spans_.find(track);
  if (open == open_spans_.end()) return;
  open->second.end_ns = now_ns();
  trace_.spans.push_back(std::move(open->second));
  open_spans_.erase(open);
}

void CpuTracer::begin_scope(const char* name, const char* category) {
  const std::lock_guard<std::mutex> lock(mutex_);
  ThreadScopes& scopes = scopes_of_this_thread();
  OpenScope scope;
  scope.event.name = name;
  scope.event.category = category;
  scope.event.thread = scopes.number;
  scope.event.id = next_id_++;
  scope.event.parent = scopes.open.empty() ? -1 : scopes.open.back().event.id;
  scope.event.depth = static_cast<int>(scopes.open.size());
  scope.start_bytes = current_bytes_;
  scope.highest_bytes = current_bytes_;
  scope.event.start_ns = now_ns();
  if (device_) device_->scope_opened(scope.event.id);  // may throw: then nothing was opened
  scopes.open.push_back(std::move(scope));
}

void CpuTracer::end_scope() {
  std::int64_t end = now_ns();
  const std::lock_guard<std::mutex> lock(mutex_);
  ThreadScopes& scopes = scopes_of_this_thread();
  check(!scopes.open.empty(), "profiler", "end_scope() without a matching begin_scope()");
  OpenScope scope = std::move(scopes.open.back());
  scopes.open.pop_back();
  if (device_) {
    device_->scope_closed(scope.event.id);
    end = now_ns();
  }
  scope.event.end_ns = end;
  scope.event.peak_bytes = scope.highest_bytes - scope.start_bytes;
  if (!scopes.open.empty()) scopes.open.back().event.children_ns += scope.event.duration_ns();
  trace_.events.push_back(std::move(scope.event));
}

void CpuTracer::set_work(std::uint64_t flops, std::uint64_t bytes) {
  const std::lock_guard<std::mutex> lock(mutex_);
  ThreadScopes& scopes = scopes_of_this_thread();
  check(!scopes.open.empty(), "profiler", "set_work() outside any scope");
  scopes.open.back().event.flops = flops;
  scopes.open.back().event.bytes = bytes;
}

void CpuTracer::set_index(std::int64_t index) {
  const std::lock_guard<std::mutex> lock(mutex_);
  ThreadScopes& scopes = scopes_of_this_thread();
  check(!scopes.open.empty(), "profiler", "set_index() outside any scope");
  scopes.open.back().event.index = index;
}

void CpuTracer::start_memory_counter(Device device, std::size_t current_bytes) {
  const std::lock_guard<std::mutex> lock(mutex_);
  current_bytes_ = current_bytes;
  trace_.memory.push_back({now_ns(), device, current_bytes});
}

void CpuTracer::on_allocation_change(Device device, std::size_t current_bytes) noexcept {
  const std::lock_guard<std::mutex> lock(mutex_);
  current_bytes_ = current_bytes;
  trace_.memory.push_back({now_ns(), device, current_bytes});
  for (ThreadScopes& scopes : threads_) {
    for (OpenScope& scope : scopes.open) {
      scope.highest_bytes = std::max(scope.highest_bytes, current_bytes);
    }
  }
}

std::int64_t CpuTracer::total_ns(const std::string& name) const {
  std::int64_t total = 0;
  for (const Event& e : trace_.events) {
    if (e.name == name) total += e.duration_ns();
  }
  return total;
}

}  // namespace attnscope::profiler
