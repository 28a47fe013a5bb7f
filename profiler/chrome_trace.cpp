#include "profiler/chrome_trace.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

namespace attnscope::profiler {

namespace {

double microseconds(std::int64_t ns) { return static_cast<double>(ns) / 1000.0; }

}  // namespace

void write_chrome_trace(const Trace& trace, const std::string& process_name, std::ostream& out) {
  constexpr int kProcess = 1;
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"},
                    {"name", "process_name"},
                    {"pid", kProcess},
                    {"args", {{"name", process_name}}}});
  std::set<int> threads;
  for (const Event& e : trace.events) threads.insert(e.thread);
  for (int thread : threads) {
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", kProcess},
                      {"tid", thread},
                      {"args", {{"name", "host thread " + std::to_string(thread)}}}});
  }

  std::vector<const Event*> by_start;
  for (const Event& e : trace.events) by_start.push_back(&e);
  std::stable_sort(by_start.begin(), by_start.end(), [](const Event* a, const Event* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->depth < b->depth;
  });
  for (const Event* e : by_start) {
    nlohmann::json args = {{"depth", e->depth}};
    if (e->flops) args["flops"] = e->flops;
    if (e->bytes) args["bytes"] = e->bytes;
    if (e->peak_bytes) args["peak_bytes"] = e->peak_bytes;
    events.push_back({{"ph", "X"},
                      {"name", e->name},
                      {"cat", e->category},
                      {"pid", kProcess},
                      {"tid", e->thread},
                      {"ts", microseconds(e->start_ns)},
                      {"dur", microseconds(e->duration_ns())},
                      {"args", args}});
  }
  for (const MemorySample& sample : trace.memory) {
    events.push_back(
        {{"ph", "C"},
         {"name", "memory"},
         {"pid", kProcess},
         {"ts", microseconds(sample.time_ns)},
         {"args", {{std::string(device_name(sample.device)) + "_bytes", sample.current_bytes}}}});
  }
  out << nlohmann::json{{"displayTimeUnit", "ms"}, {"traceEvents", events}}.dump() << "\n";
}

}  // namespace attnscope::profiler
