#include "profiler/chrome_trace.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

namespace attnscope::profiler {

namespace {

using nlohmann::json;

constexpr int kHostProcess = 1;
constexpr int kGpuProcess = 2;
constexpr int kSpanProcess = 3;                // one track per span track (the engine's requests)
constexpr int kFirstApiTrack = 1000;           // host-process tids of the CUDA API tracks
constexpr int kSynchronizationTrack = 999999;  // GPU-process tid of the synchronizations

double microseconds(std::int64_t ns) { return static_cast<double>(ns) / 1000.0; }

json metadata(const char* what, int pid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", {{"name", name}}}};
}

json thread_metadata(int pid, int tid, const std::string& name) {
  json event = metadata("thread_name", pid, name);
  event["tid"] = tid;
  return event;
}

void add_host_scopes(const Trace& trace, json& events) {
  std::set<int> threads;
  for (const Event& e : trace.events) threads.insert(e.thread);
  for (int thread : threads) {
    events.push_back(
        thread_metadata(kHostProcess, thread, "host thread " + std::to_string(thread)));
  }
  std::vector<const Event*> by_start;
  for (const Event& e : trace.events) by_start.push_back(&e);
  std::stable_sort(by_start.begin(), by_start.end(), [](const Event* a, const Event* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->depth < b->depth;
  });
  std::unordered_map<std::int64_t, const Event*> by_id;
  for (const Event& e : trace.events) by_id[e.id] = &e;
  for (const Event* e : by_start) {
    json args = {{"depth", e->depth}};
    // The indices of the scope and of its enclosing ones: every op inside layer 3 says so.
    for (const Event* scope = e; scope != nullptr;) {
      if (scope->index >= 0) args[scope->name] = scope->index;
      const auto parent = by_id.find(scope->parent);
      scope = parent == by_id.end() ? nullptr : parent->second;
    }
    if (e->flops) args["flops"] = e->flops;
    if (e->bytes) args["bytes"] = e->bytes;
    if (e->peak_bytes) args["peak_bytes"] = e->peak_bytes;
    if (e->device_ns >= 0) {
      args["device_us"] = microseconds(e->device_ns);
      args["device_self_us"] = microseconds(e->device_self_ns);
    }
    if (e->event_timer_ns >= 0) args["event_timer_us"] = microseconds(e->event_timer_ns);
    if (e->kernels) args["kernels"] = e->kernels;
    events.push_back({{"ph", "X"},
                      {"name", e->index >= 0 ? e->name + " " + std::to_string(e->index) : e->name},
                      {"cat", e->category},
                      {"pid", kHostProcess},
                      {"tid", e->thread},
                      {"ts", microseconds(e->start_ns)},
                      {"dur", microseconds(e->duration_ns())},
                      {"args", args}});
  }
}

// The engine's requests: a process of their own, one track per request, a slice per phase.
void add_spans(const Trace& trace, json& events) {
  events.push_back(metadata("process_name", kSpanProcess, "requests"));
  std::set<std::int64_t> tracks;
  for (const Span& span : trace.spans) tracks.insert(span.track);
  for (std::int64_t track : tracks) {
    events.push_back(
        thread_metadata(kSpanProcess, static_cast<int>(track), "request " + std::to_string(track)));
  }
  for (const Span& span : trace.spans) {
    events.push_back({{"ph", "X"},
                      {"name", span.name},
                      {"cat", "request"},
                      {"pid", kSpanProcess},
                      {"tid", span.track},
                      {"ts", microseconds(span.start_ns)},
                      {"dur", microseconds(span.end_ns - span.start_ns)}});
  }
}

void add_memory_counters(const Trace& trace, json& events) {
  for (const MemorySample& sample : trace.memory) {
    events.push_back(
        {{"ph", "C"},
         {"name", "memory"},
         {"pid", sample.device == Device::CPU ? kHostProcess : kGpuProcess},
         {"ts", microseconds(sample.time_ns)},
         {"args", {{std::string(device_name(sample.device)) + "_bytes", sample.current_bytes}}}});
  }
}

json work_args(const DeviceEvent& work,
               const std::unordered_map<std::int64_t, const Event*>& scopes) {
  json args = {{"correlation_id", work.correlation_id}};
  if (const auto found = scopes.find(static_cast<std::int64_t>(work.external_id));
      work.external_id != 0 && found != scopes.end()) {
    args["scope"] = found->second->name;
    args["scope_id"] = work.external_id;
  }
  if (work.kind == DeviceEventKind::Kernel) {
    args["grid"] = {work.grid_x, work.grid_y, work.grid_z};
    args["block"] = {work.block_x, work.block_y, work.block_z};
    args["registers_per_thread"] = work.registers_per_thread;
    args["static_shared_bytes"] = work.static_shared_bytes;
    args["dynamic_shared_bytes"] = work.dynamic_shared_bytes;
    if (work.occupancy >= 0) {
      args["occupancy"] = work.occupancy;
      args["occupancy_limit"] = work.occupancy_limit;
    }
  } else {
    args["bytes"] = work.bytes;
  }
  return args;
}

// The GPU process, the CUDA API tracks and the flow arrows between them.
void add_device_activity(const Trace& trace, json& events) {
  std::unordered_map<std::int64_t, const Event*> scopes;
  for (const Event& e : trace.events) scopes[e.id] = &e;
  std::map<std::uint32_t, int> api_track_of_thread;  // CUPTI thread id -> tid
  std::set<int> streams;
  bool synchronizations = false;
  std::set<std::uint32_t> launched;  // correlation ids of work
  for (const DeviceEvent& d : trace.device) {
    if (d.is_api_call()) api_track_of_thread.emplace(d.thread, 0);
    if (d.is_work()) {
      streams.insert(d.stream);
      launched.insert(d.correlation_id);
    }
    synchronizations = synchronizations || d.kind == DeviceEventKind::Synchronization;
  }

  for (int stream : streams) {
    events.push_back(thread_metadata(kGpuProcess, stream, "stream " + std::to_string(stream)));
  }
  if (synchronizations) {
    events.push_back(thread_metadata(kGpuProcess, kSynchronizationTrack, "synchronization"));
  }
  int next_track = kFirstApiTrack;
  for (auto& [thread, tid] : api_track_of_thread) {
    tid = next_track++;
    events.push_back(thread_metadata(
        kHostProcess, tid, "CUDA API (thread " + std::to_string(tid - kFirstApiTrack + 1) + ")"));
  }

  for (const DeviceEvent& d : trace.device) {
    json event = {{"ph", "X"},
                  {"name", d.name},
                  {"cat", device_event_kind_name(d.kind)},
                  {"ts", microseconds(d.start_ns)},
                  {"dur", microseconds(d.duration_ns())}};
    if (d.is_work()) {
      event["pid"] = kGpuProcess;
      event["tid"] = d.stream;
      event["args"] = work_args(d, scopes);
    } else if (d.is_api_call()) {
      event["pid"] = kHostProcess;
      event["tid"] = api_track_of_thread.at(d.thread);
      event["args"] = {{"correlation_id", d.correlation_id}};
      if (d.external_id != 0) event["args"]["scope_id"] = d.external_id;
    } else {
      event["pid"] = kGpuProcess;
      event["tid"] = kSynchronizationTrack;
      event["args"] = {{"stream", d.stream}};
    }
    events.push_back(event);
  }

  // Flow arrows: "s" binds to the API call's slice, "f" (binding point "e": the enclosing
  // slice) to the kernel's.
  for (const DeviceEvent& d : trace.device) {
    if (d.is_api_call() && launched.contains(d.correlation_id)) {
      events.push_back({{"ph", "s"},
                        {"name", "launch"},
                        {"cat", "launch"},
                        {"id", d.correlation_id},
                        {"pid", kHostProcess},
                        {"tid", api_track_of_thread.at(d.thread)},
                        {"ts", microseconds(d.start_ns)}});
    }
  }
  std::set<std::uint32_t> called;
  for (const DeviceEvent& d : trace.device) {
    if (d.is_api_call()) called.insert(d.correlation_id);
  }
  for (const DeviceEvent& d : trace.device) {
    if (d.is_work() && called.contains(d.correlation_id)) {
      events.push_back({{"ph", "f"},
                        {"bp", "e"},
                        {"name", "launch"},
                        {"cat", "launch"},
                        {"id", d.correlation_id},
                        {"pid", kGpuProcess},
                        {"tid", d.stream},
                        {"ts", microseconds(d.start_ns)}});
    }
  }
}

}  // namespace

void write_chrome_trace(const Trace& trace, const std::string& process_name, std::ostream& out) {
  json events = json::array();
  events.push_back(metadata("process_name", kHostProcess, process_name));
  add_host_scopes(trace, events);
  if (!trace.spans.empty()) add_spans(trace, events);
  add_memory_counters(trace, events);
  const bool gpu_run =
      !trace.device_timing.empty() ||
      std::any_of(trace.memory.begin(), trace.memory.end(),
                  [](const MemorySample& sample) { return sample.device == Device::CUDA; });
  if (gpu_run) {
    const int gpu = trace.device.empty() ? 0 : std::max(trace.device.front().device, 0);
    events.push_back(metadata("process_name", kGpuProcess, "GPU " + std::to_string(gpu)));
  }
  if (!trace.device.empty()) add_device_activity(trace, events);
  json document = {{"displayTimeUnit", "ms"}, {"traceEvents", events}};
  if (gpu_run || !trace.notes.empty()) {
    document["otherData"] = {{"device", trace.device_name},
                             {"device_timing", trace.device_timing},
                             {"dropped_records", trace.dropped_records},
                             {"graph_work_attributed", trace.graph_work_attributed},
                             {"graph_work_unattributed", trace.graph_work_unattributed},
                             {"notes", trace.notes}};
  }
  out << document.dump() << "\n";
}

}  // namespace attnscope::profiler
