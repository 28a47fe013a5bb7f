// What the profiler records: events (one per closed scope) and memory samples, and the Trace
// that holds both for the exporters (chrome_trace.h, summary.h, summary_json.h).
//
// Times are nanoseconds since the tracer was made (host steady clock). An event knows its
// parent, so nesting survives any reordering; `children_ns` is the time spent in its direct
// children, so self time = duration - children_ns exactly. `flops` and `bytes` (bytes a step
// must move) are filled in by whoever knows the work of a scope; 0 means unknown.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/device.h"

namespace attnscope::profiler {

struct Event {
  std::string name;
  std::string category;
  int thread = 0;            // 1 = the first host thread that opened a scope, 2 = the next...
  std::int64_t id = 0;       // opening order, from 0
  std::int64_t parent = -1;  // id of the enclosing scope on the same thread; -1 at the top
  int depth = 0;             // number of enclosing scopes
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t children_ns = 0;  // sum of the durations of direct children
  std::uint64_t flops = 0;       // floating-point operations; 0 = unknown
  std::uint64_t bytes = 0;       // bytes read + written; 0 = unknown
  // How far the watched allocator's live bytes rose above their value at the scope's start,
  // at the highest point while it was open (0 when memory is not watched). For an attention
  // call this is exactly its temporaries.
  std::size_t peak_bytes = 0;

  std::int64_t duration_ns() const { return end_ns - start_ns; }
  std::int64_t self_ns() const { return duration_ns() - children_ns; }
};

// The live bytes of an allocator right after one allocation or deallocation.
struct MemorySample {
  std::int64_t time_ns = 0;
  Device device = Device::CPU;
  std::size_t current_bytes = 0;
};

struct Trace {
  std::vector<Event> events;  // in the order they closed
  std::vector<MemorySample> memory;
};

}  // namespace attnscope::profiler
