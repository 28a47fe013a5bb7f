// What the profiler records, and the Trace that holds it for the exporters (chrome_trace.h,
// summary.h, summary_json.h).
//
// Host side (every run): one Event per closed scope, and memory samples. Times are nanoseconds
// since the tracer was made (host steady clock; Trace::clock_origin_ns is that clock's reading at
// time 0). An event knows its parent, so nesting survives any reordering; `children_ns` is the
// time spent in its direct children, so self time = duration - children_ns exactly. `flops` and
// `bytes` (bytes a step must move) are filled in by whoever knows the work of a scope; 0 means
// unknown.
//
// Device side (GPU runs, see device_recorder.h): one DeviceEvent per CUPTI activity record
// (kernel, copy, memset, synchronisation, runtime or driver API call) on the same clock, and per
// Event its device time: the kernels, copies and memsets launched inside the scope (CUPTI), or
// the time between two CUDA events recorded on the stream at the scope's edges (the fallback).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/device.h"

namespace attnscope::profiler {

struct Event {
  std::string name;
  std::string category;
  int thread = 0;            // 1 = the first host thread that opened a scope, 2 = the next...
  std::int64_t id = 0;       // opening order, from 1 (0: "no scope" in device records)
  std::int64_t parent = -1;  // id of the enclosing scope on the same thread; -1 at the top
  int depth = 0;             // number of enclosing scopes
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t children_ns = 0;  // sum of the durations of direct children
  std::uint64_t flops = 0;       // floating-point operations; 0 = unknown
  std::uint64_t bytes = 0;       // bytes read + written; 0 = unknown
  std::int64_t index = -1;       // which one of its kind ("layer" 3); -1 = none given
  // How far the watched allocator's live bytes rose above their value at the scope's start,
  // at the highest point while it was open (0 when memory is not watched). For an attention
  // call this is exactly its temporaries.
  std::size_t peak_bytes = 0;
  // GPU runs (device_time.h): device time of the scope with its children, and the part launched
  // directly inside it (not inside a child). -1 = not measured (CPU runs).
  std::int64_t device_ns = -1;
  std::int64_t device_self_ns = -1;
  // Time between the CUDA events recorded on the stream when the scope opened and closed: the
  // fallback timer, and with CUPTI the second opinion of `attnscope profile --fidelity`. -1 = none.
  std::int64_t event_timer_ns = -1;
  int kernels = 0;  // kernels, copies and memsets CUPTI saw launched directly inside the scope

  std::int64_t duration_ns() const { return end_ns - start_ns; }
  std::int64_t self_ns() const { return duration_ns() - children_ns; }
};

// The live bytes of an allocator right after one allocation or deallocation.
struct MemorySample {
  std::int64_t time_ns = 0;
  Device device = Device::CPU;
  std::size_t current_bytes = 0;
};

enum class DeviceEventKind { Kernel, Memcpy, Memset, Synchronization, RuntimeApi, DriverApi };

// The name of each kind, as traces and summaries print it, indexed by the enum's value.
inline constexpr const char* kDeviceEventKindNames[] = {"kernel", "memcpy",       "memset",
                                                        "sync",   "cuda_runtime", "cuda_driver"};
static_assert(std::size(kDeviceEventKindNames) ==
                  static_cast<std::size_t>(DeviceEventKind::DriverApi) + 1,
              "every kind has a name");

constexpr const char* device_event_kind_name(DeviceEventKind kind) {
  const auto index = static_cast<std::size_t>(kind);
  return index < std::size(kDeviceEventKindNames) ? kDeviceEventKindNames[index] : "unknown";
}

// One CUPTI activity record. Times are on the Trace's clock (ns since the tracer was made).
struct DeviceEvent {
  DeviceEventKind kind = DeviceEventKind::Kernel;
  std::string name;  // demangled kernel name, "Memcpy HtoD", "cudaLaunchKernel", ...
  int device = -1;
  int stream = -1;           // CUPTI's stream id (work and stream synchronisations)
  std::uint32_t thread = 0;  // API calls: CUPTI's id of the calling host thread
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t correlation_id = 0;  // shared by an API call and the work it launched
  std::uint64_t external_id = 0;  // id of the innermost profiler scope open at the launch; 0 = none
  // Kernels only.
  int grid_x = 0, grid_y = 0, grid_z = 0;
  int block_x = 0, block_y = 0, block_z = 0;
  int registers_per_thread = 0;
  int static_shared_bytes = 0;
  int dynamic_shared_bytes = 0;
  double occupancy = -1;        // theoretical occupancy of the launch (occupancy.h); -1 unknown
  std::string occupancy_limit;  // what bounds it: "warps", "registers", "shared memory", "blocks"
  // Memcpy and memset only.
  std::uint64_t bytes = 0;
  // Work only: the CUDA graph that ran it (CUPTI's graphId), 0 when it was launched on its own.
  std::uint32_t graph_id = 0;

  std::int64_t duration_ns() const { return end_ns - start_ns; }
  // Work that occupies the GPU (as opposed to API calls and synchronisations).
  bool is_work() const {
    return kind == DeviceEventKind::Kernel || kind == DeviceEventKind::Memcpy ||
           kind == DeviceEventKind::Memset;
  }
  bool is_api_call() const {
    return kind == DeviceEventKind::RuntimeApi || kind == DeviceEventKind::DriverApi;
  }
};

// One phase of something with a track of its own (ScopeSink::begin_span): the engine's request
// `track` was `name` ("queued", "prefill", "decode", ...) from start_ns to end_ns.
struct Span {
  std::int64_t track = 0;
  std::string name;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

struct Trace {
  std::int64_t clock_origin_ns = 0;  // steady-clock reading (ns since its epoch) of time 0
  std::vector<Event> events;         // in the order they closed
  std::vector<MemorySample> memory;
  std::vector<Span> spans;  // in the order they ended
  // GPU runs only.
  std::vector<DeviceEvent> device;  // in start order per collection
  std::string device_timing;        // "cupti", "cuda events", "cupti + cuda events"; "" on the CPU
  std::string device_name;          // "GPU 0: NVIDIA H200"
  std::size_t dropped_records = 0;  // CUPTI records lost for lack of buffer space
  // Work replayed by CUDA graphs (graph_replay.h): given the scope that captured it, or left
  // with the graph launch's scope.
  std::size_t graph_work_attributed = 0;
  std::size_t graph_work_unattributed = 0;
  std::vector<std::string> notes;  // facts about the run, written into the trace's metadata
};

}  // namespace attnscope::profiler
