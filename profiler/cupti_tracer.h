// CuptiTracer: records what the GPU did (kernels, copies, memsets, synchronizations) and the
// CUDA runtime and driver calls that asked for it, through CUPTI's Activity API. Built only with
// the CUDA path and a toolkit that has CUPTI (ATTNSCOPE_WITH_CUPTI is then defined for
// gpu_recorder.cpp and test_profile_export); GpuRecorder (device_recorder.h) is its one user.
//
// How the Activity API works, in the order things happen:
//   1. start() registers two buffer callbacks and a clock (once per process) and enables the
//      activity kinds we want.
//   2. "Buffer requested": whenever CUPTI needs room, it asks us for a buffer (8 MiB here,
//      8-byte aligned). CUPTI writes records into it from its own threads, without us.
//   3. The driver appends one record per finished kernel/copy/API call: a C struct whose first
//      field says its kind (CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, ...).
//   4. "Buffer completed": when a buffer is full, or when we flush, CUPTI hands it back. We walk
//      its records with cuptiActivityGetNextRecord, copy each into a DeviceEvent, free the buffer.
//   5. take_events() forces a flush so every pending buffer completes and returns the records.
// Records arrive out of order and in batches: a kernel's record can come long after it ran, and
// on another thread than the one that launched it. Nothing here is ordered until take_events().
// pause() and resume() disable and re-enable the kinds, so that the steps that are not profiled
// run without CUPTI's overhead; records made before a pause stay until the next take_events().
//
// Clock: CUPTI normally stamps records with CLOCK_REALTIME; start() gives it the host's steady
// clock instead (cuptiActivityRegisterTimestampCallback; GPU timestamps are converted to it by
// CUPTI), the clock the host tracer uses, so kernels and scopes line up exactly. Should CUPTI
// refuse the clock, the offset between the two clocks is measured at every resume() instead.
//
// Tying kernels to ops: push_scope(id) pushes an external correlation id on this thread's
// CUPTI stack; every runtime or driver call made until pop_scope() gets an EXTERNAL_CORRELATION
// record mapping its correlation id to `id`. Kernels, copies and memsets carry the correlation id
// of the API call that launched them, so each DeviceEvent knows the id of the innermost scope
// that enclosed its launch (`external_id`, 0 when none). Driver calls are traced because
// libraries (cuBLAS) may launch through the driver API; a driver-call record is kept only when
// it launched work (the runtime's own driver calls would only duplicate the runtime's records).
//
// Costs: enabling CUPTI adds a few microseconds to every CUDA API call (API records are the
// most expensive kind) and some overhead per kernel; the timestamps of the device work itself
// are taken by the GPU and stay accurate. Buffers are memory we own: 8 MiB each, freed as they
// complete. When CUPTI cannot get a buffer in time it drops records; dropped_records() says how
// many, so a trace with holes is never mistaken for a complete one.
//
// One CuptiTracer can be active per process (CUPTI's callbacks are process-wide). When CUPTI
// cannot start (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES where the driver restricts profiling to
// administrators; another profiler such as Nsight Systems holding CUPTI), start() returns one
// line naming the cause and the usual fix, for the caller's warning.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/event.h"
#include "profiler/graph_replay.h"

namespace attnscope::profiler {

class CuptiTracer {
 public:
  static constexpr std::size_t kBufferBytes = std::size_t{8} << 20;
  static constexpr std::size_t kBufferAlignment = 8;  // CUPTI's record alignment

  CuptiTracer() = default;
  ~CuptiTracer();  // stops if still active
  CuptiTracer(const CuptiTracer&) = delete;
  CuptiTracer& operator=(const CuptiTracer&) = delete;

  // Registers the callbacks (once per process) and enables the activity kinds. Returns "" on
  // success, else one line saying why CUPTI refused and the usual fix (nothing is traced then).
  std::string start();
  // Disables the activity kinds; what was recorded stays for take_events().
  void pause();
  // Enables them again; returns "" or why not, as start() does.
  std::string resume();
  // Flushes every pending record and returns those gathered since the last call, sorted by start
  // time, with external ids resolved and times in nanoseconds of the host's steady clock (since
  // its epoch). Call it when the GPU is idle (after a synchronize), or kernels still running are
  // missed. Problems become warnings, never throws.
  std::vector<DeviceEvent> take_events();
  // Pauses, flushes and gives up the process-wide slot; records not taken are dropped. Safe to
  // call when not active.
  void stop();
  bool active() const { return active_; }

  // Ties the device work launched from this thread to `scope_id` until pop_scope(). No-ops when
  // the tracer is not active.
  void push_scope(std::uint64_t scope_id);
  void pop_scope();

  // Records CUPTI had to drop for lack of buffer space, so far. Anything but 0 means the trace
  // has holes.
  std::size_t dropped_records() const;
  // Records of kinds we did not ask for, or buffers CUPTI could not parse.
  std::size_t unparsed_records() const;
  // CUDA graph replays seen by take_events so far, their work given back to the scopes that
  // captured it (profiler/graph_replay.h).
  const GraphReplays& graph_replays() const { return graph_replays_; }

 private:
  friend struct CuptiCallbacks;
  void on_buffer_completed(std::uint8_t* buffer, std::size_t valid_bytes,
                           std::size_t dropped_in_stream);
  std::string enable_kinds();
  void disable_enabled_kinds();
  void measure_clock_offset();

  bool active_ = false;
  GraphReplays graph_replays_;      // take_events' thread only
  std::vector<int> enabled_kinds_;  // CUpti_ActivityKind values, to disable exactly those
  bool steady_timestamps_ = false;  // CUPTI accepted the steady clock
  // CUPTI timestamp minus steady-clock reading: 0 when CUPTI uses the steady clock itself.
  std::int64_t clock_offset_ns_ = 0;

  mutable std::mutex mutex_;  // guards the fields below: buffers complete on CUPTI's threads
  std::vector<DeviceEvent> events_;
  std::unordered_map<std::uint32_t, std::uint64_t> external_id_of_correlation_;
  std::size_t dropped_records_ = 0;
  std::size_t unparsed_records_ = 0;
};

}  // namespace attnscope::profiler
