// CuptiTracer: records what the GPU did (kernels, copies, memsets, synchronizations) and the
// CUDA runtime calls that asked for it, through CUPTI's Activity API. Built only with the CUDA
// path (ATTNSCOPE_WITH_CUPTI is then defined for every user of attnscope_profiler).
//
// How the Activity API works, in the order things happen:
//   1. start() registers two callbacks and enables the activity kinds we want.
//   2. "Buffer requested": whenever CUPTI needs room, it asks us for a buffer (8 MiB here,
//      8-byte aligned). CUPTI writes records into it from its own threads, without us.
//   3. The driver appends one record per finished kernel/copy/API call: a C struct whose first
//      field says its kind (CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, ...).
//   4. "Buffer completed": when a buffer is full, or when we flush, CUPTI hands it back. We walk
//      its records with cuptiActivityGetNextRecord, copy each into a DeviceEvent, free the buffer.
//   5. stop() forces a flush so every pending buffer completes, then disables the kinds.
// Records arrive out of order and in batches: a kernel's record can come long after it ran, and
// on another thread than the one that launched it. Nothing here is ordered until stop().
//
// Tying kernels to ops: push_scope(id) pushes an external correlation id on this thread's
// CUPTI stack; every runtime call made until pop_scope() gets an EXTERNAL_CORRELATION record
// mapping its correlation id to `id`. Kernels, copies and memsets carry the correlation id of
// the runtime call that launched them, so after stop() each DeviceEvent knows the id of the
// scope that enclosed its launch (`external_id`, 0 when none).
//
// Costs: enabling CUPTI adds a few microseconds to every runtime call (RUNTIME records are the
// most expensive kind) and some overhead per kernel; the timestamps of the device work itself
// are taken by the GPU and stay accurate. Buffers are memory we own: 8 MiB each, freed as they
// complete. When CUPTI cannot get a buffer in time it drops records; dropped_records() says how
// many, so a trace with holes is never mistaken for a complete one.
//
// Achieved occupancy is not computed here: it needs the device's properties (SM count, registers
// and shared memory per SM), so it is derived where the device is known, by the CUDA path that
// consumes these events. Each kernel event carries the launch shape it needs (grid, block,
// registers per thread, static and dynamic shared memory).
//
// One CuptiTracer can be active per process (CUPTI's callbacks are process-wide). When CUPTI
// cannot start (most often CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: the driver restricts profiling
// to administrators), start() prints one warning line naming the cause and the fix, and returns
// false; the caller keeps going with the host tracer alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace attnscope::profiler {

enum class DeviceEventKind { Kernel, Memcpy, Memset, Synchronization, RuntimeApi };

const char* device_event_kind_name(DeviceEventKind kind);

// One activity record, copied out of CUPTI's buffer. Times are CUPTI timestamps in nanoseconds
// (the same clock as CuptiTracer::start_timestamp_ns()). -1 means "not given by this kind".
struct DeviceEvent {
  DeviceEventKind kind = DeviceEventKind::Kernel;
  std::string name;  // demangled kernel name, "Memcpy HtoD", "cudaLaunchKernel", ...
  int device = -1;
  int stream = -1;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t correlation_id = 0;  // shared by a runtime call and the work it launched
  std::uint64_t external_id = 0;     // id given to push_scope() around the launch; 0 = none
  // Kernels only.
  int grid_x = 0, grid_y = 0, grid_z = 0;
  int block_x = 0, block_y = 0, block_z = 0;
  int registers_per_thread = 0;
  int static_shared_bytes = 0;
  int dynamic_shared_bytes = 0;
  // Memcpy and memset only.
  std::uint64_t bytes = 0;

  std::int64_t duration_ns() const { return end_ns - start_ns; }
};

class CuptiTracer {
 public:
  static constexpr std::size_t kBufferBytes = std::size_t{8} << 20;
  static constexpr std::size_t kBufferAlignment = 8;  // CUPTI's record alignment

  CuptiTracer() = default;
  ~CuptiTracer();  // stops if still active
  CuptiTracer(const CuptiTracer&) = delete;
  CuptiTracer& operator=(const CuptiTracer&) = delete;

  // Registers the buffer callbacks and enables the activity kinds. Returns false, after one
  // warning line on stderr, when CUPTI refuses (no privileges, no device, another tracer).
  bool start();
  // Flushes every pending record, disables the kinds, counts dropped records and resolves each
  // event's external id. Safe to call when not active. Problems become warnings, never throws.
  void stop();
  bool active() const { return active_; }

  // Ties the device work launched from this thread to `scope_id` until pop_scope(). No-ops when
  // the tracer is not active.
  void push_scope(std::uint64_t scope_id);
  void pop_scope();

  // Read after stop(): before that, records may still sit in CUPTI's buffers.
  const std::vector<DeviceEvent>& events() const { return events_; }
  // Records CUPTI had to drop for lack of buffer space. Anything but 0 means the trace has holes.
  std::size_t dropped_records() const { return dropped_records_; }
  // Records of kinds we did not ask for, or buffers CUPTI could not parse.
  std::size_t unparsed_records() const { return unparsed_records_; }
  // CUPTI's clock when start() succeeded, to make event times relative.
  std::int64_t start_timestamp_ns() const { return start_timestamp_ns_; }

 private:
  friend struct CuptiCallbacks;
  void on_buffer_completed(std::uint8_t* buffer, std::size_t valid_bytes,
                           std::size_t dropped_in_stream);
  void disable_enabled_kinds();

  bool active_ = false;
  std::int64_t start_timestamp_ns_ = 0;
  std::vector<int> enabled_kinds_;  // CUpti_ActivityKind values, to disable exactly those

  std::mutex mutex_;  // guards the fields below: buffers complete on CUPTI's threads
  std::vector<DeviceEvent> events_;
  std::unordered_map<std::uint32_t, std::uint64_t> external_id_of_correlation_;
  std::size_t dropped_records_ = 0;
  std::size_t unparsed_records_ = 0;
};

}  // namespace attnscope::profiler
