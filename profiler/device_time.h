// Device time per scope: what the GPU spent inside each profiler scope.
//
// With CUPTI, every kernel, copy and memset record carries the id of the innermost scope open
// on the host thread when it was launched (its external correlation id). A scope's device self
// time is the sum of the durations of the records that carry its id; its device time adds its
// children's:
//
//   device_self_ns(s) = sum of duration(r) over work records r with r.external_id == s.id
//   device_ns(s)      = device_self_ns(s) + sum of device_ns(c) over the direct children c of s
//
// so, like host time, the self times of all scopes add up to the device time of the top-level
// scopes. It counts only the time work ran: gaps while the GPU waits for the host's next launch
// are in no scope's device time.
//
// With the CUDA-event fallback, a scope's device time is the time between the events recorded
// on the stream at its edges (Event::event_timer_ns), gaps included, and its self time is that
// minus its children's (clamped at 0: the events' resolution is about half a microsecond).
//
// Events are processed in closing order (children close before their parents), so one pass
// over the events fills both fields. Cost: O(events + device records).
//
// Where a stretch of GPU work spent its time (work_span): of the span from the first record's
// start to the last one's end, the GPU was busy while at least one kernel, copy or memset ran
// (the union of their intervals) and idle otherwise:
//
//   span_ns = max(end) - min(start),   busy_ns = |union of [start, end)|,   idle = span - busy
//
// When some of the records were run by a CUDA graph (graph_id != 0), only those count: a step
// launched as a graph is measured from its graph's first node to its last, without the copies
// around the launch or the host's capture before it, which would otherwise sit in the first gap.
// A batch-1 decode step of a small model is ~100 short kernels in a row on one stream, so its
// idle time is the gaps between them: launch latency, and the ramp of each kernel's first and
// last CTAs (docs/GPU.md, "Decode's budget"). Cost: O(n log n) for the n records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "profiler/event.h"

namespace attnscope::profiler {

enum class DeviceTimeSource { Activity, EventTimers };

// Fills device_ns, device_self_ns and kernels of trace.events[first_event, end) from the work
// records trace.device[first_device, end) (Activity) or from their event_timer_ns (EventTimers).
// Returns how many work records carry no id of those events (launched outside every scope).
std::size_t attribute_device_time(Trace& trace, std::size_t first_event, std::size_t first_device,
                                  DeviceTimeSource source);

struct WorkSpan {
  int records = 0;  // kernels, copies and memsets
  std::int64_t busy_ns = 0;
  std::int64_t span_ns = 0;
  std::int64_t idle_ns() const { return span_ns - busy_ns; }
};

// The work records among device[first, end), only the graph-run ones when there are any (API
// calls and synchronisations are skipped).
WorkSpan work_span(const std::vector<DeviceEvent>& device, std::size_t first, std::size_t end);

// The device time the top-level scopes cover: the sum of device_ns of the depth-0 events that
// have one; -1 when none does (a CPU run).
std::int64_t device_wall_ns(const std::vector<Event>& events);

}  // namespace attnscope::profiler
