#include "profiler/device_time.h"

#include <algorithm>
#include <unordered_map>

namespace attnscope::profiler {

std::size_t attribute_device_time(Trace& trace, std::size_t first_event, std::size_t first_device,
                                  DeviceTimeSource source) {
  std::unordered_map<std::int64_t, std::size_t> index_of_id;
  for (std::size_t i = first_event; i < trace.events.size(); ++i) {
    index_of_id[trace.events[i].id] = i;
  }

  std::vector<std::int64_t> self(trace.events.size() - first_event, 0);
  std::size_t outside_scopes = 0;
  if (source == DeviceTimeSource::Activity) {
    for (std::size_t r = first_device; r < trace.device.size(); ++r) {
      const DeviceEvent& record = trace.device[r];
      if (!record.is_work()) continue;
      const auto found = index_of_id.find(static_cast<std::int64_t>(record.external_id));
      if (record.external_id == 0 || found == index_of_id.end()) {
        ++outside_scopes;
        continue;
      }
      self[found->second - first_event] += record.duration_ns();
      trace.events[found->second].kernels += 1;
    }
  }

  std::unordered_map<std::int64_t, std::int64_t> children_device_ns;  // by parent id
  for (std::size_t i = first_event; i < trace.events.size(); ++i) {
    Event& e = trace.events[i];
    const std::int64_t children = children_device_ns[e.id];
    if (source == DeviceTimeSource::Activity) {
      e.device_self_ns = self[i - first_event];
      e.device_ns = e.device_self_ns + children;
    } else if (e.event_timer_ns >= 0) {
      e.device_ns = e.event_timer_ns;
      e.device_self_ns = std::max<std::int64_t>(0, e.device_ns - children);
    } else {
      continue;  // not timed: leaves its parent's self time larger
    }
    if (e.parent >= 0) children_device_ns[e.parent] += e.device_ns;
  }
  return outside_scopes;
}

WorkSpan work_span(const std::vector<DeviceEvent>& device, std::size_t first, std::size_t end) {
  std::vector<const DeviceEvent*> work;
  bool graph_run = false;
  for (std::size_t r = first; r < end; ++r) {
    if (!device[r].is_work()) continue;
    work.push_back(&device[r]);
    graph_run = graph_run || device[r].graph_id != 0;
  }
  if (graph_run) std::erase_if(work, [](const DeviceEvent* w) { return w->graph_id == 0; });
  WorkSpan span;
  if (work.empty()) return span;
  std::sort(work.begin(), work.end(),
            [](const DeviceEvent* a, const DeviceEvent* b) { return a->start_ns < b->start_ns; });
  span.records = static_cast<int>(work.size());
  std::int64_t covered_to = work.front()->start_ns;  // the union so far ends here
  for (const DeviceEvent* w : work) {
    const std::int64_t from = std::max(w->start_ns, covered_to);
    if (w->end_ns > from) span.busy_ns += w->end_ns - from;
    covered_to = std::max(covered_to, w->end_ns);
  }
  span.span_ns = covered_to - work.front()->start_ns;
  return span;
}

std::int64_t device_wall_ns(const std::vector<Event>& events) {
  std::int64_t wall = -1;
  for (const Event& e : events) {
    if (e.depth != 0 || e.device_ns < 0) continue;
    wall = std::max<std::int64_t>(wall, 0) + e.device_ns;
  }
  return wall;
}

}  // namespace attnscope::profiler
