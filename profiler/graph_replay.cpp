// Replayed graph work, given back to its capture-time scopes (profiler/graph_replay.h).
#include "profiler/graph_replay.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>

namespace attnscope::profiler {

namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool is_graph_launch(const DeviceEvent& e) {
  return e.is_api_call() &&
         (e.name == "cudaGraphLaunch" || starts_with(e.name, "cudaGraphLaunch_") ||
          e.name == "cuGraphLaunch" || starts_with(e.name, "cuGraphLaunch_"));
}

bool is_capture_begin(const DeviceEvent& e) {
  return e.is_api_call() && (starts_with(e.name, "cudaStreamBeginCapture") ||
                             starts_with(e.name, "cuStreamBeginCapture"));
}

// An API call that queues work on a stream: a kernel launch, an async copy or memset.
bool launches_work(const DeviceEvent& e) {
  if (!e.is_api_call()) return false;
  const std::string_view name = e.name;
  const bool copy_or_set = (starts_with(name, "cudaMemcpy") || starts_with(name, "cudaMemset") ||
                            starts_with(name, "cuMemcpy") || starts_with(name, "cuMemset")) &&
                           name.find("Async") != std::string_view::npos;
  return starts_with(name, "cudaLaunchKernel") || starts_with(name, "cuLaunchKernel") ||
         copy_or_set;
}

bool by_start(const DeviceEvent* a, const DeviceEvent* b) { return a->start_ns < b->start_ns; }

}  // namespace

GraphReplays attribute_graph_replays(std::vector<DeviceEvent>& events) {
  std::unordered_set<std::uint32_t> launched;  // correlation ids that launched work at once
  std::vector<DeviceEvent*> api;
  for (DeviceEvent& e : events) {
    if (e.is_work()) launched.insert(e.correlation_id);
    if (e.is_api_call()) api.push_back(&e);
  }
  std::sort(api.begin(), api.end(), by_start);

  GraphReplays result;
  for (std::size_t g = 0; g < api.size(); ++g) {
    const DeviceEvent& launch = *api[g];
    if (!is_graph_launch(launch)) continue;
    std::vector<DeviceEvent*> replayed;
    for (DeviceEvent& e : events) {
      if (e.is_work() && e.correlation_id == launch.correlation_id) replayed.push_back(&e);
    }
    if (replayed.empty()) continue;
    ++result.launches;
    std::sort(replayed.begin(), replayed.end(), by_start);
    // The capture: back from the launch to the last capture begin on the same thread (none
    // seen: the capture began before the records did, and the launch keeps its work).
    std::size_t begin = g;
    while (begin > 0 &&
           !(api[begin - 1]->thread == launch.thread && is_capture_begin(*api[begin - 1]))) {
      --begin;
    }
    if (begin == 0) {
      result.unattributed += replayed.size();
      continue;
    }
    std::vector<const DeviceEvent*> captured;
    const DeviceEvent* runtime_call = nullptr;  // the latest runtime launch: nests driver calls
    for (std::size_t i = begin; i < g; ++i) {
      const DeviceEvent& call = *api[i];
      if (call.thread != launch.thread || !launches_work(call) ||
          launched.contains(call.correlation_id)) {
        continue;
      }
      const bool nested = call.kind == DeviceEventKind::DriverApi && runtime_call != nullptr &&
                          call.start_ns >= runtime_call->start_ns &&
                          call.end_ns <= runtime_call->end_ns;
      if (nested) continue;
      if (call.kind == DeviceEventKind::RuntimeApi) runtime_call = &call;
      captured.push_back(&call);
    }
    if (captured.size() != replayed.size()) {
      result.unattributed += replayed.size();
      continue;
    }
    for (std::size_t i = 0; i < replayed.size(); ++i) {
      replayed[i]->external_id = captured[i]->external_id;
    }
    result.attributed += replayed.size();
  }
  return result;
}

}  // namespace attnscope::profiler
