// DeviceRecorder: the GPU side of a profile, behind an interface that needs no CUDA headers, so
// code compiled in every build can hold one (the CPU-only build never makes one).
//
//   profiler::CpuTracer tracer;
//   std::unique_ptr<profiler::DeviceRecorder> gpu;
//   if constexpr (kCudaBuild) gpu = profiler::make_gpu_recorder(ctx, profiler::GpuTiming::Cupti);
//   tracer.set_device_recorder(gpu.get());
//   { profiler::Profiling on(ctx, tracer); model.forward(...); }   // resume() ... pause()
//   gpu->collect(tracer.trace());                                  // device events and times
//
// The CpuTracer calls scope_opened/scope_closed at every scope edge with the scope's event id,
// on the thread that opened it, and Profiling (attach.h) resumes the recorder when profiling
// turns on and pauses it when it turns off. What the recorder does at the edges:
//   CUPTI (GpuTiming::Cupti): pushes the id as CUPTI's external correlation id on open and pops it
//     on close, so every kernel, copy and memset record carries the id of the innermost scope
//     open when it was launched (cupti_tracer.h). Kernel durations are the GPU's own timestamps.
//   CUDA events (GpuTiming::CudaEvents, and the fallback when CUPTI cannot start): records one
//     cudaEvent on the context's stream when a scope opens and one when it closes; the time
//     between them is the scope's device time, launch gaps included.
//   Both (GpuTiming::Both): the two at once, to compare them (`attnscope profile --fidelity`).
// collect() waits for the stream, then moves what was recorded since the last collect into the
// Trace (device events, Event::event_timer_ns) and fills every new event's device time
// (device_time.h). Cost per scope edge: one CUPTI push or pop (~1 us) and/or one
// cudaEventRecord (~2 us); CUPTI adds a few microseconds to every CUDA API call while resumed.
#pragma once

#include <cstdint>
#include <memory>

#include "profiler/event.h"
#include "runtime/context.h"

namespace attnscope::profiler {

class DeviceRecorder {
 public:
  virtual ~DeviceRecorder() = default;
  virtual void scope_opened(std::int64_t id) = 0;
  // Called from scope destructors: reports problems as warnings, never throws.
  virtual void scope_closed(std::int64_t id) noexcept = 0;
  // Profiling turned on: CUPTI's activity kinds are enabled only from here...
  virtual void resume() = 0;
  // ...to here (after the stream has finished), so unprofiled steps run at full speed.
  virtual void pause() noexcept = 0;
  // Waits for the stream and moves everything recorded since the last collect into `trace`.
  // Throws Error when the stream reports an asynchronous CUDA error.
  virtual void collect(Trace& trace) = 0;
  // Whether it times with CUDA events at scope edges: those cannot run inside a CUDA graph
  // capture, so a profile that replays graphs needs CUPTI alone.
  virtual bool uses_event_timers() const = 0;
};

enum class GpuTiming { Cupti, CudaEvents, Both };

// A recorder for ctx (a CUDA context). With GpuTiming::Cupti, when CUPTI cannot start it prints
// one warning naming the cause and the usual fix and times scopes with CUDA events instead.
// Defined only in CUDA builds: call it under `if constexpr (kCudaBuild)`.
std::unique_ptr<DeviceRecorder> make_gpu_recorder(Context& ctx, GpuTiming timing);

}  // namespace attnscope::profiler
