// GpuRecorder: the DeviceRecorder of a CUDA context (device_recorder.h), built from the CUPTI
// tracer (cupti_tracer.h) and a pool of CUDA events on the context's stream.
//
// Event timing: every scope gets a (start, end) pair of events, recorded on the stream at its
// edges; cudaEventElapsedTime reads the time between them once the stream has passed both
// (resolution about 0.5 us). Events come from a pool, so cudaEventCreate runs only while the
// pool grows. Kernel records get their theoretical occupancy (occupancy.h) from the device's
// properties. Built only in CUDA builds; without CUPTI in the toolkit (no ATTNSCOPE_WITH_CUPTI)
// it always times with CUDA events. The context must outlive the recorder.
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#ifdef ATTNSCOPE_WITH_CUPTI
#include "profiler/cupti_tracer.h"
#endif
#include "profiler/device_recorder.h"
#include "profiler/device_time.h"
#include "profiler/graph_replay.h"
#include "profiler/occupancy.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/error.h"

namespace attnscope::profiler {

namespace {

#ifndef ATTNSCOPE_WITH_CUPTI
// This build has no CUPTI: CMake found no CUDA::cupti in the toolkit (profiler/CMakeLists.txt).
// A stand-in with the tracer's interface that never starts, so GpuRecorder takes its usual
// fallback, CUDA events, and its warning says why.
class CuptiTracer {
 public:
  std::string start() {
    return "this attnscope was built without CUPTI (CMake found no CUDA::cupti; reconfigure "
           "with a CUDA toolkit that has CUPTI, extras/CUPTI)";
  }
  void pause() {}
  std::string resume() { return start(); }
  std::vector<DeviceEvent> take_events() { return {}; }
  void stop() {}
  void push_scope(std::uint64_t) {}
  void pop_scope() {}
  std::size_t dropped_records() const { return 0; }
  GraphReplays graph_replays() const { return {}; }
};
#endif

void warn_cuda(cudaError_t status, const char* call) {
  std::fprintf(stderr, "attnscope: warning: %s: %s (%s)\n", call, cudaGetErrorName(status),
               cudaGetErrorString(status));
  cudaGetLastError();  // warned about: not the error of the next kernel launch (check_launch)
}

// Times scopes with pairs of CUDA events on one stream. Not thread-safe: the CpuTracer calls it
// under its lock.
class EventTimers {
 public:
  explicit EventTimers(cudaStream_t stream) : stream_(stream) {}
  ~EventTimers() {
    for (auto& [id, pair] : open_) give_back(pair);
    for (auto& [id, pair] : closed_) give_back(pair);
    for (cudaEvent_t event : pool_) cudaEventDestroy(event);  // errors: the device is gone
  }
  EventTimers(const EventTimers&) = delete;
  EventTimers& operator=(const EventTimers&) = delete;

  // Throws Error when an event cannot be made or recorded.
  void opened(std::int64_t id) {
    while (pool_.size() < 2) {  // grow the pool first, so that a failure leaks nothing
      cudaEvent_t event = nullptr;
      gpu::check_cuda(cudaEventCreate(&event), "cudaEventCreate (profiler scope)");
      pool_.push_back(event);
    }
    const Pair pair{take_event(), take_event()};
    const cudaError_t status = cudaEventRecord(pair.start, stream_);
    if (status != cudaSuccess) {
      give_back(pair);
      gpu::check_cuda(status, "cudaEventRecord (profiler scope)");
    }
    open_[id] = pair;
  }

  void closed(std::int64_t id) noexcept {
    const auto found = open_.find(id);
    if (found == open_.end()) return;
    const Pair pair = found->second;
    open_.erase(found);
    const cudaError_t status = cudaEventRecord(pair.end, stream_);
    if (status != cudaSuccess) {
      warn_cuda(status, "cudaEventRecord (profiler scope)");
      give_back(pair);
      return;
    }
    closed_.emplace_back(id, pair);
  }

  // (scope id, ns between its events) for every closed scope; the stream must have finished.
  std::vector<std::pair<std::int64_t, std::int64_t>> take_elapsed() {
    std::vector<std::pair<std::int64_t, std::int64_t>> elapsed;
    for (auto& [id, pair] : closed_) {
      float ms = 0;
      const cudaError_t status = cudaEventElapsedTime(&ms, pair.start, pair.end);
      if (status == cudaSuccess) {
        elapsed.emplace_back(id, static_cast<std::int64_t>(std::llround(double{ms} * 1e6)));
      } else {
        warn_cuda(status, "cudaEventElapsedTime (profiler scope)");
      }
      give_back(pair);
    }
    closed_.clear();
    return elapsed;
  }

 private:
  struct Pair {
    cudaEvent_t start = nullptr;
    cudaEvent_t end = nullptr;
  };

  cudaEvent_t take_event() {
    cudaEvent_t event = pool_.back();
    pool_.pop_back();
    return event;
  }
  void give_back(const Pair& pair) {
    for (cudaEvent_t event : {pair.start, pair.end}) {
      if (event != nullptr) pool_.push_back(event);
    }
  }

  cudaStream_t stream_;
  std::vector<cudaEvent_t> pool_;
  std::unordered_map<std::int64_t, Pair> open_;
  std::vector<std::pair<std::int64_t, Pair>> closed_;
};

class GpuRecorder final : public DeviceRecorder {
 public:
  GpuRecorder(Context& ctx, GpuTiming timing)
      : state_(gpu::device_state(ctx)),
        limits_(sm_limits_of(state_.properties)),
        timers_(state_.stream),
        use_cupti_(timing != GpuTiming::CudaEvents),
        use_events_(timing != GpuTiming::Cupti) {
    if (!use_cupti_) return;
    const std::string why = cupti_.start();
    if (why.empty()) {
      cupti_.pause();  // on only while a Profiling is
    } else {
      fall_back_to_events(why);
    }
  }

  void scope_opened(std::int64_t id) override {
    if (use_events_) timers_.opened(id);
    if (use_cupti_) cupti_.push_scope(static_cast<std::uint64_t>(id));
  }

  void scope_closed(std::int64_t id) noexcept override {
    if (use_cupti_) cupti_.pop_scope();
    if (use_events_) timers_.closed(id);
  }

  void resume() override {
    if (!use_cupti_) return;
    const std::string why = cupti_.resume();
    if (!why.empty()) fall_back_to_events(why);
  }

  void pause() noexcept override {
    // Kernel records are made when kernels finish: let them finish while the kinds are enabled.
    const cudaError_t status = cudaStreamSynchronize(state_.stream);
    if (status != cudaSuccess) warn_cuda(status, "cudaStreamSynchronize (profiler pause)");
    if (use_cupti_) cupti_.pause();
  }

  bool uses_event_timers() const override { return use_events_; }

  void collect(Trace& trace) override {
    gpu::synchronize(state_);
    const std::size_t first_device = trace.device.size();
    if (use_cupti_) {
      for (DeviceEvent& event : cupti_.take_events()) {
        event.start_ns -= trace.clock_origin_ns;
        event.end_ns -= trace.clock_origin_ns;
        if (event.kind == DeviceEventKind::Kernel) add_occupancy(event);
        trace.device.push_back(std::move(event));
      }
      trace.dropped_records = cupti_.dropped_records();
      trace.graph_work_attributed = cupti_.graph_replays().attributed;
      trace.graph_work_unattributed = cupti_.graph_replays().unattributed;
    }
    if (use_events_) {
      std::unordered_map<std::int64_t, std::size_t> index_of_id;
      for (std::size_t i = first_event_; i < trace.events.size(); ++i) {
        index_of_id[trace.events[i].id] = i;
      }
      for (const auto& [id, ns] : timers_.take_elapsed()) {
        if (const auto found = index_of_id.find(id); found != index_of_id.end()) {
          trace.events[found->second].event_timer_ns = ns;
        }
      }
    }
    attribute_device_time(trace, first_event_, first_device,
                          use_cupti_ ? DeviceTimeSource::Activity : DeviceTimeSource::EventTimers);
    first_event_ = trace.events.size();
    trace.device_timing =
        use_cupti_ ? (use_events_ ? "cupti + cuda events" : "cupti") : "cuda events";
    trace.device_name =
        "GPU " + std::to_string(state_.index) + ": " + std::string(state_.properties.name);
  }

 private:
  void fall_back_to_events(const std::string& why) {
    std::fprintf(stderr,
                 "attnscope: warning: CUPTI cannot trace the GPU: %s; timing each profiler scope "
                 "with CUDA events instead (device time per scope, no kernel records)\n",
                 why.c_str());
    cupti_.stop();
    use_cupti_ = false;
    use_events_ = true;
  }

  void add_occupancy(DeviceEvent& kernel) const {
    LaunchShape launch;
    launch.threads_per_block = kernel.block_x * kernel.block_y * kernel.block_z;
    launch.registers_per_thread = kernel.registers_per_thread;
    launch.shared_bytes_per_block = static_cast<std::size_t>(kernel.static_shared_bytes) +
                                    static_cast<std::size_t>(kernel.dynamic_shared_bytes);
    const Occupancy occupancy = estimate_occupancy(limits_, launch);
    kernel.occupancy = occupancy.fraction;
    kernel.occupancy_limit = occupancy.limit;
  }

  gpu::DeviceState& state_;
  SmLimits limits_;
  CuptiTracer cupti_;
  EventTimers timers_;
  bool use_cupti_;
  bool use_events_;
  std::size_t first_event_ = 0;  // events before this one have their device times
};

}  // namespace

std::unique_ptr<DeviceRecorder> make_gpu_recorder(Context& ctx, GpuTiming timing) {
  return std::make_unique<GpuRecorder>(ctx, timing);
}

}  // namespace attnscope::profiler
