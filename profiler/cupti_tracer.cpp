// CuptiTracer: the Activity API flow of cupti_tracer.h. CUPTI calls plain C callbacks, so the
// active tracer is reached through one process-wide pointer.
#include "profiler/cupti_tracer.h"

#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <unordered_set>
#include <utility>

namespace attnscope::profiler {

namespace {

// The tracer CUPTI's buffer callbacks deliver to. A callback (on CUPTI's own thread) holds the
// mutex while it hands its records over, so stop(), which clears the pointer under the mutex,
// never returns while a callback still uses the tracer.
std::mutex g_active_mutex;
CuptiTracer* g_active_tracer = nullptr;

constexpr CUpti_ActivityKind kTracedKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
};

std::int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The clock CUPTI stamps records with once start() has registered it.
std::uint64_t CUPTIAPI steady_clock_timestamp() {
  return static_cast<std::uint64_t>(steady_now_ns());
}

std::string cupti_result_text(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) {
    return "CUPTI error " + std::to_string(static_cast<int>(result));
  }
  return text;
}

// The usual way out of a CUPTI failure.
std::string usual_fix(CUptiResult result) {
  switch (result) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return "the driver restricts profiling to administrators: load it with "
             "NVreg_RestrictProfilingToAdminUsers=0 (a line 'options nvidia "
             "NVreg_RestrictProfilingToAdminUsers=0' in /etc/modprobe.d, then reboot), or run with "
             "CAP_SYS_ADMIN (as root; in a container: --cap-add SYS_ADMIN)";
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_HARDWARE_BUSY:
      return "another profiler (Nsight Systems, Nsight Compute, a CUPTI-based tool) holds CUPTI: "
             "run attnscope without it";
    case CUPTI_ERROR_NOT_INITIALIZED:
    case CUPTI_ERROR_NOT_COMPATIBLE:
      return "CUPTI could not attach to the CUDA driver: use the CUPTI of a toolkit the installed "
             "driver supports, and no other profiler at the same time";
    default:
      return "check that the installed driver supports this toolkit's CUPTI (nvidia-smi) and that "
             "no other profiler is attached";
  }
}

// "<call>: <CUPTI's message> (<fix>)"
std::string failure_text(CUptiResult result, const char* call) {
  return std::string(call) + ": " + cupti_result_text(result) + " (" + usual_fix(result) + ")";
}

// Prints one warning line and returns false when `result` is not success.
bool warn_on_failure(CUptiResult result, const char* call) {
  if (result == CUPTI_SUCCESS) return true;
  std::fprintf(stderr, "attnscope: warning: cupti: %s\n", failure_text(result, call).c_str());
  return false;
}

// Kernel names arrive mangled ("_Z6matmulPKfS0_Pfi"); a name that is not ("memcpy", extern "C"
// kernels) or that fails to demangle stays as it is.
std::string demangled(const char* name) {
  if (name == nullptr) return "<unnamed kernel>";
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* readable = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || readable == nullptr) return name;
  std::string result = readable;
  std::free(readable);
  return result;
}

const char* memcpy_direction(std::uint8_t copy_kind) {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "Memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "Memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "Memcpy DtoD";
    default:
      return "Memcpy";
  }
}

const char* synchronization_name(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return "cudaEventSynchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return "cudaStreamWaitEvent";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return "cudaStreamSynchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return "cudaDeviceSynchronize";
    default:
      return "synchronization";
  }
}

std::string api_name(CUpti_CallbackDomain domain, CUpti_CallbackId callback_id) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, callback_id, &name) != CUPTI_SUCCESS || name == nullptr) {
    return "API call " + std::to_string(callback_id);
  }
  return name;
}

// The fields every activity record has: its kind and name, its span on the clock and the
// correlation id of the API call that caused it. Each from_* below adds the fields of its kind.
template <typename Record>
DeviceEvent timed_event(DeviceEventKind kind, std::string name, const Record& record) {
  DeviceEvent event;
  event.kind = kind;
  event.name = std::move(name);
  event.start_ns = static_cast<std::int64_t>(record.start);
  event.end_ns = static_cast<std::int64_t>(record.end);
  event.correlation_id = record.correlationId;
  return event;
}

// timed_event plus the device, the stream and the graph that ran it (0: none), for the work that
// runs on a stream (kernels, copies, memsets).
template <typename Record>
DeviceEvent stream_event(DeviceEventKind kind, std::string name, const Record& record) {
  DeviceEvent event = timed_event(kind, std::move(name), record);
  event.device = static_cast<int>(record.deviceId);
  event.stream = static_cast<int>(record.streamId);
  event.graph_id = record.graphId;
  return event;
}

DeviceEvent from_kernel(const CUpti_ActivityKernel10& record) {
  DeviceEvent event = stream_event(DeviceEventKind::Kernel, demangled(record.name), record);
  event.grid_x = record.gridX;
  event.grid_y = record.gridY;
  event.grid_z = record.gridZ;
  event.block_x = record.blockX;
  event.block_y = record.blockY;
  event.block_z = record.blockZ;
  event.registers_per_thread = record.registersPerThread;
  event.static_shared_bytes = record.staticSharedMemory;
  event.dynamic_shared_bytes = record.dynamicSharedMemory;
  return event;
}

DeviceEvent from_memcpy(const CUpti_ActivityMemcpy6& record) {
  DeviceEvent event =
      stream_event(DeviceEventKind::Memcpy, memcpy_direction(record.copyKind), record);
  event.bytes = record.bytes;
  return event;
}

DeviceEvent from_memset(const CUpti_ActivityMemset4& record) {
  DeviceEvent event = stream_event(DeviceEventKind::Memset, "Memset", record);
  event.bytes = record.bytes;
  return event;
}

DeviceEvent from_synchronization(const CUpti_ActivitySynchronization2& record) {
  DeviceEvent event =
      timed_event(DeviceEventKind::Synchronization, synchronization_name(record.type), record);
  event.stream = static_cast<int>(record.streamId);
  return event;
}

DeviceEvent from_api_call(const CUpti_ActivityAPI& record) {
  const bool runtime = record.kind == CUPTI_ACTIVITY_KIND_RUNTIME;
  DeviceEvent event = timed_event(
      runtime ? DeviceEventKind::RuntimeApi : DeviceEventKind::DriverApi,
      api_name(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, record.cbid),
      record);
  event.thread = record.threadId;
  return event;
}

}  // namespace

// The C callbacks CUPTI calls, and the process-wide setup; a struct so they can reach the
// tracer's private parts.
struct CuptiCallbacks {
  static void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size,
                                        std::size_t* max_records) {
    // No buffer (out of memory) is allowed: CUPTI then drops records and counts them.
    *buffer = static_cast<std::uint8_t*>(::operator new (
        CuptiTracer::kBufferBytes, std::align_val_t{CuptiTracer::kBufferAlignment}, std::nothrow));
    *size = *buffer != nullptr ? CuptiTracer::kBufferBytes : 0;
    *max_records = 0;  // as many as fit
  }

  static void CUPTIAPI buffer_completed(CUcontext context, std::uint32_t stream_id,
                                        std::uint8_t* buffer, std::size_t /*size*/,
                                        std::size_t valid_bytes) {
    std::size_t dropped = 0;
    warn_on_failure(cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped),
                    "cuptiActivityGetNumDroppedRecords");
    {
      const std::lock_guard<std::mutex> lock(g_active_mutex);
      if (g_active_tracer != nullptr) {
        g_active_tracer->on_buffer_completed(buffer, valid_bytes, dropped);
      }
    }
    ::operator delete (buffer, std::align_val_t{CuptiTracer::kBufferAlignment});
  }

  // Done once per process, by the first start(): the buffer callbacks, then the clock (before
  // any kind is enabled, as CUPTI asks). Returns "" or why CUPTI cannot be used.
  static const std::string& process_setup(bool& steady_timestamps) {
    static bool steady = false;
    static const std::string failure = [] {
      const CUptiResult result =
          cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed);
      if (result != CUPTI_SUCCESS) return failure_text(result, "cuptiActivityRegisterCallbacks");
      // When CUPTI refuses the clock, take_events() converts with a measured offset instead.
      steady = cuptiActivityRegisterTimestampCallback(&steady_clock_timestamp) == CUPTI_SUCCESS;
      return std::string();
    }();
    steady_timestamps = steady;
    return failure;
  }
};

CuptiTracer::~CuptiTracer() { stop(); }

std::string CuptiTracer::start() {
  if (active_) return "";
  {
    const std::lock_guard<std::mutex> lock(g_active_mutex);
    if (g_active_tracer != nullptr) return "another CuptiTracer is already active in this process";
    g_active_tracer = this;
  }
  bool steady_timestamps = false;
  std::string failure = CuptiCallbacks::process_setup(steady_timestamps);
  steady_timestamps_ = steady_timestamps;
  if (failure.empty()) failure = enable_kinds();
  if (!failure.empty()) {
    const std::lock_guard<std::mutex> lock(g_active_mutex);
    g_active_tracer = nullptr;
    return failure;
  }
  active_ = true;
  return "";
}

std::string CuptiTracer::enable_kinds() {
  for (const CUpti_ActivityKind kind : kTracedKinds) {
    const CUptiResult result = cuptiActivityEnable(kind);
    if (result != CUPTI_SUCCESS) {
      disable_enabled_kinds();
      return failure_text(result, "cuptiActivityEnable");
    }
    enabled_kinds_.push_back(static_cast<int>(kind));
  }
  measure_clock_offset();
  return "";
}

void CuptiTracer::disable_enabled_kinds() {
  for (const int kind : enabled_kinds_) {
    warn_on_failure(cuptiActivityDisable(static_cast<CUpti_ActivityKind>(kind)),
                    "cuptiActivityDisable");
  }
  enabled_kinds_.clear();
}

void CuptiTracer::measure_clock_offset() {
  if (steady_timestamps_) {
    clock_offset_ns_ = 0;
    return;
  }
  std::uint64_t cupti_now = 0;
  if (!warn_on_failure(cuptiGetTimestamp(&cupti_now), "cuptiGetTimestamp")) return;
  clock_offset_ns_ = static_cast<std::int64_t>(cupti_now) - steady_now_ns();
}

void CuptiTracer::pause() {
  if (active_) disable_enabled_kinds();
}

std::string CuptiTracer::resume() {
  if (!active_) return "CUPTI is not started";
  if (!enabled_kinds_.empty()) return "";
  return enable_kinds();
}

std::vector<DeviceEvent> CuptiTracer::take_events() {
  if (!active_) return {};
  // Forced: completes every buffer, even partly filled ones, before returning.
  warn_on_failure(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  std::size_t dropped_in_global_queue = 0;
  warn_on_failure(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped_in_global_queue),
                  "cuptiActivityGetNumDroppedRecords");

  std::vector<DeviceEvent> taken;
  std::unordered_map<std::uint32_t, std::uint64_t> external_ids;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    dropped_records_ += dropped_in_global_queue;
    taken.swap(events_);
    external_ids.swap(external_id_of_correlation_);
  }
  std::unordered_set<std::uint32_t> launched_work;
  for (const DeviceEvent& event : taken) {
    if (event.is_work()) launched_work.insert(event.correlation_id);
  }
  for (DeviceEvent& event : taken) {
    const auto found = external_ids.find(event.correlation_id);
    if (found != external_ids.end()) event.external_id = found->second;
    event.start_ns -= clock_offset_ns_;
    event.end_ns -= clock_offset_ns_;
  }
  // Before the driver calls that launched nothing are dropped: a graph's captured launches are
  // among them, and they name the scope of each replayed kernel.
  const GraphReplays replays = attribute_graph_replays(taken);
  graph_replays_.launches += replays.launches;
  graph_replays_.attributed += replays.attributed;
  graph_replays_.unattributed += replays.unattributed;
  std::erase_if(taken, [&](const DeviceEvent& event) {
    return event.kind == DeviceEventKind::DriverApi &&
           !launched_work.contains(event.correlation_id);
  });
  std::stable_sort(taken.begin(), taken.end(), [](const DeviceEvent& a, const DeviceEvent& b) {
    return a.start_ns < b.start_ns;
  });
  return taken;
}

void CuptiTracer::stop() {
  if (!active_) return;
  disable_enabled_kinds();
  warn_on_failure(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  const std::lock_guard<std::mutex> lock(g_active_mutex);
  g_active_tracer = nullptr;
  active_ = false;
}

void CuptiTracer::push_scope(std::uint64_t scope_id) {
  if (!active_) return;
  warn_on_failure(
      cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, scope_id),
      "cuptiActivityPushExternalCorrelationId");
}

void CuptiTracer::pop_scope() {
  if (!active_) return;
  std::uint64_t popped_id = 0;
  warn_on_failure(
      cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &popped_id),
      "cuptiActivityPopExternalCorrelationId");
}

std::size_t CuptiTracer::dropped_records() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return dropped_records_;
}

std::size_t CuptiTracer::unparsed_records() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return unparsed_records_;
}

void CuptiTracer::on_buffer_completed(std::uint8_t* buffer, std::size_t valid_bytes,
                                      std::size_t dropped_in_stream) {
  const std::lock_guard<std::mutex> lock(mutex_);
  dropped_records_ += dropped_in_stream;
  if (valid_bytes == 0) return;
  CUpti_Activity* record = nullptr;
  for (;;) {
    const CUptiResult result = cuptiActivityGetNextRecord(buffer, valid_bytes, &record);
    if (result == CUPTI_ERROR_MAX_LIMIT_REACHED) break;  // end of the buffer
    if (!warn_on_failure(result, "cuptiActivityGetNextRecord")) {
      ++unparsed_records_;
      break;
    }
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        events_.push_back(from_kernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(record)));
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        events_.push_back(from_memcpy(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(record)));
        break;
      case CUPTI_ACTIVITY_KIND_MEMSET:
        events_.push_back(from_memset(*reinterpret_cast<const CUpti_ActivityMemset4*>(record)));
        break;
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        events_.push_back(
            from_synchronization(*reinterpret_cast<const CUpti_ActivitySynchronization2*>(record)));
        break;
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER:
        events_.push_back(from_api_call(*reinterpret_cast<const CUpti_ActivityAPI*>(record)));
        break;
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const auto& correlation =
            *reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
        if (correlation.externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) {
          external_id_of_correlation_[correlation.correlationId] = correlation.externalId;
        }
        break;
      }
      default:
        ++unparsed_records_;
        break;
    }
  }
}

}  // namespace attnscope::profiler
