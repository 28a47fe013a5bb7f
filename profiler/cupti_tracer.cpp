// CuptiTracer: the Activity API flow of cupti_tracer.h. CUPTI calls plain C callbacks, so the
// active tracer is reached through one process-wide pointer.
#include "profiler/cupti_tracer.h"

#include <cupti.h>
#include <cxxabi.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "runtime/error.h"

namespace attnscope::profiler {

namespace {

std::atomic<CuptiTracer*> g_active_tracer{nullptr};

constexpr CUpti_ActivityKind kTracedKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
};

std::string cupti_result_text(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) {
    return "CUPTI error " + std::to_string(static_cast<int>(result));
  }
  return text;
}

// Throws Error("cupti: <call>", "<CUPTI's message>") when `result` is not success.
void throw_on_failure(CUptiResult result, const char* call) {
  if (result == CUPTI_SUCCESS) return;
  std::string what = cupti_result_text(result);
  if (result == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) {
    what +=
        " (profiling is restricted to administrators: load the nvidia driver with "
        "NVreg_RestrictProfilingToAdminUsers=0, or run as root; in a container add "
        "--cap-add SYS_ADMIN)";
  }
  throw Error(std::string("cupti: ") + call, what);
}

// Prints one warning line and returns false when `result` is not success.
bool warn_on_failure(CUptiResult result, const char* call) {
  if (result == CUPTI_SUCCESS) return true;
  std::fprintf(stderr, "attnscope: warning: cupti: %s: %s\n", call,
               cupti_result_text(result).c_str());
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

std::string runtime_api_name(CUpti_CallbackId callback_id) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, callback_id, &name) != CUPTI_SUCCESS ||
      name == nullptr) {
    return "runtime call " + std::to_string(callback_id);
  }
  return name;
}

DeviceEvent from_kernel(const CUpti_ActivityKernel10& record) {
  DeviceEvent event;
  event.kind = DeviceEventKind::Kernel;
  event.name = demangled(record.name);
  event.device = static_cast<int>(record.deviceId);
  event.stream = static_cast<int>(record.streamId);
  event.start_ns = static_cast<std::int64_t>(record.start);
  event.end_ns = static_cast<std::int64_t>(record.end);
  event.correlation_id = record.correlationId;
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
  DeviceEvent event;
  event.kind = DeviceEventKind::Memcpy;
  event.name = memcpy_direction(record.copyKind);
  event.device = static_cast<int>(record.deviceId);
  event.stream = static_cast<int>(record.streamId);
  event.start_ns = static_cast<std::int64_t>(record.start);
  event.end_ns = static_cast<std::int64_t>(record.end);
  event.correlation_id = record.correlationId;
  event.bytes = record.bytes;
  return event;
}

DeviceEvent from_memset(const CUpti_ActivityMemset4& record) {
  DeviceEvent event;
  event.kind = DeviceEventKind::Memset;
  event.name = "Memset";
  event.device = static_cast<int>(record.deviceId);
  event.stream = static_cast<int>(record.streamId);
  event.start_ns = static_cast<std::int64_t>(record.start);
  event.end_ns = static_cast<std::int64_t>(record.end);
  event.correlation_id = record.correlationId;
  event.bytes = record.bytes;
  return event;
}

DeviceEvent from_synchronization(const CUpti_ActivitySynchronization2& record) {
  DeviceEvent event;
  event.kind = DeviceEventKind::Synchronization;
  event.name = synchronization_name(record.type);
  event.stream = static_cast<int>(record.streamId);
  event.start_ns = static_cast<std::int64_t>(record.start);
  event.end_ns = static_cast<std::int64_t>(record.end);
  event.correlation_id = record.correlationId;
  return event;
}

DeviceEvent from_runtime_api(const CUpti_ActivityAPI& record) {
  DeviceEvent event;
  event.kind = DeviceEventKind::RuntimeApi;
  event.name = runtime_api_name(record.cbid);
  event.start_ns = static_cast<std::int64_t>(record.start);
  event.end_ns = static_cast<std::int64_t>(record.end);
  event.correlation_id = record.correlationId;
  return event;
}

}  // namespace

// The two C callbacks CUPTI calls; a struct so they can reach the tracer's private parts.
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
    if (CuptiTracer* tracer = g_active_tracer.load()) {
      tracer->on_buffer_completed(buffer, valid_bytes, dropped);
    }
    ::operator delete (buffer, std::align_val_t{CuptiTracer::kBufferAlignment});
  }
};

const char* device_event_kind_name(DeviceEventKind kind) {
  switch (kind) {
    case DeviceEventKind::Kernel:
      return "kernel";
    case DeviceEventKind::Memcpy:
      return "memcpy";
    case DeviceEventKind::Memset:
      return "memset";
    case DeviceEventKind::Synchronization:
      return "sync";
    case DeviceEventKind::RuntimeApi:
      return "runtime";
  }
  return "unknown";
}

CuptiTracer::~CuptiTracer() { stop(); }

bool CuptiTracer::start() {
  if (active_) return true;
  CuptiTracer* expected = nullptr;
  if (!g_active_tracer.compare_exchange_strong(expected, this)) {
    std::fprintf(stderr,
                 "attnscope: warning: cupti: another CuptiTracer is already active; GPU "
                 "activity is not traced\n");
    return false;
  }
  try {
    throw_on_failure(cuptiActivityRegisterCallbacks(&CuptiCallbacks::buffer_requested,
                                                    &CuptiCallbacks::buffer_completed),
                     "cuptiActivityRegisterCallbacks");
    for (const CUpti_ActivityKind kind : kTracedKinds) {
      throw_on_failure(cuptiActivityEnable(kind), "cuptiActivityEnable");
      enabled_kinds_.push_back(static_cast<int>(kind));
    }
    std::uint64_t now = 0;
    throw_on_failure(cuptiGetTimestamp(&now), "cuptiGetTimestamp");
    start_timestamp_ns_ = static_cast<std::int64_t>(now);
  } catch (const Error& error) {
    std::fprintf(stderr, "attnscope: warning: %s; GPU activity is not traced\n", error.what());
    disable_enabled_kinds();
    g_active_tracer.store(nullptr);
    return false;
  }
  active_ = true;
  return true;
}

void CuptiTracer::disable_enabled_kinds() {
  for (const int kind : enabled_kinds_) {
    warn_on_failure(cuptiActivityDisable(static_cast<CUpti_ActivityKind>(kind)),
                    "cuptiActivityDisable");
  }
  enabled_kinds_.clear();
}

void CuptiTracer::stop() {
  if (!active_) return;
  // Forced: completes every buffer, even partly filled ones, before returning.
  warn_on_failure(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  disable_enabled_kinds();
  std::size_t dropped_in_global_queue = 0;
  warn_on_failure(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped_in_global_queue),
                  "cuptiActivityGetNumDroppedRecords");
  g_active_tracer.store(nullptr);
  active_ = false;

  const std::lock_guard<std::mutex> lock(mutex_);
  dropped_records_ += dropped_in_global_queue;
  for (DeviceEvent& event : events_) {
    const auto found = external_id_of_correlation_.find(event.correlation_id);
    if (found != external_id_of_correlation_.end()) event.external_id = found->second;
  }
  if (dropped_records_ != 0) {
    std::fprintf(stderr,
                 "attnscope: warning: cupti dropped %zu activity records; the GPU trace is "
                 "incomplete\n",
                 dropped_records_);
  }
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
        events_.push_back(from_runtime_api(*reinterpret_cast<const CUpti_ActivityAPI*>(record)));
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
