#include "profiler/cpu_tracer.h"

#include "runtime/error.h"

namespace attnscope::profiler {

CpuTracer::CpuTracer() : origin_(std::chrono::steady_clock::now()) {}

std::int64_t CpuTracer::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              origin_)
      .count();
}

void CpuTracer::begin_scope(const char* name, const char* category) {
  Event event;
  event.name = name;
  event.category = category;
  event.depth = static_cast<int>(open_.size());
  event.start_ns = now_ns();
  open_.push_back(std::move(event));
}

void CpuTracer::end_scope() {
  check(!open_.empty(), "profiler", "end_scope() without a matching begin_scope()");
  Event event = std::move(open_.back());
  open_.pop_back();
  event.end_ns = now_ns();
  events_.push_back(std::move(event));
}

std::int64_t CpuTracer::total_ns(const std::string& name) const {
  std::int64_t total = 0;
  for (const Event& e : events_) {
    if (e.name == name) total += e.end_ns - e.start_ns;
  }
  return total;
}

}  // namespace attnscope::profiler
