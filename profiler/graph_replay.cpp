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

// An API call's name without the leading underscores of CUDA 13's internal entry points: nvcc 13
// compiles `<<<...>>>` into __cudaLaunchKernel, which CUPTI names "__cudaLaunchKernel_v13000".
std::string_view api_base(std::string_view name) {
  while (!name.empty() && name.front() == '_') name.remove_prefix(1);
  return name;
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

// An API call that queues work on a stream: a kernel launch (plain or cooperative, through the
// runtime, nvcc 13's __cudaLaunchKernel or the driver), an async copy or memset.
bool launches_work(const DeviceEvent& e) {
  if (!e.is_api_call()) return false;
  const std::string_view name = api_base(e.name);
  const bool copy_or_set = (starts_with(name, "cudaMemcpy") || starts_with(name, "cudaMemset") ||
                            starts_with(name, "cuMemcpy") || starts_with(name, "cuMemset")) &&
                           name.find("Async") != std::string_view::npos;
  return starts_with(name, "cudaLaunchKernel") || starts_with(name, "cuLaunchKernel") ||
         starts_with(name, "cudaLaunchCooperativeKernel") ||
         starts_with(name, "cuLaunchCooperativeKernel") || copy_or_set;
}

bool by_start(const DeviceEvent* a, const DeviceEvent* b) { return a->start_ns < b->start_ns; }

}  // namespace

GraphReplays attribute_graph_replays(std::vector<DeviceEvent>& events) {
  std::unordered_set<std::uint32_t> launched;  // correlation ids that launched work at once
  std::vector<DeviceEvent*> api;
  std::size_t graph_work = 0;  // work records that say a graph ran them
  for (DeviceEvent& e : events) {
    if (e.is_work()) launched.insert(e.correlation_id);
    if (e.is_api_call()) api.push_back(&e);
    if (e.is_work() && e.graph_id != 0) ++graph_work;
  }
  std::sort(api.begin(), api.end(), by_start);

  GraphReplays result;
  std::size_t claimed_graph_work = 0;  // of those, the ones a graph launch's correlation id found
  for (std::size_t g = 0; g < api.size(); ++g) {
    const DeviceEvent& launch = *api[g];
    if (!is_graph_launch(launch)) continue;
    std::vector<DeviceEvent*> replayed;
    for (DeviceEvent& e : events) {
      if (e.is_work() && e.correlation_id == launch.correlation_id) replayed.push_back(&e);
    }
    if (replayed.empty()) continue;
    ++result.launches;
    for (const DeviceEvent* e : replayed) claimed_graph_work += e->graph_id != 0 ? 1 : 0;
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
    const DeviceEvent* last = nullptr;  // the latest launch taken: a call inside it is the same
    for (std::size_t i = begin; i < g; ++i) {
      const DeviceEvent& call = *api[i];
      if (call.thread != launch.thread || !launches_work(call) ||
          launched.contains(call.correlation_id)) {
        continue;
      }
      if (last != nullptr && call.start_ns >= last->start_ns && call.end_ns <= last->end_ns) {
        continue;
      }
      last = &call;
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
  // Graph work that no launch's correlation id found (CUPTI 13.0 is known to give graph launches
  // wrong correlation ids in a profiling session after the first: fixed in 13.1 Update 1) stays
  // where its wrong id puts it; counted, so that a report says so instead of showing nothing.
  result.unattributed += graph_work - claimed_graph_work;
  return result;
}

}  // namespace attnscope::profiler
