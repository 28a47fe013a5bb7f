// CpuTracer: records every scope as a complete event timed with the host's steady clock.
//
// Scopes nest (step > layer > block > op); each event keeps its name, category, thread, start
// and end in nanoseconds since the tracer was made, and its depth. Scopes are opened and closed
// on the thread that drives the model; ops parallelise inside a scope.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/context.h"

namespace attnscope::profiler {

struct Event {
  std::string name;
  std::string category;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  int depth = 0;
};

class CpuTracer final : public ScopeSink {
 public:
  CpuTracer();
  void begin_scope(const char* name, const char* category) override;
  void end_scope() override;

  // Finished events, in the order they closed.
  const std::vector<Event>& events() const { return events_; }
  // Sum of the durations of finished events with this name, in nanoseconds.
  std::int64_t total_ns(const std::string& name) const;

 private:
  std::int64_t now_ns() const;

  std::chrono::steady_clock::time_point origin_;
  std::vector<Event> open_;
  std::vector<Event> events_;
};

}  // namespace attnscope::profiler
