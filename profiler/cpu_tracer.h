// CpuTracer: records every scope as a complete event timed with the host's steady clock, and
// (when it watches an allocator, see attach.h) every change of the live bytes.
//
// Scopes nest (step > layer > block > op > kernel) per host thread; each event keeps its name,
// category, thread, parent, depth, start and end in nanoseconds since the tracer was made, the
// time of its direct children, and the highest rise of live bytes while it was open. Cost with
// profiling on: one mutex lock, one clock read and one event per scope edge, one sample per
// allocation. Ops parallelise inside a scope; allocations from worker threads are safe.
//
// Spans (ScopeSink::begin_span) are kept per track, apart from the scopes, and timed on the
// same clock.
//
// On a GPU it also drives a DeviceRecorder (device_recorder.h) at every scope edge, after the
// scope has its id and start time and before its end time, so the recorder's own cost (a CUPTI
// push or a cudaEventRecord) counts in the scope's host time, never in its parent's gaps.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "profiler/device_recorder.h"
#include "profiler/event.h"
#include "runtime/allocator.h"
#include "runtime/context.h"

namespace attnscope::profiler {

class CpuTracer final : public ScopeSink, public AllocationObserver {
 public:
  CpuTracer();
  void begin_scope(const char* name, const char* category) override;
  void end_scope() override;
  void set_work(std::uint64_t flops, std::uint64_t bytes) override;
  void set_index(std::int64_t index) override;
  void begin_span(std::int64_t track, const char* name) override;
  void end_span(std::int64_t track) override;
  void on_allocation_change(Device device, std::size_t current_bytes) noexcept override;
  // Starts the memory counter at the bytes already live (before the allocator reports changes).
  void start_memory_counter(Device device, std::size_t current_bytes);
  // The GPU side of this profile (nullptr: none, the default). Set it while no scope is open.
  void set_device_recorder(DeviceRecorder* recorder) { device_ = recorder; }
  DeviceRecorder* device_recorder() const { return device_; }

  // Finished events, in the order they closed. Read them once no scope is being recorded.
  const std::vector<Event>& events() const { return trace_.events; }
  std::vector<Event>& events() { return trace_.events; }
  const std::vector<MemorySample>& memory() const { return trace_.memory; }
  const Trace& trace() const { return trace_; }
  Trace& trace() { return trace_; }
  // Sum of the durations of finished events with this name, in nanoseconds.
  std::int64_t total_ns(const std::string& name) const;

 private:
  struct OpenScope {
    Event event;
    std::size_t start_bytes = 0;
    std::size_t highest_bytes = 0;
  };
  struct ThreadScopes {
    std::thread::id id;
    int number = 0;
    std::vector<OpenScope> open;
  };

  std::int64_t now_ns() const;
  ThreadScopes& scopes_of_this_thread();  // call with mutex_ held

  std::chrono::steady_clock::time_point origin_;
  std::mutex mutex_;
  std::vector<ThreadScopes> threads_;
  std::int64_t next_id_ = 1;  // 0 is never a scope: device records use it for "none"
  std::size_t current_bytes_ = 0;
  DeviceRecorder* device_ = nullptr;
  std::map<std::int64_t, Span> open_spans_;  // by track
  Trace trace_;
};

}  // namespace attnscope::profiler
